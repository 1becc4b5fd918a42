// Host side of the decode layer's GEMM kernel (decode_layer.cuh) for one element type: the rows per
// CTA from T, the grid (every possible active expert's tiles; tiles past the active ones end at once).
// Included by one .cu per type, so the two compile in parallel.
#pragma once

#include <algorithm>
#include <limits>
#include <string>

#include "cuda/moe/decode_layer.cuh"
#include "cuda/moe/launch_utils.cuh"
#include "cuda/moe/pdl.cuh"

namespace moekit::cuda::moe {

template <typename T, class S>
Status launch_decode_gemms_shape(const DecodeLayerArgs& a, const DecodeScratch& s, void* stream) {
  const int64_t slots = a.route.tokens * a.route.top_k;
  const int64_t max_active = std::min<int64_t>(slots, a.local_experts);
  const int64_t n1_tiles = a.gated ? ceil_div(a.inter, S::BW / 2) : ceil_div(a.inter, S::BW);
  const int64_t n2_tiles = ceil_div(a.hidden_size, S::BW);
  const int64_t items1 = max_active * n1_tiles;
  const int64_t blocks = items1 + max_active * n2_tiles * a.split;
  if (blocks > std::numeric_limits<int32_t>::max())
    return Status::Unsupported("decode layer: " + std::to_string(blocks) + " CTAs exceed the grid limit");
  auto kernel = decode_layer_kernel<T, S>;
  MOEKIT_RETURN_IF_ERROR(allow_dynamic_smem(kernel, S::kPipelineBytes));
  const LaunchShape shape{dim3(static_cast<unsigned>(blocks)), dim3(S::kThreads), S::kPipelineBytes};
  return launch_kernel("decode_layer_kernel", kernel, shape, stream, a, s, n1_tiles, n2_tiles, items1);
}

// Rows per CTA: a token reaches an expert at most once, so an expert has at most T rows.
template <typename T>
Status launch_decode_gemms_typed(const DecodeLayerArgs& a, const DecodeScratch& s, void* stream) {
  const int64_t T_ = a.route.tokens;
  if (T_ <= 8) return launch_decode_gemms_shape<T, StreamShape<8>>(a, s, stream);
  if (T_ <= 16) return launch_decode_gemms_shape<T, StreamShape<16>>(a, s, stream);
  return launch_decode_gemms_shape<T, StreamShape<32>>(a, s, stream);
}

}  // namespace moekit::cuda::moe
