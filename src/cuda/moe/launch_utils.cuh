// Small host helpers shared by the MoE launchers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/cuda_check.h"
#include "cuda/moe/moe_launch.h"

namespace moekit::cuda::moe {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

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
