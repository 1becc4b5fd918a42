// The whole MoE layer for a few tokens (decode) in two launches (moe_launch.h, DecodeLayerArgs):
//
//   decode_plan_kernel   one CTA: routes the tokens (a warp per token, routing_device.cuh) or reads the
//                        PreRouted ids, lists the active local experts and their routed rows (sorted
//                        by (expert, slot)), and zeroes the counters below.
//   decode_layer_kernel  one grid, one work item per CTA, in block order: every gemm1 tile, then every
//                        gemm2 tile.
//     gemm1 tile (active expert a, 64 weight rows): the stream kernel's k loop (stream_gemm.cuh) with
//       the routed rows gathered straight from `hidden` (no expand), bias and activation in the
//       epilogue, rows into `act`; then it counts itself done in done1[a].
//     gemm2 tile (a, 64 output columns, K rank): issues its first weight stages, then waits until
//       done1[a] has every gemm1 tile of a, streams the rest, and stores float32 partial rows (no bias).
//       It then counts itself in done2[column block]; the last of that block's tiles combines it:
//       out[t, n] = sum over t's slots in slot order of scale * w * ((partial ranks in rank order) +
//       bias), the arithmetic of the stage pipeline's unfused finalize, so the result is
//       bitwise-deterministic (no float atomics) and, at split 1, bitwise equal to the stage pipeline
//       on the stream tiles.
//
// Why no deadlock: a gemm2 tile waits only on gemm1 tiles, which have lower block indices and never
// wait. The GPU dispatches a grid's CTAs in block order, so each gemm1 tile a gemm2 CTA waits for is
// running or done: the assumption CUB's decoupled look-back scan makes too. (An atomic ticket makes
// the order explicit, but cost a dependent global round trip before any weight load.) Why the
// counters are clean: the plan kernel zeroes them, and under PDL it waits for the
// previous kernel (the last run's layer kernel included) before writing anything.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/moe/moe_launch.h"
#include "cuda/moe/routing_device.cuh"
#include "cuda/moe/stream_gemm.cuh"

namespace moekit::cuda::moe {

// The decode layer's scratch, in 4-byte words: the counters first (zeroed together by the plan
// kernel), then the lists, then the float32 partial rows of gemm2 ([split][T*K][H]).
struct DecodeLayout {
  int64_t slots, col_blocks, split, hidden;
  // counters: (unused word), done1[slots], done2[col_blocks]
  __host__ __device__ int64_t counters() const { return 1 + slots + col_blocks; }
  __host__ __device__ int64_t done1() const { return 1; }
  __host__ __device__ int64_t done2() const { return 1 + slots; }
  // header: n_active, n_rows
  __host__ __device__ int64_t header() const { return counters(); }
  __host__ __device__ int64_t expert_of_active() const { return header() + 2; }  // [slots]
  __host__ __device__ int64_t active_offsets() const { return expert_of_active() + slots; }  // [slots + 1]
  __host__ __device__ int64_t slot_of_row() const { return active_offsets() + slots + 1; }  // [slots]
  __host__ __device__ int64_t row_of_slot() const { return slot_of_row() + slots; }  // [slots], -1: not local
  __host__ __device__ int64_t partial() const { return (row_of_slot() + slots + 3) / 4 * 4; }  // 16-byte aligned
  __host__ __device__ int64_t words() const { return partial() + split * slots * hidden; }
};

__host__ __device__ inline DecodeLayout decode_layout(int64_t tokens, int top_k, int64_t hidden, int split) {
  return {tokens * top_k, (hidden + 63) / 64, split, hidden};
}

struct DecodeScratch {
  int* counters;  // counter_words ints, zeroed by the plan kernel
  int* done1;
  int* done2;
  int* n_active;
  int* n_rows;
  int* expert_of_active;
  int* active_offsets;
  int* slot_of_row;
  int* row_of_slot;
  float* partial;
  int64_t counter_words;

  __host__ __device__ static DecodeScratch carve(void* base, const DecodeLayout& l) {
    int* w = static_cast<int*>(base);
    return {w, w + l.done1(), w + l.done2(), w + l.header(), w + l.header() + 1, w + l.expert_of_active(), w + l.active_offsets(),
            w + l.slot_of_row(), w + l.row_of_slot(), reinterpret_cast<float*>(w + l.partial()), l.counters()};
  }
};

__device__ __forceinline__ int load_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Every thread's global writes so far visible device-wide, then one arrival on `counter`; returns
// the count before it (to thread 0 only; other threads get -1).
__device__ __forceinline__ int block_arrive(int* counter) {
  __threadfence();
  __syncthreads();
  return threadIdx.x == 0 ? atomicAdd(counter, 1) : -1;
}

template <typename T, class S>
__global__ void __launch_bounds__(S::kThreads, 2)
    decode_layer_kernel(DecodeLayerArgs a, DecodeScratch s, int64_t n1_tiles, int64_t n2_tiles, int64_t items1) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ int last_s;
  constexpr int NT = S::NT, NB = S::NB, BW = S::BW, BK = S::BK;
  pdl_enter();
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t item = blockIdx.x;
  const int n_active = *s.n_active;
  const int K = a.route.top_k;
  const int64_t H = a.hidden_size, I = a.inter, N1 = a.gated ? 2 * I : I;
  float acc[NB][4];

