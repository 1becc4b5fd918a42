// The device side of random layers (src/cuda/random_fill.h): one grid-stride kernel per dtype over the
// generator the host uses (src/runner/random_bits.h), with the rounding intrinsic that matches the
// host's conversion of the same double. (No fmt here: its compile-time format checks do not build
// under nvcc.)
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/random_fill.h"
#include "runner/random_bits.h"

namespace moekit::cuda {
namespace {

constexpr int kThreads = 256;

// Element i of the tensor: scale * uniform, one double product (__dmul_rn: never contracted with
// anything), then the dtype's rounding:
//  - bf16: the float (__double2float_rn, as static_cast<float> on the host) truncated to its top 16
//    bits, as fill_uniform does for bf16;
//  - f16: cvt.rn.f16.f64 (__double2half), one rounding to nearest even from the double, as
//    encode_f16 in store_element (no detour through float, which could round twice);
//  - f32: __double2float_rn, as store_element's static_cast<float>.
template <DType kType>
__global__ void fill_kernel(void* data, int64_t n, double scale, uint64_t base) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double v = __dmul_rn(scale, random_bits::uniform_from_bits(random_bits::mix(base + static_cast<uint64_t>(i))));
    if constexpr (kType == DType::kBF16) {
      static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(__float_as_uint(__double2float_rn(v)) >> 16);
    } else if constexpr (kType == DType::kF16) {
      static_cast<__half*>(data)[i] = __double2half(v);
    } else {
      static_cast<float*>(data)[i] = __double2float_rn(v);
    }
  }
}

}  // namespace

Status fill_uniform_device(const TensorView& t, double scale, uint64_t seed, uint64_t stream) {
  if (!t.device().is_cuda()) return Status::InvalidArgument("fill_uniform_device: tensor " + t.describe() + " is not in CUDA memory");
  if (!t.is_contiguous()) return Status::InvalidArgument("fill_uniform_device: tensor " + t.describe() + " is not contiguous");
  const int64_t n = t.numel();
  if (n == 0) return Status::Ok();
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaSetDevice(t.device().index));
  // Grid-stride: enough blocks to fill the GPU many times over, capped so that the grid size stays
  // an int for 10^10-element tensors.
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t{1} << 20);
  const uint64_t base = random_bits::stream_base(seed, stream);
  switch (t.dtype()) {
    case DType::kBF16: fill_kernel<DType::kBF16><<<static_cast<unsigned>(blocks), kThreads>>>(t.data(), n, scale, base); break;
    case DType::kF16: fill_kernel<DType::kF16><<<static_cast<unsigned>(blocks), kThreads>>>(t.data(), n, scale, base); break;
    case DType::kF32: fill_kernel<DType::kF32><<<static_cast<unsigned>(blocks), kThreads>>>(t.data(), n, scale, base); break;
    default:
      return Status::Unsupported("fill_uniform_device: dtype " + std::string(dtype_name(t.dtype())) + " of " + t.describe() +
                                 " is not bf16, f16 or f32 (other weights are made on the host)");
  }
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return Status::Ok();
}

}  // namespace moekit::cuda
