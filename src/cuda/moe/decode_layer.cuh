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
  // counters: done1[slots] (gemm1 tiles done per active expert), done2[col_blocks] (gemm2 tiles
  // done per 64-column block)
  __host__ __device__ int64_t counters() const { return slots + col_blocks; }
  __host__ __device__ int64_t done1() const { return 0; }
  __host__ __device__ int64_t done2() const { return slots; }
  __host__ __device__ int64_t n_active() const { return counters(); }  // one word
  __host__ __device__ int64_t expert_of_active() const { return n_active() + 1; }  // [slots]
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
  int* done1;  // the first counter: counter_words ints from here are zeroed by the plan kernel
  int* done2;
  int* n_active;
  int* expert_of_active;
  int* active_offsets;
  int* slot_of_row;
  int* row_of_slot;
  float* partial;
  int64_t counter_words;

  __host__ __device__ static DecodeScratch carve(void* base, const DecodeLayout& l) {
    int* w = static_cast<int*>(base);
    return {w + l.done1(), w + l.done2(), w + l.n_active(), w + l.expert_of_active(), w + l.active_offsets(),
            w + l.slot_of_row(), w + l.row_of_slot(), reinterpret_cast<float*>(w + l.partial()), l.counters()};
  }
};

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
  static_assert(BK == kDecodeKTile, "the host's split rules (moe_launch.h) count k tiles of kDecodeKTile");
  const int tid = static_cast<int>(threadIdx.x);
  const int K = a.route.top_k;
  const int64_t H = a.hidden_size, I = a.inter, N1 = a.gated ? 2 * I : I;
  const int64_t slots = a.route.tokens * K;
  const int split = a.split;

  // The work item, from the block index alone: gemm1 tile (ai, 64 weight rows of W13), or gemm2 tile
  // (ai, 64 output columns, K rank). Decided before the wait (the plan kernel may still run).
  const int64_t item = blockIdx.x;
  const bool first = item < items1;
  const int64_t j = item - items1;
  const int ai = static_cast<int>(first ? item / n1_tiles : j / (n2_tiles * split));
  const int64_t tile_n = first ? item % n1_tiles : (j / split) % n2_tiles;
  const int rank = first ? 0 : static_cast<int>(j % split);
  const int64_t N = first ? N1 : H, Kd = first ? H : I;  // this GEMM's N and K
  // Only gemm2 splits K (its partial sums meet in the combine); gemm1's activation needs whole sums.
  const int64_t k_tiles = (Kd + BK - 1) / BK, per_rank = first ? k_tiles : (k_tiles + split - 1) / split;
  const int64_t kt_begin = rank * per_rank, count = min(k_tiles, kt_begin + per_rank) - kt_begin;
  const int64_t n0 = tile_n * (first && a.gated ? BW / 2 : BW);
  const StreamRows w_row{n0, N, I, first && a.gated, a.interleaved};
  const T* W_all = static_cast<const T*>(first ? a.w13 : a.w2);
  const T* X = static_cast<const T*>(first ? a.hidden : a.act);
  float acc[NB][4];

  // Pass 0 runs the k loop's code once on copies of zero bytes (K = 0: every copy is out of
  // bounds, nothing is read) while the plan kernel still runs: at decode, the first execution of
  // this code is bound by instruction fetch (measured on the H200: 7.5 us from the wait to the first
  // weight load when cold), and pass 1 then finds it in the instruction cache. Pass 1 is the tile.
