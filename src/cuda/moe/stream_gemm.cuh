// The weight-streaming grouped GEMM for few rows per expert (decode): the same product as
// grouped_gemm.cuh, computed transposed ("swap AB") so that the weights fill the tensor core's
// 16-row side and the few routed rows its 8-column side:
//
//   C^T[n, rows of expert e] = B[e][n, :] . A[rows, :]^T      (mma.sync m16n8k16, f32 accumulators)
//
// A CTA owns 64 weight rows (4 warps x 16) and up to NT routed rows of one expert, so a token is
// never padded to 64 rows; the weights stream once per NT rows through a 4- or 5-stage cp.async
// pipeline (two CTAs per SM, 96-128 KB of weights in flight per SM), one tile per CTA. When the experts' tiles alone
// cannot cover the SMs, the K range is split over a thread-block cluster of up to 8 CTAs (sm_90):
// each CTA streams its slice, then rank 0 sums the partial tiles through distributed shared memory
// in rank order (a fixed order: bitwise-deterministic) and runs the epilogue. Without clusters
// (sm_80) the split is 1. A persistent variant (resident CTAs walking the tiles with one pipeline)
// measured up to 2x slower on the H200 and was dropped (docs/perf-notes.md).
//
// Epilogues as in grouped_gemm.cuh. For the gated activation the 16 weight rows of a warp are 8 gate
// rows then the 8 matching up rows, so one lane holds both halves of an output in its accumulators.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include <cooperative_groups.h>
#endif

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda/common/device_utils.cuh"
#include "cuda/moe/activation.cuh"
#include "cuda/moe/grouped_gemm.cuh"
#include "cuda/moe/moe_launch.h"
#include "cuda/moe/pdl.cuh"

namespace moekit::cuda::moe {

template <int NT_, int MB_ = 1, bool kSkipEmpty_ = false, int BW_ = 64, int BK_ = 128>
struct StreamShape {
  static constexpr int NT = NT_;  // routed rows per CTA: the mma's n side, in blocks of 8
  static constexpr int NB = NT / 8;
  // Weight rows per CTA: 64 (4 warps, two CTAs per SM), or 128 (8 warps, one CTA per SM): every CTA
  // reads its routed rows from L2 once per stage, so 128 halves that traffic per weight byte.
  static constexpr int BW = BW_;
  static constexpr int kWarps = BW / 16;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int BK = BK_;  // 2 * BK contiguous bytes of each weight row per stage
  static constexpr int kCtasPerSm = BW == 64 && BK == 128 ? 2 : 1;
  // Weight rows per warp, in m16 blocks. With 1 the four warps each take 16 weight rows and every
  // k step of a stage, so every warp reads all NT routed rows from shared memory (4x per stage).
  // With 2 a warp takes 32 weight rows on the same routed-row fragments and half of each stage's k
  // steps (two warps along the weight rows, two along k, their sums added once per tile): the
  // routed rows are read twice per stage, not four times.
  static constexpr int MB = MB_;
  static constexpr int kRowWarps = BW / (16 * MB);      // warps along the weight rows
  static constexpr int kKWarps = kWarps / kRowWarps;   // warps along each stage's k steps
  static constexpr int kKSteps = BK / 16 / kKWarps;     // k16 steps per warp and stage
  // Skip the mma and the routed-row reads of n8 blocks past the tile's rows (a tile of NT rows often
  // holds fewer: Mixtral T=64 puts about 16 rows on each expert's 32-row tile).
  static constexpr bool kSkipEmpty = kSkipEmpty_;
  // Two CTAs per SM is the point of the pipeline depth: one's fill and epilogue overlap the other's
  // stream. Five stages of 64 + 32 padded rows (130.6 KB) let only one NT=32 CTA on an SM (228 KB),
  // so NT=32 keeps four (104.4 KB); NT=8 and 16 keep five (97.9 and 108.8 KB).
  static constexpr size_t kStageBytes = static_cast<size_t>(BW + NT) * (BK + 8) * 2;
  static constexpr int kStages = kCtasPerSm == 2 ? (NT <= 16 ? 5 : 4) : static_cast<int>(std::min<size_t>(5, (222 * 1024) / kStageBytes));
  static constexpr int LDS = BK + 8;  // padded rows: ldmatrix's 8 rows fall in distinct banks
  static constexpr int kMaxSplit = 8;  // the portable cluster size
  static_assert(NT % 8 == 0 && NT <= 32, "8, 16 or 32 routed rows per CTA");
  static_assert(MB == 1 || MB == 2, "16 or 32 weight rows per warp");
  static constexpr size_t kPipelineBytes = static_cast<size_t>(kStages) * (BW + NT) * LDS * 2;
  // The k warps' partial sums, added through the (drained) pipeline's shared memory.
  static_assert(kKWarps == 1 || static_cast<size_t>(kRowWarps) * MB * NB * 4 * 32 * 4 <= kPipelineBytes, "k-warp sums fit");
  // Two CTAs' pipelines, their expert offsets (smem_bytes, up to 512 experts), the kernel's static
  // shared memory (TileWork) and the 1 KB the hardware reserves per block, within an sm_90 SM.
  static constexpr size_t kOffsetsBytesAt512Experts = (512 + 1) * 8;
  static constexpr size_t kStaticAndReservedBytes = 64 + 1024;
  static constexpr size_t kSmemPerSm = 228 * 1024;
  static_assert(BW == 64 || BW == 128, "64 or 128 weight rows per CTA");
  static_assert(kCtasPerSm * (kPipelineBytes + kOffsetsBytesAt512Experts + kStaticAndReservedBytes) <= kSmemPerSm, "the CTAs per SM fit");
  static size_t smem_bytes(int experts) { return kPipelineBytes + (static_cast<size_t>(experts) + 1) * 8; }
  // A thread's accumulators: m16 block, n8 block, the mma's four floats.
  using Acc = float[MB][NB][4];
  // The warp's place: weight-row group (its m16 blocks are wr * MB ..) and k group.
  __device__ static int warp_rows(int warp) { return warp % kRowWarps; }
  __device__ static int warp_k(int warp) { return warp / kRowWarps; }
};

__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
}

