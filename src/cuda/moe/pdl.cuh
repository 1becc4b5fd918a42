// Programmatic dependent launch (PDL, sm_90): the layer's kernels run back to back in one stream,
// and each one's launch, prologue and (for the weight-streaming GEMM) first weight loads can overlap
// the tail of the kernel before it instead of waiting for it to drain.
//
// The contract every kernel launched through launch_kernel() keeps:
//  - pdl_wait() before it reads anything the previous kernel writes, and before it writes anything
//    (so a later kernel never races an earlier one's reads);
//  - pdl_launch_dependents() only after its own pdl_wait() (most kernels right after it; the fused
//    routing + maps kernel at its end, measured faster so): the next kernel can then start early, and
//    when it starts, everything up to two launches back has completed. That is what lets a kernel
//    read, before its wait, data produced at least two launches earlier (the expert offsets from the
//    maps, for the GEMMs) and the weights, which no kernel of the layer writes.
// Without PDL (before sm_90, MOEKIT_PDL=0, or a build whose kernels lack the sm_90 instructions)
// both calls are no-ops and launches are ordinary stream-ordered launches.
#pragma once

#include <cuda_runtime.h>

#include "cuda/moe/launch_utils.cuh"

namespace moekit::cuda::moe {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Both, for kernels that have nothing to do before the previous kernel's results.
__device__ __forceinline__ void pdl_enter() {
  pdl_wait();
  pdl_launch_dependents();
}

struct LaunchShape {
  dim3 grid, block;
  size_t smem = 0;
  unsigned cluster = 1;  // CTAs per thread-block cluster along x (sm_90); 1: no cluster
};

// Launches `kernel` on `stream`, with PDL when `pdl` (and a cluster when asked), returning the launch
// error named after `what`. For kernels whose overlap is decided per launch (the sm_90a GEMM's setup
// kernel, Sm90Overlap); every other kernel goes through launch_kernel below.
template <typename... Params, typename... Args>
Status launch_kernel_pdl(const char* what, bool pdl, void (*kernel)(Params...), const LaunchShape& s, void* stream, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = s.grid;
  cfg.blockDim = s.block;
  cfg.dynamicSmemBytes = s.smem;
  cfg.stream = as_stream(stream);
  cudaLaunchAttribute attrs[2] = {};
  unsigned n = 0;
  if (pdl) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (s.cluster > 1) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n].val.clusterDim.x = s.cluster;
    attrs[n].val.clusterDim.y = 1;
    attrs[n].val.clusterDim.z = 1;
    ++n;
  }
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  MOEKIT_RETURN_IF_ERROR(::moekit::detail::cuda_status(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...), what, __FILE__, __LINE__));
  MOEKIT_CUDA_CHECK_LAUNCH(what);
  return Status::Ok();
}

// Launches `kernel` on `stream` with PDL when enabled (pdl_enabled) and a cluster when asked.
template <typename... Params, typename... Args>
Status launch_kernel(const char* what, void (*kernel)(Params...), const LaunchShape& s, void* stream, Args&&... args) {
  return launch_kernel_pdl(what, pdl_enabled(), kernel, s, stream, std::forward<Args>(args)...);
}

}  // namespace moekit::cuda::moe
