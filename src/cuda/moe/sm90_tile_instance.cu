// One Sm90Tile's CUTLASS kernels with one epilogue, chosen by MOEKIT_SM90_EPILOGUE: 0 the plain store
// (bf16 and f16 in; float32 or the input type out), 1 the gated activation (gemm1), 2 the finalize
// (gemm2 + the weighted combine). CMake compiles this file three times per tile, with MOEKIT_SM90_TILE
// naming the Sm90Tile enumerator (src/CMakeLists.txt, MOEKIT_SM90_TILES), so that the tiles and
// epilogues build in parallel.
#include "cuda/moe/sm90_grouped_gemm_kernel.cuh"

#ifndef MOEKIT_SM90_TILE
#error "MOEKIT_SM90_TILE must name an Sm90Tile enumerator (set by src/CMakeLists.txt)"
#endif
#ifndef MOEKIT_SM90_EPILOGUE
#error "MOEKIT_SM90_EPILOGUE must be 0 (plain), 1 (gated) or 2 (finalize) (set by src/CMakeLists.txt)"
#endif

namespace moekit::cuda::moe::sm90 {

#if MOEKIT_SM90_EPILOGUE == 1
template Status launch_gated_tile<Sm90Tile::MOEKIT_SM90_TILE>(const Sm90GemmArgs& a, void* stream);
#elif MOEKIT_SM90_EPILOGUE == 2
template Status launch_finalize_tile<Sm90Tile::MOEKIT_SM90_TILE>(const Sm90GemmArgs& a, void* stream);
#else
template Status launch_tile<Sm90Tile::MOEKIT_SM90_TILE>(const Sm90GemmArgs& a, void* stream);
template size_t tile_scratch_bytes<Sm90Tile::MOEKIT_SM90_TILE>(int experts, int sm_count);
#endif

}  // namespace moekit::cuda::moe::sm90
