// The bf16 instantiations of the weight-streaming grouped GEMM.
#include "cuda/moe/stream_gemm_launch.cuh"

namespace moekit::cuda::moe {
Status launch_stream_gemm_bf16(const GemmArgs& a, void* stream) { return launch_stream_gemm_typed<__nv_bfloat16>(a, stream); }
}  // namespace moekit::cuda::moe