// The weight row of tile row j (-1 past the end). Paired (gemm1 + gated activation): warp w's rows
// 0-7 are gate i, rows 8-15 up i, for i = n0 + 8w + (j % 8); the tile covers BW/2 outputs.
struct StreamRows {
  int64_t n0, n, inter;
  bool paired, interleaved;
  __device__ __forceinline__ int64_t operator()(int j) const {
    if (!paired) return n0 + j < n ? n0 + j : -1;
    const int r = j % 16;
    const int64_t i = n0 + (j / 16) * 8 + (r % 8);
    return i < inter ? gate_up_row(i, r >= 8, inter, interleaved) : -1;
  }
};

// Where each thread's 16-byte chunks of one tile come from: resolved once per tile, since a thread
// copies the same (row, chunk) at every stage, only k advances. nullptr: a row past the end (zeros).
template <typename T, class S>
struct StreamSources {
  static constexpr int kChunks = S::BK / 8;  // 16-byte chunks per row and stage
  static constexpr int kWLoads = S::BW * kChunks / S::kThreads;
  static constexpr int kXLoads = (S::NT * kChunks + S::kThreads - 1) / S::kThreads;
  const T* w[kWLoads];
  const T* x[kXLoads];
  // The weight row this thread asks L2 for ahead of the pipeline (threads < BW; nullptr: none), and
  // how many stages past the pipeline's deepest (0: no prefetch).
  const T* prefetch_row = nullptr;
  int prefetch_stages = 0;
  int prefetch_policy = 0;

  // Weight rows from `rows` of expert matrix W ([N, K] row-major).
  __device__ __forceinline__ StreamSources(const T* W, int64_t K, const StreamRows& rows) {
    const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
    for (int l = 0; l < kWLoads; ++l) {
      const int c = tid + l * S::kThreads;
      const int64_t wr = rows(c / kChunks);
      w[l] = wr >= 0 ? W + wr * K + (c % kChunks) * 8 : nullptr;
    }
    const int64_t pr = tid < S::BW ? rows(tid) : -1;
    prefetch_row = pr >= 0 ? W + pr * K : nullptr;
  }
  // Routed row r (< `count`) from `x_row(r)`, a pointer to that row's first element (K elements).
  // Separate, so that a kernel can issue its weight loads before it looks its rows up.
  template <class XRow>
  __device__ __forceinline__ void set_rows(int count, XRow x_row) {
    const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
    for (int l = 0; l < kXLoads; ++l) {
      const int c = tid + l * S::kThreads;
      const int r = c / kChunks;
      x[l] = r < S::NT && r < count ? x_row(r) + (c % kChunks) * 8 : nullptr;
    }
  }
};

