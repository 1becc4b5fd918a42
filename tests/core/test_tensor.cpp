#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "moekit/system_info.h"
#include "moekit/tensor.h"

namespace moekit {
namespace {

TEST(TensorView, ContiguousShapeAndStrides) {
  std::vector<uint16_t> buf(3 * 5 * 7);
  TensorView v(buf.data(), DType::kBF16, {3, 5, 7});
  EXPECT_EQ(v.ndim(), 3);
  EXPECT_EQ(v.numel(), 105);
  EXPECT_EQ(v.size(-1), 7);
  EXPECT_EQ(v.size(3), -1);
  EXPECT_EQ(v.stride(0), 35);
  EXPECT_EQ(v.stride(2), 1);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.storage_bytes(), 210);
  EXPECT_EQ(v.describe(), "bf16[3, 5, 7] cpu");
}

TEST(TensorView, StridedAndZeroSized) {
  float buf[64];
  const int64_t shape[] = {4, 3};
  const int64_t strides[] = {8, 2};
  auto v = TensorView::create(buf, DType::kF32, shape, strides);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_FALSE(v->is_contiguous());
  const int64_t empty_shape[] = {0, 2880};
  auto e = TensorView::create(nullptr, DType::kBF16, empty_shape);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->numel(), 0);
}

TEST(TensorView, InvalidShapesNameTheField) {
  float buf[4];
  const int64_t negative[] = {2, -1};
  auto r = TensorView::create(buf, DType::kF32, negative);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "tensor shape[1]=-1 is negative");
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(TensorView::create(buf, DType::kF32, nine).status().message(), "tensor ndim=9 exceeds the maximum of 8");
  const int64_t odd[] = {2, 3};
  EXPECT_EQ(TensorView::create(buf, DType::kE2M1, odd).status().message(),
            "packed e2m1 tensor: innermost extent shape[1]=3 must be even");
  const int64_t two[] = {2, 2};
  EXPECT_EQ(TensorView::create(nullptr, DType::kF32, two).status().message(), "tensor f32[2, 2] cpu has a null data pointer");
  const int64_t bad_strides[] = {4};
  EXPECT_FALSE(TensorView::create(buf, DType::kF32, two, bad_strides).ok());
  EXPECT_THROW(TensorView(buf, DType::kF32, {2, -2}), Error);
}

TEST(Tensor, HostAllocationIsAlignedAndCopies) {
  auto a = Tensor::empty(DType::kF32, {3, 77});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % 256, 0u);
  for (int i = 0; i < 231; ++i) a->data_as<float>()[i] = static_cast<float>(i) * 0.5f;
  auto b = Tensor::empty(DType::kF32, {3, 77});
  ASSERT_TRUE(copy_tensor(*b, *a).ok());
  for (int i = 0; i < 231; ++i) ASSERT_EQ(b->data_as<float>()[i], static_cast<float>(i) * 0.5f);
  auto c = Tensor::empty(DType::kF16, {3, 77});
  EXPECT_EQ(copy_tensor(*c, *a).message(), "copy_tensor: dst f16[3, 77] cpu and src f32[3, 77] cpu differ in dtype");
  auto z = Tensor::empty(DType::kBF16, {0, 2880});
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->numel(), 0);
}

TEST(Tensor, DeviceAllocationWithoutGpuIsAClearError) {
  if (!query_system().devices.empty()) GTEST_SKIP() << "a GPU is present; covered by the gpu tests";
  auto d = Tensor::empty(DType::kBF16, {4, 4}, Device::cuda(0));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("bf16[4, 4] cuda:0"), std::string::npos) << d.status().message();
}

}  // namespace
}  // namespace moekit
