#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "moekit/dlpack.h"

namespace moekit {
namespace {

TEST(DLPack, DTypeMappingRoundTrips) {
  for (DType t : all_dtypes()) {
    auto dl = dtype_to_dlpack(t);
    ASSERT_TRUE(dl.ok()) << dtype_name(t);
    auto back = dtype_from_dlpack(*dl);
    ASSERT_TRUE(back.ok());
    // ue4m3 travels as float8_e4m3fn, its storage type in frameworks.
    EXPECT_EQ(*back, t == DType::kUE4M3 ? DType::kE4M3 : t);
  }
  EXPECT_EQ(dtype_to_dlpack(DType::kE4M3)->code, 10);
  EXPECT_EQ(dtype_to_dlpack(DType::kE2M1)->code, 17);
  EXPECT_EQ(dtype_to_dlpack(DType::kE2M1)->bits, 4);
  EXPECT_EQ(dtype_from_dlpack(DLDataType{kDLFloat, 32, 4}).status().message(),
            "DLPack dtype lanes=4 (only scalar lanes=1 tensors are supported)");
  EXPECT_EQ(dtype_from_dlpack(DLDataType{kDLComplex, 64, 1}).status().message(),
            "DLPack dtype code=5 bits=64 has no moekit equivalent");
}

TEST(DLPack, ImportsStridedViewWithOffsetWithoutCopy) {
  std::vector<float> buf(40);
  int64_t shape[] = {3, 4};
  int64_t strides[] = {10, 2};
  DLTensor t{};
  t.data = buf.data();
  t.device = {kDLCPU, 0};
  t.ndim = 2;
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = 4 * sizeof(float);
  auto v = view_from_dlpack(t);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->data(), buf.data() + 4);
  EXPECT_EQ(v->stride(0), 10);
  EXPECT_EQ(v->stride(1), 2);
  t.strides = nullptr;  // NULL strides mean row-major contiguous
  EXPECT_TRUE(view_from_dlpack(t)->is_contiguous());
  t.device = {kDLVulkan, 0};
  EXPECT_EQ(view_from_dlpack(t).status().message(), "DLPack device_type=7 is not CPU or CUDA");
}

TEST(DLPack, ExportOwningTensorAndImportItBack) {
  auto made = Tensor::empty(DType::kBF16, {2, 6});
  ASSERT_TRUE(made.ok());
  void* data = made->data();
  auto capsule = to_dlpack(std::move(*made));
  ASSERT_TRUE(capsule.ok());
  DLManagedTensor* m = *capsule;
  EXPECT_EQ(m->dl_tensor.data, data);
  EXPECT_EQ(m->dl_tensor.dtype.code, kDLBfloat);
  EXPECT_EQ(m->dl_tensor.shape[1], 6);
  // The consumer takes it back as an owning tensor; destroying that runs the capsule's deleter
  // (LeakSanitizer/valgrind would see a leak or double free otherwise).
  auto back = tensor_from_dlpack(m);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->data(), data);
  EXPECT_EQ(back->dtype(), DType::kBF16);
}

TEST(DLPack, ImportRunsTheProducersDeleterOnce) {
  static int deleted = 0;
  deleted = 0;
  static float payload[4];
  static int64_t shape[] = {4};
  auto* m = new DLManagedTensor{};
  m->dl_tensor = DLTensor{payload, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  m->deleter = [](DLManagedTensor* self) {
    ++deleted;
    delete self;
  };
  {
    auto t = tensor_from_dlpack(m);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(deleted, 0);
    Tensor moved = std::move(*t);
    EXPECT_EQ(deleted, 0);
  }
  EXPECT_EQ(deleted, 1);
  // A capsule that cannot be imported stays with the caller, untouched.
  DLManagedTensor bad{};
  bad.dl_tensor = DLTensor{payload, {kDLCPU, 0}, 1, {kDLComplex, 64, 1}, shape, nullptr, 0};
  bad.deleter = [](DLManagedTensor*) { ++deleted; };
  EXPECT_FALSE(tensor_from_dlpack(&bad).ok());
  EXPECT_EQ(deleted, 1);
  EXPECT_EQ(tensor_from_dlpack(nullptr).status().message(), "tensor_from_dlpack: managed tensor is null");
}

TEST(DLPack, NonOwningExportFreesOnlyTheCapsule) {
  uint8_t packed[6] = {};
  TensorView v(packed, DType::kE2M1, {2, 6});
  auto capsule = to_dlpack(v);
  ASSERT_TRUE(capsule.ok());
  EXPECT_EQ((*capsule)->dl_tensor.dtype.bits, 4);
  EXPECT_EQ((*capsule)->dl_tensor.strides[0], 6);
  (*capsule)->deleter(*capsule);
  packed[0] = 1;  // still ours
}

}  // namespace
}  // namespace moekit
