// Foundation checks on a real GPU: the device the library reports, device tensors, the hardware
// conversion instructions against our host conversions (every code, and 16M random floats), and the
// pinned CuTe headers compiling and running for this architecture.
#include <cuda_fp4.h>
#include <cuda_fp8.h>

#include <cute/tensor.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "moekit/float_formats.h"
#include "moekit/tensor.h"

namespace moekit {
namespace {

TEST(GpuFoundation, ReportsTheDevice) {
  MOEKIT_REQUIRE_GPU();
  const auto sys = query_system();
  const auto& d = sys.devices.front();
  EXPECT_FALSE(d.name.empty());
  EXPECT_GE(d.cc_major, 8);
  EXPECT_GT(d.sm_count, 0);
  EXPECT_GT(d.total_memory_bytes, int64_t{1} << 30);
  EXPECT_GT(d.l2_cache_bytes, 0);
}

TEST(GpuFoundation, DeviceTensorRoundTrip) {
  MOEKIT_REQUIRE_GPU();
  auto host = Tensor::empty(DType::kBF16, {77, 2880});
  auto dev = Tensor::empty(DType::kBF16, {77, 2880}, Device::cuda(0));
  auto back = Tensor::empty(DType::kBF16, {77, 2880});
  ASSERT_TRUE(host.ok() && dev.ok() && back.ok()) << dev.status().to_string();
  std::mt19937 rng(7);
  auto* h = host->data_as<uint16_t>();
  for (int64_t i = 0; i < host->numel(); ++i) h[i] = static_cast<uint16_t>(rng());
  std::memset(back->data(), 0xD5, static_cast<size_t>(back->storage_bytes()));
  ASSERT_TRUE(copy_tensor(*dev, *host).ok());
  ASSERT_TRUE(copy_tensor(*back, *dev).ok());
  EXPECT_EQ(std::memcmp(back->data(), host->data(), static_cast<size_t>(host->storage_bytes())), 0);
}

__global__ void convert_kernel(const float* x, int n, uint8_t* e4m3_sat, uint8_t* e4m3_nosat, uint8_t* e5m2_sat,
                               uint8_t* e2m1) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  e4m3_sat[i] = __nv_cvt_float_to_fp8(x[i], __NV_SATFINITE, __NV_E4M3);
  e4m3_nosat[i] = __nv_cvt_float_to_fp8(x[i], __NV_NOSAT, __NV_E4M3);
  e5m2_sat[i] = __nv_cvt_float_to_fp8(x[i], __NV_SATFINITE, __NV_E5M2);
  e2m1[i] = __nv_cvt_float_to_fp4(x[i], __NV_E2M1, cudaRoundNearest);
}

TEST(GpuFoundation, HardwareConversionsMatchHostConversions) {
  MOEKIT_REQUIRE_GPU();
  std::vector<float> xs;
  std::mt19937 rng(11);
  for (int c = 0; c < 256; ++c) xs.push_back(static_cast<float>(decode_e4m3(uint8_t(c))));
  for (int i = 0; i < (1 << 24); ++i) {
    const uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    xs.push_back(i % 2 ? f : std::ldexp(static_cast<float>(rng() % 100000) / 1000.0f - 50.0f, -int(rng() % 12)));
  }
  const int n = static_cast<int>(xs.size());
  float* dx = nullptr;
  uint8_t* dout = nullptr;
  MOEKIT_ASSERT_CUDA(cudaMalloc(&dx, n * sizeof(float)));
  MOEKIT_ASSERT_CUDA(cudaMalloc(&dout, 4 * static_cast<size_t>(n)));
  MOEKIT_ASSERT_CUDA(cudaMemcpy(dx, xs.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  MOEKIT_ASSERT_CUDA(cudaMemset(dout, 0xD5, 4 * static_cast<size_t>(n)));
  convert_kernel<<<(n + 255) / 256, 256>>>(dx, n, dout, dout + n, dout + 2 * size_t(n), dout + 3 * size_t(n));
  MOEKIT_ASSERT_CUDA(cudaGetLastError());
  std::vector<uint8_t> out(4 * static_cast<size_t>(n));
  MOEKIT_ASSERT_CUDA(cudaMemcpy(out.data(), dout, out.size(), cudaMemcpyDeviceToHost));
  cudaFree(dx);
  cudaFree(dout);
  int64_t mismatches = 0;
  for (int i = 0; i < n && mismatches < 10; ++i) {
    const uint8_t want[4] = {encode_e4m3(xs[i], Overflow::kSaturate), encode_e4m3(xs[i], Overflow::kNoSaturate),
                             encode_e5m2(xs[i], Overflow::kSaturate), encode_e2m1(xs[i])};
    for (int k = 0; k < 4; ++k) {
      if (out[k * size_t(n) + i] != want[k]) {
        ++mismatches;
        ADD_FAILURE() << "format " << k << " x=" << xs[i] << " gpu=" << int(out[k * size_t(n) + i]) << " host=" << int(want[k]);
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// A CuTe layout computed on the device: proves the pinned headers compile for our archs and run.
__global__ void cute_layout_kernel(int* out) {
  using namespace cute;
  auto layout = make_layout(make_shape(Int<4>{}, Int<8>{}), GenRowMajor{});
  const int i = threadIdx.x;
  out[i] = layout(i / 8, i % 8);
}

TEST(GpuFoundation, CuteHeadersRun) {
  MOEKIT_REQUIRE_GPU();
  int* d = nullptr;
  MOEKIT_ASSERT_CUDA(cudaMalloc(&d, 32 * sizeof(int)));
  cute_layout_kernel<<<1, 32>>>(d);
  MOEKIT_ASSERT_CUDA(cudaGetLastError());
  int h[32];
  MOEKIT_ASSERT_CUDA(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
  cudaFree(d);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(h[i], i);
}

}  // namespace
}  // namespace moekit
