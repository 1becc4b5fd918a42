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

#include <cstdint>

#include "cuda/common/device_utils.cuh"
#include "cuda/moe/activation.cuh"
#include "cuda/moe/grouped_gemm.cuh"
#include "cuda/moe/moe_launch.h"
#include "cuda/moe/pdl.cuh"

namespace moekit::cuda::moe {

template <int NT_>
struct StreamShape {
  static constexpr int NT = NT_;  // routed rows per CTA: the mma's n side, in blocks of 8
  static constexpr int NB = NT / 8;
  static constexpr int BW = 64;   // weight rows per CTA
  static constexpr int BK = 128;  // 256 contiguous bytes of each weight row per stage
  // Two CTAs per SM is the point of the pipeline depth: one's fill and epilogue overlap the other's
  // stream. Five stages of 64 + 32 padded rows (130.6 KB) let only one NT=32 CTA on an SM (228 KB),
  // so NT=32 keeps four (104.4 KB); NT=8 and 16 keep five (97.9 and 108.8 KB).
  static constexpr int kStages = NT <= 16 ? 5 : 4;
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int LDS = BK + 8;  // padded rows: ldmatrix's 8 rows fall in distinct banks
  static constexpr int kMaxSplit = 8;  // the portable cluster size
  static_assert(NT % 8 == 0 && NT <= 32, "8, 16 or 32 routed rows per CTA");
  static constexpr size_t kPipelineBytes = static_cast<size_t>(kStages) * (BW + NT) * LDS * 2;
  // Two CTAs' pipelines, their expert offsets (smem_bytes, up to 512 experts), the kernel's static
  // shared memory (TileWork) and the 1 KB the hardware reserves per block, within an sm_90 SM.
  static constexpr size_t kOffsetsBytesAt512Experts = (512 + 1) * 8;
  static constexpr size_t kStaticAndReservedBytes = 64 + 1024;
  static constexpr size_t kSmemPerSm = 228 * 1024;
  static_assert(2 * (kPipelineBytes + kOffsetsBytesAt512Experts + kStaticAndReservedBytes) <= kSmemPerSm, "two CTAs per SM");
  static size_t smem_bytes(int experts) { return kPipelineBytes + (static_cast<size_t>(experts) + 1) * 8; }
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

  // Weight rows from `rows` of expert matrix W ([N, K] row-major).
  __device__ __forceinline__ StreamSources(const T* W, int64_t K, const StreamRows& rows) {
    const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
    for (int l = 0; l < kWLoads; ++l) {
      const int c = tid + l * S::kThreads;
      const int64_t wr = rows(c / kChunks);
      w[l] = wr >= 0 ? W + wr * K + (c % kChunks) * 8 : nullptr;
    }
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

// The k loop of one tile over k tiles [kt_begin, kt_begin + count): weights and routed rows through a
// kStages-deep cp.async pipeline into `smem`, mma.sync into `acc`. The first weight stages are issued
// before `before_rows()` runs (a PDL wait, a wait for the rows' producer, src.set_rows), the rows
// after it. `any` is a valid global address for the zero-filling copies.
template <typename T, class S, class BeforeRows>
__device__ __forceinline__ void stream_mainloop(unsigned char* smem, StreamSources<T, S>& src, const T* any, int64_t K, int64_t kt_begin,
                                                int64_t count, float (&acc)[S::NB][4], BeforeRows before_rows) {
  constexpr int BW = S::BW, NT = S::NT, NB = S::NB, BK = S::BK, LDS = S::LDS, kStages = S::kStages;
  using Src = StreamSources<T, S>;
  constexpr int kChunks = Src::kChunks;
  T* Ws = reinterpret_cast<T*>(smem);
  T* Xs = Ws + kStages * BW * LDS;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;

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
  for (int nb = 0; nb < NB; ++nb)
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[nb][q] = 0.0f;

  // The first stages: all weights first (one group each), then the routed rows (one group each).
  // Waiting for kStages - 2 pending groups in the loop below still covers both halves of stage `it`:
  // every group committed before that stage's rows is older.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < count) load_weights(s, kt_begin + s);
    detail::cp_async_commit();
  }
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

    const T* ws = Ws + (it % kStages) * BW * LDS + warp * 16 * LDS;
    const T* xs = Xs + (it % kStages) * NT * LDS;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      uint32_t af[4];
      ldmatrix_x4(af, ws + (lane % 16) * LDS + kk * 16 + (lane / 16) * 8);
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        uint32_t bf[2];
        ldmatrix_x2(bf, xs + (nb * 8 + lane % 8) * LDS + kk * 16 + ((lane / 8) % 2) * 8);
        detail::mma_16816<T>(acc[nb], af, bf[0], bf[1]);
      }
    }
  }
  detail::cp_async_wait<0>();
}

