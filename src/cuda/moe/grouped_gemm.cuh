// The grouped GEMM of both expert projections on tensor cores (mma.sync m16n8k16, f16/bf16 in,
// f32 accumulators), sm_80 and later. One CTA computes a BM x BN tile of one expert:
//
//   C[rows of expert e, n] = A[rows, :] . B[e][n, :]      (A row-major [R, K]; B [E, N, K], "TN")
//
// Tiles are found on the device from expert_offsets (no host synchronization): the CTA loads the
// offsets into shared memory, and warp 0 scans ceil(rows_e / BM) to find its expert and first row.
// The grid is sized by the most tiles R_max rows can make; CTAs without a tile return at once.
// Tiles are numbered in groups of kGroupM M-tiles, N-tile-major inside a group, so that the CTAs
// resident together share both their A rows and their B columns in L2.
//
// A and B stream through a kStages-deep cp.async pipeline into padded shared memory (rows of BK + 8
// elements: ldmatrix reads 8 rows 144 bytes apart, which fall in distinct banks). The epilogue is a
// template parameter (moe_launch.h's Epilogue): f32 store, gated/plain activation (gemm1 + act),
// atomic weighted combine or scaled store (gemm2 + finalize).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/common/device_utils.cuh"
#include "cuda/moe/activation.cuh"
#include "cuda/moe/expert_bias.cuh"
#include "cuda/moe/moe_launch.h"
#include "cuda/moe/pdl.cuh"

namespace moekit::cuda::moe {

template <int BM_, int BN_, int BK_, int WarpsM_, int WarpsN_, int Stages_>
struct TileShape {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, kWarpsM = WarpsM_, kWarpsN = WarpsN_, kStages = Stages_;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int WM = BM / kWarpsM, WN = BN / kWarpsN;
  static constexpr int MI = WM / 16, NI = WN / 8;
  static constexpr int LDS = BK + 8;  // padded shared-memory row, elements
  static constexpr int kGroupM = 8;
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "warp tiles of whole m16 x n16 x k16 blocks");
  static constexpr size_t kPipelineBytes = static_cast<size_t>(kStages) * (BM_ + BN_) * (BK_ + 8) * 2;
  static size_t smem_bytes(int experts) { return kPipelineBytes + (static_cast<size_t>(experts) + 1) * 8; }
};

using TileM16N64 = TileShape<16, 64, 64, 1, 4, 4>;  // 8 stages measured slower (2 CTAs per SM instead of 4)
using TileM32N128 = TileShape<32, 128, 64, 1, 4, 4>;
using TileM64N128 = TileShape<64, 128, 64, 2, 2, 4>;
using TileM128N128 = TileShape<128, 128, 64, 2, 4, 3>;
using TileM128N256 = TileShape<128, 256, 64, 2, 4, 3>;  // 64 x 64 warp tiles: the most reuse per load

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}


// The tile of this CTA: expert, first row and end row; expert -1 when the CTA has none.
struct TileWork {
  int expert;
  int64_t row0;
  int64_t row_end;
};

template <int BM>
__device__ __forceinline__ void find_tile(const int64_t* offs, int experts, int64_t tile, TileWork& w, int lane) {
  int64_t running = 0;
  for (int base = 0; base < experts; base += 32) {
    const int e = base + lane;
    const int64_t cnt = e < experts ? (offs[e + 1] - offs[e] + BM - 1) / BM : 0;
    int64_t incl = cnt;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const int64_t v = __shfl_up_sync(0xFFFFFFFFu, incl, off);
      if (lane >= off) incl += v;
    }
    const int64_t excl = incl - cnt;
    const bool own = cnt > 0 && running + excl <= tile && tile < running + incl;
    if (own) {
      w.expert = e;
      w.row0 = offs[e] + (tile - running - excl) * BM;
      w.row_end = offs[e + 1];
    }
    if (__ballot_sync(0xFFFFFFFFu, own) != 0) return;
    running += __shfl_sync(0xFFFFFFFFu, incl, 31);
  }
}

// The CTA's tile, block-wide: expert_offsets into shared `offs` ([E_local + 1]), then warp 0 scans
// it; every thread gets the answer (expert -1: no tile). `work` is the block's shared slot.
// The weight row of gated output i's gate (up = false) or up (up = true) half, in either gate/up
// layout of W13: interleaved (gate i, up i adjacent) or concatenated (all gate rows, then all up).
__device__ __forceinline__ int64_t gate_up_row(int64_t i, bool up, int64_t inter, bool interleaved) {
  if (interleaved) return 2 * i + (up ? 1 : 0);
  return up ? inter + i : i;
}