// f(integral_constant<int, L>) for L = min(live, NB), 1 <= live: a run-time block count made a
// compile-time one (one branch per stage, not one per block and k step).
template <int NB, class F>
__device__ __forceinline__ void with_live(int live, F&& f) {
  if constexpr (NB == 1) {
    f(std::integral_constant<int, 1>{});
  } else {
    if (live >= NB) {
      f(std::integral_constant<int, NB>{});
    } else {
      with_live<NB - 1>(live, f);
    }
  }
}

// One stage's mma for this warp: its MB m16 blocks of weight rows (at `ws`) against the first LIVE
// n8 blocks of routed rows (at `xs`), over its k group's k steps.
template <typename T, class S, int LIVE>
__device__ __forceinline__ void stream_stage_mma(const T* ws, const T* xs, typename S::Acc& acc, int lane, int wk) {
  constexpr int MB = S::MB, LDS = S::LDS;
#pragma unroll
  for (int ks = 0; ks < S::kKSteps; ++ks) {
    const int kk = wk * S::kKSteps + ks;
    uint32_t af[MB][4];
#pragma unroll
    for (int m = 0; m < MB; ++m) ldmatrix_x4(af[m], ws + (m * 16 + lane % 16) * LDS + kk * 16 + (lane / 16) * 8);
    if constexpr (MB == 1) {
#pragma unroll
      for (int nb = 0; nb < LIVE; ++nb) {
        uint32_t bf[2];
        ldmatrix_x2(bf, xs + (nb * 8 + lane % 8) * LDS + kk * 16 + ((lane / 8) % 2) * 8);
        detail::mma_16816<T>(acc[0][nb], af[0], bf[0], bf[1]);
      }
    } else {
      // Two n8 blocks per ldmatrix where both are live; the routed-row fragments serve both m blocks.
#pragma unroll
      for (int nb = 0; nb < LIVE; nb += 2) {
        uint32_t bf[4];
        if constexpr (LIVE % 2 == 0) {
          ldmatrix_x4(bf, xs + (nb * 8 + lane % 8 + (lane / 16) * 8) * LDS + kk * 16 + ((lane / 8) % 2) * 8);
        } else if (nb + 1 < LIVE) {
          ldmatrix_x4(bf, xs + (nb * 8 + lane % 8 + (lane / 16) * 8) * LDS + kk * 16 + ((lane / 8) % 2) * 8);
        } else {
          ldmatrix_x2(reinterpret_cast<uint32_t(&)[2]>(bf), xs + (nb * 8 + lane % 8) * LDS + kk * 16 + ((lane / 8) % 2) * 8);
        }
#pragma unroll
        for (int m = 0; m < MB; ++m) {
          detail::mma_16816<T>(acc[m][nb], af[m], bf[0], bf[1]);
          if (nb + 1 < LIVE) detail::mma_16816<T>(acc[m][nb + 1], af[m], bf[2], bf[3]);
        }
      }
    }
  }
}