  if (item < items1) {  // ---- gemm1 + activation
    const int ai = static_cast<int>(item / n1_tiles);
    const int64_t tile_n = item % n1_tiles;
    // Loaded together with n_active (one round trip): past the active experts they are unused.
    const int e = s.expert_of_active[ai];
    const int begin = s.active_offsets[ai], end = s.active_offsets[ai + 1];
    if (ai >= n_active) return;
    GemmArgs g;
    g.n = N1;
    g.k = H;
    g.bias = a.w13_bias;
    g.bias_type = a.w13_bias_type;
    g.out = a.act;
    g.activation = a.activation;
    g.gated = a.gated;
    g.interleaved = a.interleaved;
    g.alpha = a.alpha;
    g.limit = a.limit;
    const StreamRows w_row{tile_n * (a.gated ? BW / 2 : BW), N1, I, a.gated, a.interleaved};
    const T* W = static_cast<const T*>(a.w13) + static_cast<int64_t>(e) * N1 * H;
    const T* X = static_cast<const T*>(a.hidden);
    // A token reaches an expert once, so the rows fit one tile; PreRouted ids may repeat an expert
    // within a token, and then the rows are taken NT at a time.
    for (int row0 = begin; row0 < end; row0 += NT) {
      const int rows = min(NT, end - row0);
      StreamSources<T, S> src(W, H, w_row);
      stream_mainloop<T, S>(smem, src, W, H, 0, (H + BK - 1) / BK, acc, [&] {
        src.set_rows(rows, [&](int r) { return X + static_cast<int64_t>(s.slot_of_row[row0 + r] / K) * H; });
      });
      stream_epilogue<T, S, Epilogue::kActivation>(g, acc, e, row0, row0 + rows, w_row);
      __syncthreads();  // the pipeline's shared memory is reused by the next rows
    }
    block_arrive(s.done1 + ai);
    return;
  }

  // ---- gemm2 (one K rank of 64 output columns) and the combine
  const int split = static_cast<int>(a.split);
  const int64_t j = item - items1;
  const int ai = static_cast<int>(j / (n2_tiles * split));
  const int64_t tile_n = (j / split) % n2_tiles;
  const int rank = static_cast<int>(j % split);
  const int64_t n0 = tile_n * BW;
  const int64_t out_rows = a.no_combine ? a.route.tokens * K : a.route.tokens;
  T* out = static_cast<T*>(a.out);
  const int e = s.expert_of_active[ai];
  const int begin = s.active_offsets[ai], end = s.active_offsets[ai + 1];
  if (ai >= n_active) {
    // No local expert was hit at all: the output is zeros (one CTA per column block writes them).
    if (n_active == 0 && ai == 0 && rank == 0)
      for (int64_t idx = tid; idx < out_rows * BW; idx += blockDim.x)
        if (n0 + idx % BW < H) out[(idx / BW) * H + n0 + idx % BW] = detail::from_float<T>(0.0f);
    return;
  }
  const int64_t k_tiles = (I + BK - 1) / BK, per_rank = (k_tiles + split - 1) / split;
  const int64_t kt_begin = rank * per_rank;
  const int64_t count = min(k_tiles, kt_begin + per_rank) - kt_begin;
  const int64_t slots = a.route.tokens * K;
  GemmArgs g;
  g.n = H;
  g.out_f32 = s.partial + rank * slots * H;
  const StreamRows w_row{n0, H, H / 2, false, false};
  const T* W = static_cast<const T*>(a.w2) + static_cast<int64_t>(e) * H * I;
  const T* X = static_cast<const T*>(a.act);
  for (int row0 = begin; row0 < end; row0 += NT) {
    const int rows = min(NT, end - row0);
    StreamSources<T, S> src(W, I, w_row);
    stream_mainloop<T, S>(smem, src, W, I, kt_begin, count, acc, [&] {
      // The weights are on their way; the rows need every gemm1 tile of this expert.
      if (row0 == begin && tid == 0)
        while (load_acquire(s.done1 + ai) < n1_tiles) __nanosleep(32);
      __syncthreads();
      src.set_rows(rows, [&](int r) { return X + static_cast<int64_t>(row0 + r) * I; });
    });
    stream_epilogue<T, S, Epilogue::kStoreF32>(g, acc, e, row0, row0 + rows, w_row);
    __syncthreads();
  }
  const int before = block_arrive(s.done2 + tile_n);
  if (tid == 0) last_s = before == n_active * split - 1;
  __syncthreads();
  if (!last_s) return;
  __threadfence();

  // The combine of columns [n0, n0 + 64): every partial row of this block is written.
  const float* part = s.partial;
  for (int64_t idx = tid; idx < out_rows * BW; idx += blockDim.x) {
    const int64_t o = idx / BW, n = n0 + idx % BW;
    if (n >= H) continue;
    float sum = 0.0f;
    const int64_t first = a.no_combine ? o : o * K, last = a.no_combine ? o + 1 : o * K + K;
    for (int64_t slot = first; slot < last; ++slot) {
      const int r = s.row_of_slot[slot];
      if (r < 0) continue;
      float v = __ldcg(part + r * H + n);
      for (int q = 1; q < split; ++q) v += __ldcg(part + (q * slots + r) * H + n);
      if (a.w2_bias) {
        const int le = local_expert_of(a.topk_ids[slot], a.route.experts, a.expert_map, a.local_begin, a.local_experts);
        v += load_bias(a.w2_bias, a.w2_bias_type, static_cast<int64_t>(le) * H + n);
      }
      sum = fmaf(a.scale * a.topk_weights[slot], v, sum);
    }
    out[o * H + n] = detail::from_float<T>(sum);
  }
}

}  // namespace moekit::cuda::moe
