// Host side of the weight-streaming grouped GEMM (stream_gemm.cuh): the grid, the split of K over
// a thread-block cluster, and the dispatch of one element type's instantiations (included by one .cu
// per type, so that the two compile in parallel).
#pragma once

#include <algorithm>
#include <limits>
#include <string>

#include "cuda/moe/launch_utils.cuh"
#include "cuda/moe/pdl.cuh"
#include "cuda/moe/stream_gemm.cuh"

namespace moekit::cuda::moe {

// The K split of a tile grid: the caller's (1..kMaxSplit) when given, else none when the tiles cover
// the SMs, and otherwise as many ranks as fit in the resident CTAs (`slots()`, queried only then), so
// the grid stays one wave. Clusters (sm_90) are needed for any split above 1.
template <class S, class Slots>
int stream_split(const GemmArgs& a, int64_t tiles, int64_t k_tiles, Slots slots) {
  if (!a.clusters) return 1;
  int split = a.split;
  if (split <= 0) split = tiles >= a.sm_count ? 1 : static_cast<int>(std::min<int64_t>(S::kMaxSplit, slots() / std::max<int64_t>(tiles, 1)));
  split = static_cast<int>(std::clamp<int64_t>(split, 1, std::min<int64_t>(S::kMaxSplit, k_tiles)));
  return static_cast<int>(split_without_empty_ranks(k_tiles, split));
}

// CTAs of one instantiation resident on the whole GPU at once (a host-side query).
template <class Kernel>
int64_t resident_ctas(Kernel kernel, int threads, size_t smem, int sm_count) {
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) != cudaSuccess || per_sm < 1) per_sm = 1;
  return static_cast<int64_t>(per_sm) * std::max(sm_count, 1);
}

template <typename T, class S, Epilogue kEpi>
Status launch_stream_instance(const GemmArgs& a, void* stream) {
  const int64_t R = a.max_rows;
  if (R == 0) return Status::Ok();
  const TileGrid grid = tile_grid(R, a.local_experts, S::NT, a.n, S::BW, kEpi == Epilogue::kActivation && a.gated);
  const int64_t n_tiles = grid.n_tiles, tiles = grid.tiles();
  const int64_t k_tiles = ceil_div(a.k, S::BK);
  const size_t smem = S::smem_bytes(a.local_experts);
  auto kernel = stream_gemm_kernel<T, S, kEpi>;
  MOEKIT_RETURN_IF_ERROR(allow_dynamic_smem(kernel, smem));
  const int split = stream_split<S>(a, tiles, k_tiles, [&] { return resident_ctas(kernel, S::kThreads, smem, a.sm_count); });
  const int64_t per_split = ceil_div(k_tiles, split);
  const int64_t blocks = tiles * split;  // one tile (and K range) per CTA
  if (blocks > std::numeric_limits<int32_t>::max())
    return Status::Unsupported("stream GEMM: " + std::to_string(blocks) + " CTAs exceed the grid limit");
  const LaunchShape shape{dim3(static_cast<unsigned>(blocks)), dim3(S::kThreads), smem, static_cast<unsigned>(split)};
  return launch_kernel("stream_gemm_kernel", kernel, shape, stream, a, n_tiles, split, per_split);
}

template <typename T, class S>
Status launch_stream_shape(const GemmArgs& a, void* stream) {
  return with_epilogue(a.epilogue, [&](auto epi) { return launch_stream_instance<T, S, decltype(epi)::value>(a, stream); });
}

template <typename T>
Status launch_stream_gemm_typed(const GemmArgs& a, void* stream) {
  switch (a.tile) {
    case GemmTile::kStreamN8: return launch_stream_shape<T, StreamShape<8>>(a, stream);
    case GemmTile::kStreamN16: return launch_stream_shape<T, StreamShape<16>>(a, stream);
    case GemmTile::kStreamN32: return launch_stream_shape<T, StreamShape<32>>(a, stream);
    default: break;
  }
  return Status::Internal("stream GEMM: not a stream tile");
}

}  // namespace moekit::cuda::moe
