// Per-expert biases on the device: one element of a bias tensor of any element type, and the local
// expert that owns a row of the expert-grouped buffers. The GEMM epilogues add the bias themselves;
// the sm_90a kernel adds none (except gemm1's in its gated epilogue), so after it the activation and
// finalize kernels add it, finding each row's expert from the expert offsets.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/moe/moe_launch.h"

namespace moekit::cuda::moe {

__device__ __forceinline__ float load_bias(const void* bias, Elem t, int64_t i) {
  if (t == Elem::kF32) return static_cast<const float*>(bias)[i];
  if (t == Elem::kBF16) return __bfloat162float(static_cast<const __nv_bfloat16*>(bias)[i]);
  return __half2float(static_cast<const __half*>(bias)[i]);
}

// The local expert whose rows [offsets[e], offsets[e + 1]) hold row r: the last e in [0, experts)
// with offsets[e] <= r (an empty expert before it shares its offset and is passed over).
__device__ __forceinline__ int expert_of_row(const int64_t* offsets, int experts, int64_t r) {
  int lo = 0, hi = experts;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (offsets[mid] <= r) lo = mid;
    else hi = mid;
  }
  return lo;
}

}  // namespace moekit::cuda::moe