#pragma unroll 1
  for (int pass = 0; pass < 2; ++pass) {
    const bool dry = pass == 0;
    if (!dry) pdl_enter();
    // Loaded in one round trip; past the active experts they are unused.
    const int n_active = dry ? 1 << 30 : *s.n_active;
    const int e = dry ? 0 : s.expert_of_active[ai];
    const int begin = dry ? 0 : s.active_offsets[ai], end = dry ? 1 : s.active_offsets[ai + 1];
    if (ai >= n_active) {
      // No local expert was hit at all: the output is zeros (one CTA per column block writes them).
      const int64_t out_rows = a.no_combine ? slots : a.route.tokens;
      T* out = static_cast<T*>(a.out);
      if (!first && n_active == 0 && ai == 0 && rank == 0)
        for (int64_t idx = tid; idx < out_rows * BW; idx += blockDim.x)
          if (n0 + idx % BW < H) out[(idx / BW) * H + n0 + idx % BW] = detail::from_float<T>(0.0f);
      return;
    }
    const T* W = W_all + static_cast<int64_t>(e) * N * Kd;
    // A token reaches an expert once, so the rows fit one tile; PreRouted ids may repeat an expert
    // within a token, and then the rows are taken NT at a time.
    for (int row0 = begin; row0 < end; row0 += NT) {
      const int rows = min(NT, end - row0);
      StreamSources<T, S> src(W, Kd, w_row);
      stream_mainloop<T, S>(smem, src, W, dry ? 0 : Kd, kt_begin, dry ? 1 : count, acc, [&] {
        // gemm2's rows need every gemm1 tile of this expert; its first weight stages are on their way.
        if (!first && !dry && row0 == begin && tid == 0)
          while (detail::load_acquire(s.done1 + ai) < n1_tiles) __nanosleep(32);
        __syncthreads();
        src.set_rows(rows, [&](int r) {
          if (dry) return X;
          return first ? X + static_cast<int64_t>(s.slot_of_row[row0 + r] / K) * H : X + static_cast<int64_t>(row0 + r) * I;
        });
      });
      __syncthreads();  // the pipeline's shared memory is reused next
      if (dry) break;
      GemmArgs g;
      g.n = N;
      if (first) {
        g.bias = a.w13_bias;
        g.bias_type = a.w13_bias_type;
        g.out = a.act;
        g.activation = a.activation;
        g.gated = a.gated;
        g.interleaved = a.interleaved;
        g.alpha = a.alpha;
        g.limit = a.limit;
        stream_epilogue<T, S, Epilogue::kActivation>(g, acc, e, row0, row0 + rows, w_row);
      } else {
        g.out_f32 = s.partial + rank * slots * H;  // no bias: the combine adds it once
        stream_epilogue<T, S, Epilogue::kStoreF32>(g, acc, e, row0, row0 + rows, w_row);
      }
    }
  }
  if (first) {
    block_arrive(s.done1 + ai);
    return;
  }
  const int before = block_arrive(s.done2 + tile_n);
  if (tid == 0) last_s = before == *s.n_active * split - 1;
  __syncthreads();
  if (!last_s) return;
  __threadfence();
  const int64_t out_rows = a.no_combine ? slots : a.route.tokens;
  T* out = static_cast<T*>(a.out);

  // The combine of columns [n0, n0 + 64): every partial row of this block is written. Each slot's
  // row, factor and bias row go to shared memory first (the pipeline is drained), and a thread loads
  // the values of 8 slots at once before it sums them in slot order: the loads overlap, the sum
  // keeps the stage pipeline's order.
  static_assert(3 * kDecodeMaxSlots * 4 <= S::kPipelineBytes, "the combine's slot tables fit in the pipeline's shared memory");
  int* slot_row = reinterpret_cast<int*>(smem);
  float* factor = reinterpret_cast<float*>(slot_row + kDecodeMaxSlots);
  int* bias_row = reinterpret_cast<int*>(factor + kDecodeMaxSlots);
  for (int64_t slot = tid; slot < slots; slot += blockDim.x) {
    slot_row[slot] = s.row_of_slot[slot];
    factor[slot] = a.scale * a.topk_weights[slot];
    bias_row[slot] = a.w2_bias ? local_expert_of(a.topk_ids[slot], a.route.experts, a.expert_map, a.local_begin, a.local_experts) : 0;
  }
  __syncthreads();
  const float* part = s.partial;
  constexpr int kBatch = 8;
  for (int64_t idx = tid; idx < out_rows * BW; idx += blockDim.x) {
    const int64_t o = idx / BW, n = n0 + idx % BW;
    if (n >= H) continue;
    float sum = 0.0f;
    const int64_t first = a.no_combine ? o : o * K, last = a.no_combine ? o + 1 : o * K + K;
    for (int64_t base = first; base < last; base += kBatch) {
      float v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int64_t slot = base + u;
        const int r = slot < last ? slot_row[slot] : -1;
        v[u] = 0.0f;
        if (r < 0) continue;
        v[u] = __ldcg(part + r * H + n);
        for (int q = 1; q < split; ++q) v[u] += __ldcg(part + (q * slots + r) * H + n);
        if (a.w2_bias) v[u] += load_bias(a.w2_bias, a.w2_bias_type, static_cast<int64_t>(bias_row[slot]) * H + n);
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
        if (base + u < last && slot_row[base + u] >= 0) sum = fmaf(factor[base + u], v[u], sum);
    }
    out[o * H + n] = detail::from_float<T>(sum);
  }
}

}  // namespace moekit::cuda::moe
