// Host side of the weight-streaming grouped GEMM (stream_gemm.cuh): the grid, the split of K over
// a thread-block cluster, and the dispatch of one element type's instantiations (included by one .cu
// per type, so that the two compile in parallel).
#pragma once

#include <algorithm>
#include <cstdlib>
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

// EXPERIMENT, to be removed once measured: MOEKIT_STREAM_VARIANT=0 the 16-row warps (as before),
// 1 the same skipping empty n8 blocks, 2 32-row warps over half of each stage's k steps, skipping
// empty n8 blocks, 3 the 32-row warps without skipping, 4 128 weight rows per CTA (8 warps of 16),
// 5 128 weight rows per CTA (8 warps of 32 rows over half the k steps), 6 512-byte runs of each
// weight row per stage (BK = 256, one CTA per SM).
inline int stream_variant() {
  static const int v = [] {
    const char* e = std::getenv("MOEKIT_STREAM_VARIANT");
    return e ? std::atoi(e) : 0;
  }();
  return v;
}

inline int env_int(const char* name) {
  const char* e = std::getenv(name);
  return e ? std::atoi(e) : 0;
}

template <typename T, int NT>
Status launch_stream_variant(const GemmArgs& args, void* stream) {
  GemmArgs a = args;
  static const int prefetch = env_int("MOEKIT_STREAM_PREFETCH"), policy = env_int("MOEKIT_STREAM_PREFETCH_POLICY");
  a.prefetch_stages = prefetch;
  a.prefetch_policy = policy;
  switch (stream_variant()) {
    case 1:
      if constexpr (NT > 8) return launch_stream_shape<T, StreamShape<NT, 1, true>>(a, stream);
      break;
    case 2:
      if constexpr (NT > 8) return launch_stream_shape<T, StreamShape<NT, 2, true>>(a, stream);
      return launch_stream_shape<T, StreamShape<NT, 2>>(a, stream);
    case 3: return launch_stream_shape<T, StreamShape<NT, 2>>(a, stream);
    case 4: return launch_stream_shape<T, StreamShape<NT, 1, false, 128>>(a, stream);
    case 5: return launch_stream_shape<T, StreamShape<NT, 2, false, 128>>(a, stream);
    case 6: return launch_stream_shape<T, StreamShape<NT, 1, false, 64, 256>>(a, stream);
    default: break;
  }
  return launch_stream_shape<T, StreamShape<NT>>(a, stream);
}

template <typename T>
Status launch_stream_gemm_typed(const GemmArgs& a, void* stream) {
  switch (a.tile) {
    case GemmTile::kStreamN8: return launch_stream_variant<T, 8>(a, stream);
    case GemmTile::kStreamN16: return launch_stream_variant<T, 16>(a, stream);
    case GemmTile::kStreamN32: return launch_stream_variant<T, 32>(a, stream);
    default: break;
  }
  return Status::Internal("stream GEMM: not a stream tile");
}

}  // namespace moekit::cuda::moe
