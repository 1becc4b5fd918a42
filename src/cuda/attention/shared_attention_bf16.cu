// Instantiations of the shared-context attention kernel for bf16 (see kernel_table.cpp).
#include "cuda/attention/instantiate.cuh"

namespace moekit::cuda {

void add_bf16_kernels(std::vector<KernelEntry>& v) {
  detail::add_head_dims<__nv_bfloat16, detail::SimtEngine>(v, DType::kBF16, ContextEngine::kSimt);
  detail::add_head_dims<__nv_bfloat16, detail::MmaEngine>(v, DType::kBF16, ContextEngine::kMma);
}

}  // namespace moekit::cuda
