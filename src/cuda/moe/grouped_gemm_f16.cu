// The f16 instantiations of the grouped GEMM.
#include "cuda/moe/grouped_gemm_launch.cuh"

namespace moekit::cuda::moe {
Status launch_grouped_gemm_f16(const GemmArgs& a, void* stream) { return launch_grouped_gemm_typed<__half>(a, stream); }
}  // namespace moekit::cuda::moe
