// The bf16 instantiations of the decode layer's GEMM kernel.
#include "cuda/moe/decode_layer_launch.cuh"

namespace moekit::cuda::moe {
Status launch_decode_gemms_bf16(const DecodeLayerArgs& a, const DecodeScratch& s, void* stream) { return launch_decode_gemms_typed<__nv_bfloat16>(a, s, stream); }
}  // namespace moekit::cuda::moe
