// The f16 instantiations of the decode layer's GEMM kernel.
#include "cuda/moe/decode_layer_launch.cuh"

namespace moekit::cuda::moe {
Status launch_decode_gemms_f16(const DecodeLayerArgs& a, const DecodeScratch& s, void* stream) { return launch_decode_gemms_typed<__half>(a, s, stream); }
}  // namespace moekit::cuda::moe
