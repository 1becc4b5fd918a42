// Helpers of the per-dtype instantiation files (shared_attention_<dtype>.cu): the kernel-table
// entry of one instantiation, and the four head dims.
#pragma once

#include <vector>

#include "cuda/attention/attention_kernels.h"
#include "cuda/attention/shared_attention_kernel.cuh"

namespace moekit::cuda::detail {

template <typename T, int D, typename Engine>
KernelEntry entry(DType dtype, ContextEngine engine) {
  return {dtype,
          D,
          engine,
          Engine::kWarps * 32,
          Engine::kTile,
          kernel_smem_bytes<Engine>(),
          reinterpret_cast<const void*>(&shared_attention_kernel<T, D, Engine>)};
}

template <typename T, template <typename, int> class Engine>
void add_head_dims(std::vector<KernelEntry>& v, DType dtype, ContextEngine engine) {
  v.push_back(entry<T, 16, Engine<T, 16>>(dtype, engine));
  v.push_back(entry<T, 32, Engine<T, 32>>(dtype, engine));
  v.push_back(entry<T, 64, Engine<T, 64>>(dtype, engine));
  v.push_back(entry<T, 128, Engine<T, 128>>(dtype, engine));
}

}  // namespace moekit::cuda::detail
