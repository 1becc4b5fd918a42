// The per-tile entry points of the sm_90a grouped GEMM, between the dispatcher
// (sm90_grouped_gemm.cpp, plain C++) and the CUTLASS instantiations (sm90_tile_instance.cu, built once
// per Sm90Tile with MOEKIT_SM90_TILE set). Internal to moekit_cuda_sm90.
#pragma once

#include <cstddef>

#include "cuda/moe/sm90_grouped_gemm.h"

namespace moekit::cuda::moe::sm90 {

// Enqueues the setup kernel and the CUTLASS kernel of tile T; the arguments are already checked.
template <Sm90Tile T>
Status launch_tile(const Sm90GemmArgs& a, void* stream);

// The same with the gated-activation epilogue (a.gated_activation >= 0; 16-bit D of the input type).
template <Sm90Tile T>
Status launch_gated_tile(const Sm90GemmArgs& a, void* stream);

// The scratch tile T needs for `experts` groups on `sm_count` SMs.
template <Sm90Tile T>
size_t tile_scratch_bytes(int experts, int sm_count);

const char* elem_name(Elem e);

}  // namespace moekit::cuda::moe::sm90