template <int BM>
__device__ __forceinline__ TileWork block_find_tile(const GemmArgs& a, int64_t* offs, TileWork& work, int64_t tile_m) {
  const int tid = static_cast<int>(threadIdx.x);
  const int E = a.local_experts;
  for (int i = tid; i <= E; i += blockDim.x) offs[i] = a.expert_offsets[i];
  if (tid == 0) work.expert = -1;
  __syncthreads();
  if (tid < 32) find_tile<BM>(offs, E, tile_m, work, tid);
  __syncthreads();
  return work;
}

template <typename T, class S, Epilogue kEpi>
__global__ void __launch_bounds__(S::kThreads) grouped_gemm_kernel(GemmArgs a, int64_t m_tiles, int64_t n_tiles) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int BM = S::BM, BN = S::BN, BK = S::BK, LDS = S::LDS, kStages = S::kStages;
  T* As = reinterpret_cast<T*>(smem);
  T* Bs = As + kStages * BM * LDS;
  int64_t* offs = reinterpret_cast<int64_t*>(smem + S::kPipelineBytes);
  __shared__ TileWork work;
  pdl_enter();

  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  // Tile numbering: groups of kGroupM M-tiles, N-major inside the group.
  const int64_t linear = blockIdx.x;
  const int64_t group_tiles = static_cast<int64_t>(S::kGroupM) * n_tiles;
  const int64_t group = linear / group_tiles, in_group = linear % group_tiles;
  const int64_t group_m = min(static_cast<int64_t>(S::kGroupM), m_tiles - group * S::kGroupM);
  const int64_t tile_m = group * S::kGroupM + in_group % group_m;
  const int64_t tile_n = in_group / group_m;

  const TileWork tile = block_find_tile<BM>(a, offs, work, tile_m);
  const int e = tile.expert;
  if (e < 0) return;
  const int64_t row0 = tile.row0, row_end = tile.row_end;

  const int64_t K = a.k, N = a.n;
  // gemm1 + gated activation: the tile holds BN/2 outputs, its B rows pair gate and up (row 2j is
  // gate i0 + j, row 2j + 1 is up i0 + j) whatever the weights' layout.
  constexpr bool kPaired = kEpi == Epilogue::kActivation;
  const bool paired = kPaired && a.gated;
  const int64_t inter = N / 2;
  const int64_t n0 = tile_n * (paired ? BN / 2 : BN);
  auto b_row = [&](int j) -> int64_t {  // weight row of tile row j, or -1 past the end
    if (!paired) return n0 + j < N ? n0 + j : -1;
    const int64_t i = n0 + j / 2;
    return i < inter ? gate_up_row(i, (j & 1) != 0, inter, a.interleaved) : -1;
  };

  const T* A = static_cast<const T*>(a.a);
  const T* B = static_cast<const T*>(a.b) + static_cast<int64_t>(e) * N * K;
  constexpr int kChunks = BK / 8;  // 16-byte chunks per tile row
  auto load_stage = [&](int stage, int64_t k0) {
    T* as = As + stage * BM * LDS;
    T* bs = Bs + stage * BN * LDS;
    for (int c = tid; c < BM * kChunks; c += S::kThreads) {
      const int r = c / kChunks, kc = (c % kChunks) * 8;
      const int64_t row = row0 + r;
      const bool ok = row < row_end && k0 + kc < K;
      detail::cp_async_16(as + r * LDS + kc, ok ? A + row * K + k0 + kc : A, ok);
    }
    for (int c = tid; c < BN * kChunks; c += S::kThreads) {
      const int r = c / kChunks, kc = (c % kChunks) * 8;
      const int64_t br = b_row(r);
      const bool ok = br >= 0 && k0 + kc < K;
      detail::cp_async_16(bs + r * LDS + kc, ok ? B + br * K + k0 + kc : B, ok);
    }
  };

  float acc[S::MI][S::NI][4];