// The k loop of one tile over k tiles [kt_begin, kt_begin + count): weights and routed rows through a
// kStages-deep cp.async pipeline into `smem`, mma.sync into `acc`. The first weight stages are issued
// before `before_rows()` runs (a PDL wait, a wait for the rows' producer, src.set_rows), the rows
// after it. `any` is a valid global address for the zero-filling copies. `rows` (<= NT) is how many
// routed rows the tile holds (S::kSkipEmpty skips the n8 blocks past them). With two k warps
// (S::MB == 2) the sums are complete in the warps of k group 0 on return; the others' are partial.
template <typename T, class S, class BeforeRows>
__device__ __forceinline__ void stream_mainloop(unsigned char* smem, StreamSources<T, S>& src, const T* any, int64_t K, int64_t kt_begin,
                                                int64_t count, int rows, typename S::Acc& acc, BeforeRows before_rows) {
  constexpr int BW = S::BW, NT = S::NT, NB = S::NB, MB = S::MB, BK = S::BK, LDS = S::LDS, kStages = S::kStages;
  using Src = StreamSources<T, S>;
  constexpr int kChunks = Src::kChunks;
  T* Ws = reinterpret_cast<T*>(smem);
  T* Xs = Ws + kStages * BW * LDS;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int wr = S::warp_rows(warp), wk = S::warp_k(warp);
  const int live = S::kSkipEmpty ? (rows + 7) / 8 : NB;  // n8 blocks holding routed rows

  const uint64_t stream_policy = detail::l2_evict_first_policy();
  auto load_weights = [&](int stage, int64_t kt) {
    const int64_t k0 = kt * BK;
    T* ws = Ws + stage * BW * LDS;
#pragma unroll
    for (int l = 0; l < Src::kWLoads; ++l) {
      const int c = tid + l * S::kThreads;
      const int r = c / kChunks, kc = (c % kChunks) * 8;
      const bool ok = src.w[l] != nullptr && k0 + kc < K;
      detail::cp_async_16_stream(ws + r * LDS + kc, ok ? src.w[l] + k0 : any, ok, stream_policy);
    }
  };
  const uint64_t prefetch_policy = src.prefetch_stages > 0 ? detail::l2_policy_of(src.prefetch_policy) : stream_policy;
  // Stage kt's 256 bytes of this thread's weight row, asked of L2 ahead of its cp.async: it keeps
  // more of the weight stream in flight than the shared-memory stages alone hold.
  auto prefetch_weights = [&](int64_t kt) {
    const int64_t k0 = kt * BK;
    if (src.prefetch_row != nullptr && k0 < K)
      detail::prefetch_l2_bulk(src.prefetch_row + k0, static_cast<uint32_t>(min(static_cast<int64_t>(BK), K - k0) * sizeof(T)), prefetch_policy);
  };
  auto load_rows = [&](int stage, int64_t kt) {
    const int64_t k0 = kt * BK;
    T* xs = Xs + stage * NT * LDS;
#pragma unroll
    for (int l = 0; l < Src::kXLoads; ++l) {
      const int c = tid + l * S::kThreads;
      if (c >= NT * kChunks) continue;
      const int r = c / kChunks, kc = (c % kChunks) * 8;
      const bool ok = src.x[l] != nullptr && k0 + kc < K;
      detail::cp_async_16(xs + r * LDS + kc, ok ? src.x[l] + k0 : any, ok);
    }
  };

#pragma unroll
  for (int m = 0; m < MB; ++m)
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[m][nb][q] = 0.0f;

  // The first stages: all weights first (one group each), then the routed rows (one group each).
  // Waiting for kStages - 2 pending groups in the loop below still covers both halves of stage `it`:
  // every group committed before that stage's rows is older.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < count) load_weights(s, kt_begin + s);
    detail::cp_async_commit();
  }
  for (int s = kStages - 1; s < kStages - 1 + src.prefetch_stages && s < count; ++s) prefetch_weights(kt_begin + s);
  before_rows();
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < count) load_rows(s, kt_begin + s);
    detail::cp_async_commit();
  }
  for (int64_t it = 0; it < count; ++it) {
    detail::cp_async_wait<kStages - 2>();
    __syncthreads();
    const int64_t next = it + kStages - 1;
    if (next < count) {
      load_weights(static_cast<int>(next % kStages), kt_begin + next);
      load_rows(static_cast<int>(next % kStages), kt_begin + next);
    }
    detail::cp_async_commit();
    if (src.prefetch_stages > 0 && next + src.prefetch_stages < count) prefetch_weights(kt_begin + next + src.prefetch_stages);

    const T* ws = Ws + (it % kStages) * BW * LDS + wr * MB * 16 * LDS;
    const T* xs = Xs + (it % kStages) * NT * LDS;
    // The stage's mma over the first `live` n8 blocks, a compile-time count, so that the unrolled
    // loop keeps its fragment loads ahead of the mma (a run-time test per block serialized every
    // load and its mma: Mixtral T=64 900 against 761 us, docs/perf-notes.md step 13).
    with_live<NB>(S::kSkipEmpty ? live : NB, [&](auto live_c) { stream_stage_mma<T, S, decltype(live_c)::value>(ws, xs, acc, lane, wk); });
  }
  detail::cp_async_wait<0>();
  if constexpr (S::kKWarps > 1) {
    // The k groups' sums meet in the drained pipeline's shared memory, group 1 into group 0.
    float* part = reinterpret_cast<float*>(smem);
    __syncthreads();  // every warp is done with the last stage
    if (wk == 1)
#pragma unroll
      for (int m = 0; m < MB; ++m)
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
          for (int q = 0; q < 4; ++q) part[(((wr * MB + m) * NB + nb) * 4 + q) * 32 + lane] = acc[m][nb][q];
    __syncthreads();
    if (wk == 0)
#pragma unroll
      for (int m = 0; m < MB; ++m)
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
          for (int q = 0; q < 4; ++q) acc[m][nb][q] += part[(((wr * MB + m) * NB + nb) * 4 + q) * 32 + lane];
  }
}

