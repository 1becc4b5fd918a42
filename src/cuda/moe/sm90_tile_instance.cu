// One Sm90Tile's CUTLASS kernels (bf16 and f16 in; float32 or the input type out), or with
// MOEKIT_SM90_GATED=1 the same tile with the gated-activation epilogue. CMake compiles this file twice
// per tile, with MOEKIT_SM90_TILE naming the Sm90Tile enumerator (src/CMakeLists.txt,
// MOEKIT_SM90_TILES), so that the tiles and epilogues build in parallel.
#include "cuda/moe/sm90_grouped_gemm_kernel.cuh"

#ifndef MOEKIT_SM90_TILE
#error "MOEKIT_SM90_TILE must name an Sm90Tile enumerator (set by src/CMakeLists.txt)"
#endif

namespace moekit::cuda::moe::sm90 {

#if MOEKIT_SM90_GATED
template Status launch_gated_tile<Sm90Tile::MOEKIT_SM90_TILE>(const Sm90GemmArgs& a, void* stream);
#else
template Status launch_tile<Sm90Tile::MOEKIT_SM90_TILE>(const Sm90GemmArgs& a, void* stream);
template size_t tile_scratch_bytes<Sm90Tile::MOEKIT_SM90_TILE>(int experts, int sm_count);
#endif

}  // namespace moekit::cuda::moe::sm90
