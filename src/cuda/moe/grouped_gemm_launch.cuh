// Dispatch of the grouped GEMM instantiations of one element type (included by one .cu per type,
// so that the two types compile in parallel).
#pragma once

#include <algorithm>
#include <limits>
#include <string>

#include "cuda/moe/grouped_gemm.cuh"
#include "cuda/moe/launch_utils.cuh"
#include "cuda/moe/pdl.cuh"

namespace moekit::cuda::moe {

template <typename T, class S, Epilogue kEpi>
Status launch_gemm_instance(const GemmArgs& a, void* stream) {
  const int64_t R = a.max_rows;
  if (R == 0) return Status::Ok();
  const TileGrid grid = tile_grid(R, a.local_experts, S::BM, a.n, S::BN, kEpi == Epilogue::kActivation && a.gated);
  const int64_t m_tiles = grid.m_tiles, n_tiles = grid.n_tiles;
  const int64_t blocks = grid.tiles();
  if (blocks > std::numeric_limits<int32_t>::max())
    return Status::Unsupported("grouped GEMM: " + std::to_string(blocks) + " tiles exceed the grid limit");
  const size_t smem = S::smem_bytes(a.local_experts);
  auto kernel = grouped_gemm_kernel<T, S, kEpi>;
  MOEKIT_RETURN_IF_ERROR(allow_dynamic_smem(kernel, smem));
  return launch_kernel("grouped_gemm_kernel", kernel, {dim3(static_cast<unsigned>(blocks)), dim3(S::kThreads), smem}, stream, a, m_tiles, n_tiles);
}

template <typename T, class S>
Status launch_gemm_tile(const GemmArgs& a, void* stream) {
  return with_epilogue(a.epilogue, [&](auto epi) { return launch_gemm_instance<T, S, decltype(epi)::value>(a, stream); });
}

template <typename T>
Status launch_grouped_gemm_typed(const GemmArgs& a, void* stream) {
  switch (a.tile) {
    case GemmTile::kM16N64: return launch_gemm_tile<T, TileM16N64>(a, stream);
    case GemmTile::kM32N128: return launch_gemm_tile<T, TileM32N128>(a, stream);
    case GemmTile::kM64N128: return launch_gemm_tile<T, TileM64N128>(a, stream);
    case GemmTile::kM128N128: return launch_gemm_tile<T, TileM128N128>(a, stream);
    case GemmTile::kM128N256: return launch_gemm_tile<T, TileM128N256>(a, stream);
    case GemmTile::kSm90M128N256C1x1:  // not mma.sync tiles: cuda_stages.cpp launches them
    case GemmTile::kSm90M128N256C1x2:
    case GemmTile::kSm90M64N128C1x1:
    case GemmTile::kSm90M64N128C1x2:
    case GemmTile::kSm90M128N128C1x1:
    case GemmTile::kSm90M192N128C1x1:
    case GemmTile::kStreamN8:      // the stream tiles: stream_gemm_launch.cuh
    case GemmTile::kStreamN16:
    case GemmTile::kStreamN32: break;
  }
  return Status::Internal("grouped GEMM: unknown tile");
}

}  // namespace moekit::cuda::moe