// The epilogue of one tile: lane (g, t) holds, for each of its m16 blocks b, tile weight rows
// 16b + g and 16b + g + 8, and routed rows 2t and 2t + 1 of each n8 block; routed row j of the tile
// is row row0 + j of the output buffers (up to row_end). Only the warps of k group 0 hold whole sums,
// so only they store. kEpi as in moe_launch.h; `a` gives the epilogue's fields, `e` the expert (bias row).
template <typename T, class S, Epilogue kEpi>
__device__ __forceinline__ void stream_epilogue(const GemmArgs& a, const typename S::Acc& acc, int e, int64_t row0, int64_t row_end,
                                                const StreamRows& w_row) {
  constexpr int NB = S::NB, MB = S::MB;
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  if (S::warp_k(warp) != 0) return;
  const int g = lane / 4, t = lane % 4;
  const int64_t N = a.n, n0 = w_row.n0, inter = w_row.inter;
  constexpr bool kPaired = kEpi == Epilogue::kActivation;
  const int64_t bias_base = static_cast<int64_t>(e) * N;
#pragma unroll
  for (int m = 0; m < MB; ++m) {
    const int blk = S::warp_rows(warp) * MB + m;  // the tile's m16 block
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int64_t row = row0 + nb * 8 + 2 * t + c;
        if (row >= row_end) continue;
        if constexpr (kPaired) {
          if (w_row.paired) {
            const int64_t gate_row = w_row(blk * 16 + g);
            if (gate_row < 0) continue;
            float gate = acc[m][nb][c], up = acc[m][nb][2 + c];
            if (a.bias) {
              gate += load_bias(a.bias, a.bias_type, bias_base + gate_row);
              up += load_bias(a.bias, a.bias_type, bias_base + w_row(blk * 16 + g + 8));
            }
            const int64_t i = n0 + blk * 8 + g;
            static_cast<T*>(a.out)[row * inter + i] = detail::from_float<T>(gated_act(a.activation, gate, up, a.alpha, a.limit));
            continue;
          }
        }
        float factor = 1.0f;
        int64_t dest = 0;
        if constexpr (kEpi == Epilogue::kAtomicAdd || kEpi == Epilogue::kStore) {
          factor = a.scale * (a.row_weight ? a.row_weight[row] : 1.0f);
          dest = a.row_dest[row];
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t n = n0 + blk * 16 + g + h * 8;
          if (n >= N) continue;
          float v = acc[m][nb][2 * h + c];
          if (a.bias) v += load_bias(a.bias, a.bias_type, bias_base + n);
          if constexpr (kEpi == Epilogue::kStoreF32) {
            a.out_f32[row * N + n] = v;
          } else if constexpr (kEpi == Epilogue::kActivation) {
            static_cast<T*>(a.out)[row * N + n] = detail::from_float<T>(plain_act(a.activation, v));
          } else if constexpr (kEpi == Epilogue::kAtomicAdd) {
            atomicAdd(a.accumulator + dest * N + n, factor * v);
          } else {
            static_cast<T*>(a.out)[dest * N + n] = detail::from_float<T>(factor * v);
          }
        }
      }
    }
  }
}