#pragma unroll
  for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < S::NI; ++ni)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[mi][ni][q] = 0.0f;

  const int wm = warp / S::kWarpsN, wn = warp % S::kWarpsN;
  const int64_t k_tiles = (K + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s * BK);
    detail::cp_async_commit();
  }
  for (int64_t kt = 0; kt < k_tiles; ++kt) {
    detail::cp_async_wait<kStages - 2>();
    __syncthreads();
    const int64_t next = kt + kStages - 1;
    if (next < k_tiles) load_stage(static_cast<int>(next % kStages), next * BK);
    detail::cp_async_commit();

    const T* as = As + (kt % kStages) * BM * LDS;
    const T* bs = Bs + (kt % kStages) * BN * LDS;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      uint32_t af[S::MI][4];
      uint32_t bf[S::NI][2];
#pragma unroll
      for (int mi = 0; mi < S::MI; ++mi)
        ldmatrix_x4(af[mi], as + (wm * S::WM + mi * 16 + (lane % 16)) * LDS + kk * 16 + (lane / 16) * 8);
#pragma unroll
      for (int nj = 0; nj < S::NI / 2; ++nj) {
        uint32_t r[4];
        ldmatrix_x4(r, bs + (wn * S::WN + nj * 16 + (lane % 8) + (lane / 16) * 8) * LDS + kk * 16 + ((lane / 8) % 2) * 8);
        bf[2 * nj][0] = r[0];
        bf[2 * nj][1] = r[1];
        bf[2 * nj + 1][0] = r[2];
        bf[2 * nj + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < S::NI; ++ni) detail::mma_16816<T>(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
    }
  }
  detail::cp_async_wait<0>();

  // ---- epilogue: lane (g, t) holds rows g and g + 8, columns 2t and 2t + 1 of each m16n8 tile.
  const int g = lane / 4, t = lane % 4;
  const int64_t bias_base = static_cast<int64_t>(e) * N;
#pragma unroll
  for (int mi = 0; mi < S::MI; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = row0 + wm * S::WM + mi * 16 + g + h * 8;
      if (row >= row_end) continue;
      float factor = 1.0f;
      int64_t dest = 0;
      if constexpr (kEpi == Epilogue::kAtomicAdd || kEpi == Epilogue::kStore) {
        factor = a.scale * (a.row_weight ? a.row_weight[row] : 1.0f);
        dest = a.row_dest[row];
      }
#pragma unroll
      for (int ni = 0; ni < S::NI; ++ni) {
        const int col = wn * S::WN + ni * 8 + 2 * t;  // column inside the tile
        float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];
        if (kPaired && paired) {
          const int64_t gate_row = b_row(col);
          if (gate_row < 0) continue;
          if (a.bias) {
            v0 += load_bias(a.bias, a.bias_type, bias_base + gate_row);
            v1 += load_bias(a.bias, a.bias_type, bias_base + b_row(col + 1));
          }
          const int64_t i = n0 + col / 2;
          static_cast<T*>(a.out)[row * inter + i] = detail::from_float<T>(gated_act(a.activation, v0, v1, a.alpha, a.limit));
          continue;
        }
        const int64_t n = n0 + col;
        if (n >= N) continue;
        if (a.bias) {
          v0 += load_bias(a.bias, a.bias_type, bias_base + n);
          v1 += load_bias(a.bias, a.bias_type, bias_base + n + 1);
        }
        if constexpr (kEpi == Epilogue::kStoreF32) {
          *reinterpret_cast<float2*>(a.out_f32 + row * N + n) = make_float2(v0, v1);
        } else if constexpr (kEpi == Epilogue::kActivation) {
          *reinterpret_cast<uint32_t*>(static_cast<T*>(a.out) + row * N + n) =
              detail::pack2<T>(plain_act(a.activation, v0), plain_act(a.activation, v1));
        } else if constexpr (kEpi == Epilogue::kAtomicAdd) {
          atomicAdd(a.accumulator + dest * N + n, factor * v0);
          atomicAdd(a.accumulator + dest * N + n + 1, factor * v1);
        } else {
          *reinterpret_cast<uint32_t*>(static_cast<T*>(a.out) + dest * N + n) = detail::pack2<T>(factor * v0, factor * v1);
        }
      }
    }
  }
}

// Host side: grid size and launch of one instantiation.
template <typename T, class S, Epilogue kEpi>
Status launch_gemm_instance(const GemmArgs& a, void* stream);

}  // namespace moekit::cuda::moe