// The epilogue of one tile: lane (g, t) holds weight rows g and g + 8 of its warp, routed rows 2t and
// 2t + 1 of each n8 block; routed row j of the tile is row row0 + j of the output buffers (up to
// row_end). kEpi as in moe_launch.h; `a` gives the epilogue's fields, `e` the expert (bias row).
template <typename T, class S, Epilogue kEpi>
__device__ __forceinline__ void stream_epilogue(const GemmArgs& a, const float (&acc)[S::NB][4], int e, int64_t row0, int64_t row_end,
                                                const StreamRows& w_row) {
  constexpr int NB = S::NB;
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int g = lane / 4, t = lane % 4;
  const int64_t N = a.n, n0 = w_row.n0, inter = w_row.inter;
  constexpr bool kPaired = kEpi == Epilogue::kActivation;
  const int64_t bias_base = static_cast<int64_t>(e) * N;
#pragma unroll
  for (int nb = 0; nb < NB; ++nb) {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int64_t row = row0 + nb * 8 + 2 * t + c;
      if (row >= row_end) continue;
      if constexpr (kPaired) {
        if (w_row.paired) {
          const int64_t gate_row = w_row(warp * 16 + g);
          if (gate_row < 0) continue;
          float gate = acc[nb][c], up = acc[nb][2 + c];
          if (a.bias) {
            gate += load_bias(a.bias, a.bias_type, bias_base + gate_row);
            up += load_bias(a.bias, a.bias_type, bias_base + w_row(warp * 16 + g + 8));
          }
          const int64_t i = n0 + warp * 8 + g;
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
        const int64_t n = n0 + warp * 16 + g + h * 8;
        if (n >= N) continue;
        float v = acc[nb][2 * h + c];
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

template <typename T, class S, Epilogue kEpi>
__global__ void __launch_bounds__(S::kThreads, 2)
    stream_gemm_kernel(GemmArgs a, int64_t n_tiles, int split, int64_t k_tiles_per_split) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int NB = S::NB, BW = S::BW, BK = S::BK;
  int64_t* offs = reinterpret_cast<int64_t*>(smem + S::kPipelineBytes);
  __shared__ TileWork work;

  const int tid = static_cast<int>(threadIdx.x);
  [[maybe_unused]] const int lane = tid % 32, warp = tid / 32;  // read only by the split-K reduction, which exists for sm_90 and up
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
  src.set_rows(rows, [&](int r) { return X + (row0 + r) * K; });

  const int64_t k_tiles = (K + BK - 1) / BK;
  const int64_t kt_begin = rank * k_tiles_per_split;
  const int64_t kt_end = min(k_tiles, kt_begin + k_tiles_per_split);
  const int64_t count = kt_end > kt_begin ? kt_end - kt_begin : 0;
  float acc[NB][4];
  stream_mainloop<T, S>(smem, src, W, K, kt_begin, count, acc, [&] {
    if (a.weights_before_wait) pdl_enter();
  });

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (split > 1) {
    // Split K: every rank parks its partial tile in its own shared memory (the pipeline is drained),
    // rank 0 adds the others' in rank order, and the others wait until it has read them.
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    __syncthreads();
    float* part = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int q = 0; q < 4; ++q) part[((warp * NB + nb) * 4 + q) * 32 + lane] = acc[nb][q];
    cluster.sync();
    if (rank == 0) {
      for (int r = 1; r < split; ++r) {
        const float* other = cluster.map_shared_rank(part, r);
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
          for (int q = 0; q < 4; ++q) acc[nb][q] += other[((warp * NB + nb) * 4 + q) * 32 + lane];
      }
    }
    cluster.sync();
    if (rank != 0) return;
  }
#endif
  stream_epilogue<T, S, kEpi>(a, acc, e, row0, row_end, w_row);
}

}  // namespace moekit::cuda::moe
