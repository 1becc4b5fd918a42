// Instantiations of the shared-context attention kernel for f16 (see kernel_table.cpp).
#include "cuda/attention/instantiate.cuh"

namespace moekit::cuda {

void add_f16_kernels(std::vector<KernelEntry>& v) {
  detail::add_head_dims<__half, detail::SimtEngine>(v, DType::kF16, ContextEngine::kSimt);
  detail::add_head_dims<__half, detail::MmaEngine>(v, DType::kF16, ContextEngine::kMma);
}

}  // namespace moekit::cuda
