// The table of compiled shared-context attention kernels, and their launch (host code). The instantiations
// live in one file per dtype (shared_attention_<dtype>.cu, compiled in parallel): for each head
// dim 16, 32, 64, 128, the SIMT engine for f32/f16/bf16 (f32's only path, and a cross-check of the
// tensor-core path for the others) and the MMA engine for f16/bf16: 20 kernels, nothing else.
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda/attention/attention_kernels.h"
#include "cuda/cuda_check.h"

namespace moekit::cuda {
namespace {

const std::vector<KernelEntry>& kernels() {
  static const std::vector<KernelEntry> table = [] {
    std::vector<KernelEntry> v;
    add_f32_kernels(v);
    add_f16_kernels(v);
    add_bf16_kernels(v);
    return v;
  }();
  return table;
}

}  // namespace

const KernelEntry* find_kernel(DType dtype, int head_dim, ContextEngine engine) {
  for (const KernelEntry& k : kernels())
    if (k.dtype == dtype && k.head_dim == head_dim && k.engine == engine) return &k;
  return nullptr;
}

Result<KernelOccupancy> prepare_kernel(const KernelEntry& k, int device) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, KernelOccupancy> cache;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(k.function, device);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  MOEKIT_CUDA_RETURN_IF_ERROR(
      cudaFuncSetAttribute(k.function, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(k.smem_bytes)));
  KernelOccupancy occ;
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ.ctas_per_sm, k.function, k.threads, k.smem_bytes));
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&occ.sm_count, cudaDevAttrMultiProcessorCount, device));
  if (occ.ctas_per_sm < 1)
    return Status::Internal("shared attention kernel (" + std::string(dtype_name(k.dtype)) + ", D=" + std::to_string(k.head_dim) +
                            ") cannot be resident on device " + std::to_string(device));
  cache.emplace(key, occ);
  return occ;
}

Status launch_kernel(const KernelEntry& k, const SharedAttentionArgs& args, int grid_x, int grid_y, int grid_z, void* stream) {
  void* params[] = {const_cast<SharedAttentionArgs*>(&args)};
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaLaunchKernel(k.function, dim3(grid_x, grid_y, grid_z), dim3(k.threads), params, k.smem_bytes,
                                               static_cast<cudaStream_t>(stream)));
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

}  // namespace moekit::cuda
