// One warp's online softmax over ROWS query rows on CUDA cores (every dtype). Used for the context
// tiles of the SIMT engine (8 rows a warp, K/V in shared memory) and for the buffers (1 row a warp,
// K/V read straight from global memory).
//
// Scores: lane l holds keys l, l + 32, ... (KPL keys) of a tile and computes their dot products
// with every row. Output: lane = kg * kCg + cg holds columns [cg * CPL, +CPL) for the keys
// j = kg (mod kKg); the key groups are summed once, in store(). The running max is uniform across
// the warp; each lane keeps its own part of the sum and of the output, which the same per-row
// factor rescales. CPL trades registers (ROWS * CPL accumulators) for wider V loads: the buffer
// warps (1 row) read 16 bytes at a time, all of a tile's loads in flight together.
#pragma once

#include <cmath>

#include "cuda/common/device_utils.cuh"

namespace moekit::cuda::detail {

template <typename T, int D, int ROWS, int KPL, int CPL>
struct SimtRows {
  static constexpr int kTile = 32 * KPL;
  static constexpr int kCpl = CPL;       // output columns per lane
  static constexpr int kCg = D / kCpl;   // column groups
  static constexpr int kKg = 32 / kCg;   // key groups
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte load
  static_assert(kCg * kKg == 32 && kCg <= 32 && D % kVec == 0, "head dim 16, 32, 64 or 128; CPL * sizeof(T) of 4, 8 or 16 bytes");

  float m[ROWS];  // running max of the scaled scores (base 2), uniform across the warp
  float l[ROWS];  // this lane's part of the running sum
  float o[ROWS][kCpl];

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      m[r] = -INFINITY;
      l[r] = 0.0f;
#pragma unroll
      for (int c = 0; c < kCpl; ++c) o[r][c] = 0.0f;
    }
  }

  // Rows [0, active) attend keys [0, nkeys) of a tile whose key j is at k + j * ld and v + j * ld
  // (only those rows are read). q_s: [ROWS][D] floats, shared; p_s: [ROWS][kTile] floats, this
  // warp's own shared scratch. Every lane of the warp calls this with the same arguments.
  __device__ __forceinline__ void tile(const float* q_s, const T* k, const T* v, int64_t ld, int nkeys, int active,
                                       float scale_log2, float* p_s, int lane) {
    if (nkeys <= 0 || active <= 0) return;
    float s[ROWS][KPL];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk) s[r][kk] = 0.0f;

#pragma unroll
    for (int c = 0; c < D; c += kVec) {
      float kf[KPL][kVec];
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk) {
        const int j = kk * 32 + lane;
        if (j < nkeys) {
          load_floats<T, kVec>(k + j * ld + c, kf[kk]);
        } else {
#pragma unroll
          for (int e = 0; e < kVec; ++e) kf[kk][e] = 0.0f;
        }
      }
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        if (r < active) {
#pragma unroll
          for (int e = 0; e < kVec; e += 4) {
            const float4 qv = *reinterpret_cast<const float4*>(q_s + r * D + c + e);  // broadcast
#pragma unroll
            for (int kk = 0; kk < KPL; ++kk) {
              s[r][kk] = fmaf(qv.x, kf[kk][e], s[r][kk]);
              s[r][kk] = fmaf(qv.y, kf[kk][e + 1], s[r][kk]);
              s[r][kk] = fmaf(qv.z, kf[kk][e + 2], s[r][kk]);
              s[r][kk] = fmaf(qv.w, kf[kk][e + 3], s[r][kk]);
            }
          }
        }
      }
    }

#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      if (r >= active) continue;
      float mx = -INFINITY;
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk) {
        s[r][kk] = kk * 32 + lane < nkeys ? s[r][kk] * scale_log2 : -INFINITY;
        mx = fmaxf(mx, s[r][kk]);
      }
      const float m_new = fmaxf(m[r], warp_max(mx));
      // With finite scores m_new is finite (nkeys > 0); the guard keeps -inf - -inf out of exp2.
      const float base = m_new == -INFINITY ? 0.0f : m_new;
      const float alpha = exp2f(m[r] - base);
      l[r] *= alpha;
#pragma unroll
      for (int c = 0; c < kCpl; ++c) o[r][c] *= alpha;
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk) {
        const float p = exp2f(s[r][kk] - base);
        l[r] += p;
        p_s[r * kTile + kk * 32 + lane] = p;
      }
      m[r] = m_new;
    }
    __syncwarp();

    const int kg = lane / kCg, cg = lane % kCg;
#pragma unroll
    for (int it = 0; it < kTile / kKg; ++it) {
      const int j = it * kKg + kg;
      if (j < nkeys) {
        float vf[kCpl];
        load_floats<T, kCpl>(v + j * ld + cg * kCpl, vf);
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
          if (r < active) {
            const float p = p_s[r * kTile + j];
#pragma unroll
            for (int c = 0; c < kCpl; ++c) o[r][c] = fmaf(p, vf[c], o[r][c]);
          }
        }
      }
    }
    __syncwarp();
  }

  // Sums the lanes' parts and writes rows [0, active): row r's max and sum to ml[r * ml_stride]
  // and [.. + 1], its unnormalized output to acc[r * acc_stride + 0 .. D). Every lane calls this.
  __device__ __forceinline__ void store(float* ml, int64_t ml_stride, float* acc, int64_t acc_stride, int active, int lane) {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const float sum = warp_sum(l[r]);
#pragma unroll
      for (int c = 0; c < kCpl; ++c)
#pragma unroll
        for (int off = kCg; off < 32; off <<= 1) o[r][c] += __shfl_xor_sync(0xFFFFFFFFu, o[r][c], off);
      if (r < active) {
        if (lane < kCg) {
#pragma unroll
          for (int c = 0; c < kCpl; ++c) acc[r * acc_stride + lane * kCpl + c] = o[r][c];
        }
        if (lane == 0) {
          ml[r * ml_stride] = m[r];
          ml[r * ml_stride + 1] = sum;
        }
      }
    }
  }
};

}  // namespace moekit::cuda::detail
