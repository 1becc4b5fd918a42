// Small host helpers shared by the MoE launchers.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda/cuda_check.h"
#include "cuda/moe/moe_launch.h"

namespace moekit::cuda::moe {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// The grid of a grouped GEMM over R_max routed rows, `rows` per tile: each tile holds at least one
// row, and at most one partial tile per expert that has rows (tiles past the routed rows end early).
// A gated epilogue's tile holds cols/2 outputs (gate and up rows paired), so it covers n/2 columns.
struct TileGrid {
  int64_t m_tiles, n_tiles;
  int64_t tiles() const { return m_tiles * n_tiles; }
};
inline TileGrid tile_grid(int64_t max_rows, int64_t local_experts, int rows, int64_t n, int cols, bool paired) {
  const int64_t m = std::min(max_rows, max_rows / rows + std::min(local_experts, max_rows));
  const int64_t nt = paired ? ceil_div(n / 2, cols / 2) : ceil_div(n, cols);
  return {m, nt};
}

// Lets `kernel` use `bytes` of dynamic shared memory (over 48 KB needs an opt-in per kernel). Not a
// stream operation, so it is allowed while a stream is being captured.
template <typename Kernel>
Status allow_dynamic_smem(Kernel kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return Status::Ok();
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return Status::Ok();
}

// The opt-in shared memory per block of the current device (read once per process).
inline int max_smem_optin() {
  static const int value = [] {
    int dev = 0, v = 48 * 1024;
    if (cudaGetDevice(&dev) == cudaSuccess) (void)cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    return v;
  }();
  return value;
}

// Calls f(std::integral_constant<Epilogue, e>{}) for the runtime epilogue e: the one switch from
// a GemmArgs epilogue to a kernel instantiation, shared by the GEMM launchers.
template <class F>
Status with_epilogue(Epilogue e, F&& f) {
  switch (e) {
    case Epilogue::kStoreF32: return f(std::integral_constant<Epilogue, Epilogue::kStoreF32>{});
    case Epilogue::kActivation: return f(std::integral_constant<Epilogue, Epilogue::kActivation>{});
    case Epilogue::kAtomicAdd: return f(std::integral_constant<Epilogue, Epilogue::kAtomicAdd>{});
    case Epilogue::kStore: return f(std::integral_constant<Epilogue, Epilogue::kStore>{});
  }
  return Status::Internal("GEMM launch: unknown epilogue");
}

// The error of the launch just made (a bad configuration shows here, not at the next sync).
#define MOEKIT_CUDA_CHECK_LAUNCH(what) MOEKIT_RETURN_IF_ERROR(::moekit::detail::cuda_status(cudaGetLastError(), what, __FILE__, __LINE__))

}  // namespace moekit::cuda::moe
