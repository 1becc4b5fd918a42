// Instantiations of the shared-context attention kernel for f32 (see kernel_table.cpp).
#include "cuda/attention/instantiate.cuh"

namespace moekit::cuda {

void add_f32_kernels(std::vector<KernelEntry>& v) {
  detail::add_head_dims<float, detail::SimtEngine>(v, DType::kF32, ContextEngine::kSimt);
}

}  // namespace moekit::cuda
