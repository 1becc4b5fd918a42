// read_tensor_file / write_tensor_file: the extension picks .npy or safetensors.
#include <gtest/gtest.h>

#include <vector>

#include "io/io_test_util.h"
#include "moekit/safetensors.h"
#include "moekit/tensor_file.h"

namespace moekit {
namespace {

using testing::TempDir;

TEST(TensorFile, ReadsByNameAndWritesByExtension) {
  TempDir dir;
  Tensor h = testing::make_tensor(DType::kBF16, {3, 8});
  Tensor l = testing::make_tensor(DType::kF32, {3, 4});
  testing::fill_bytes(h, 5);
  testing::fill_bytes(l, 6);
  ASSERT_TRUE(write_safetensors(dir / "in.safetensors", std::vector<NamedTensor>{{"hidden", h.view()}, {"router_logits", l.view()}}).ok());
  auto got = read_tensor_file(dir / "in.safetensors", "router_logits");
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_TRUE(testing::same_bytes(*got, l));
  got->data_as<float>()[0] = 1.0f;  // an ordinary writable tensor, not a view of the read-only mapping
  MOEKIT_EXPECT_ERROR(read_tensor_file(dir / "in.safetensors").status(), StatusCode::kInvalidArgument, "holds 2 tensors");

  ASSERT_TRUE(write_tensor_file(dir / "out.safetensors", h.view()).ok());
  auto only = read_tensor_file(dir / "out.safetensors");
  ASSERT_TRUE(only.ok());
  EXPECT_TRUE(testing::same_bytes(*only, h));
  EXPECT_EQ(SafetensorsFile::open(dir / "out.safetensors")->tensors().front().name, "output");

  ASSERT_TRUE(write_tensor_file(dir / "out.npy", l.view()).ok());
  auto npy = read_tensor_file(dir / "out.npy");
  ASSERT_TRUE(npy.ok());
  EXPECT_TRUE(testing::same_bytes(*npy, l));
  MOEKIT_EXPECT_ERROR(write_tensor_file(dir / "out.txt", l.view()), StatusCode::kInvalidArgument, ".txt", ".npy or .safetensors");
  MOEKIT_EXPECT_ERROR(read_tensor_file(dir / "out.npy", "x").status(), StatusCode::kInvalidArgument, "cannot select 'x'");
}

}  // namespace
}  // namespace moekit