template <typename T, class S, Epilogue kEpi>
__global__ void __launch_bounds__(S::kThreads, S::kCtasPerSm)
    stream_gemm_kernel(GemmArgs a, int64_t n_tiles, int split, int64_t k_tiles_per_split) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int NB = S::NB, MB = S::MB, BW = S::BW, BK = S::BK;
  int64_t* offs = reinterpret_cast<int64_t*>(smem + S::kPipelineBytes);
  __shared__ TileWork work;

  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  // Blocks: (tile_m, tile_n, split), split fastest so that a tile's splits form one cluster.
  const int64_t linear = blockIdx.x / split;
  const int rank = static_cast<int>(blockIdx.x % split);
  const int64_t tile_m = linear / n_tiles, tile_n = linear % n_tiles;

  // Under PDL the offsets (from the maps, two or more launches back) and the weights can be read
  // before the previous kernel's rows are: the tile search and the first weight stages overlap it.
  if (!a.weights_before_wait) pdl_enter();
  const TileWork tile = block_find_tile<S::NT>(a, offs, work, tile_m);
  const int e = tile.expert;
  if (e < 0) {  // every rank of the cluster returns here together
    if (a.weights_before_wait) pdl_enter();
    return;
  }
  const int64_t row0 = tile.row0, row_end = tile.row_end;

  const int64_t K = a.k, N = a.n;
  const bool paired = kEpi == Epilogue::kActivation && a.gated;
  const StreamRows w_row{tile_n * (paired ? BW / 2 : BW), N, N / 2, paired, a.interleaved};
  const T* X = static_cast<const T*>(a.a);
  const T* W = static_cast<const T*>(a.b) + static_cast<int64_t>(e) * N * K;
  const int rows = static_cast<int>(min(static_cast<int64_t>(S::NT), row_end - row0));
  StreamSources<T, S> src(W, K, w_row);
  src.prefetch_stages = a.prefetch_stages;
  src.prefetch_policy = a.prefetch_policy;
  src.set_rows(rows, [&](int r) { return X + (row0 + r) * K; });

  const int64_t k_tiles = (K + BK - 1) / BK;
  const int64_t kt_begin = rank * k_tiles_per_split;
  const int64_t kt_end = min(k_tiles, kt_begin + k_tiles_per_split);
  const int64_t count = kt_end > kt_begin ? kt_end - kt_begin : 0;
  typename S::Acc acc;
  stream_mainloop<T, S>(smem, src, W, K, kt_begin, count, rows, acc, [&] {
    if (a.weights_before_wait) pdl_enter();
  });

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (split > 1) {
    // Split K: every rank parks its partial tile in its own shared memory (the pipeline is drained),
    // rank 0 adds the others' in rank order, and the others wait until it has read them.
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    __syncthreads();
    // Only k group 0's warps hold whole sums (stream_mainloop); the others just keep the syncs.
    float* part = reinterpret_cast<float*>(smem);
    const int wr = S::warp_rows(warp);
    const bool whole = S::warp_k(warp) == 0;
    if (whole)
#pragma unroll
      for (int m = 0; m < MB; ++m)
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
          for (int q = 0; q < 4; ++q) part[(((wr * MB + m) * NB + nb) * 4 + q) * 32 + lane] = acc[m][nb][q];
    cluster.sync();
    if (rank == 0 && whole) {
      for (int r = 1; r < split; ++r) {
        const float* other = cluster.map_shared_rank(part, r);
#pragma unroll
        for (int m = 0; m < MB; ++m)
#pragma unroll
          for (int nb = 0; nb < NB; ++nb)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[m][nb][q] += other[(((wr * MB + m) * NB + nb) * 4 + q) * 32 + lane];
      }
    }
    cluster.sync();
    if (rank != 0) return;
  }
#endif
  stream_epilogue<T, S, kEpi>(a, acc, e, row0, row_end, w_row);
}

}  // namespace moekit::cuda::moe
