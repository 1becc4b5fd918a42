// One warp's online softmax over 16 query rows on tensor cores (mma.sync m16n8k16, f16/bf16 in,
// f32 accumulators), for the context tiles of the MMA engine. The layout follows the fragments of
// device_utils.cuh: lane (g = lane / 4, t = lane % 4) holds rows g and g + 8 of S = Q K^T and of
// O, columns 2t and 2t + 1 of every 8-wide tile. P goes from the S accumulators straight into the
// A operand of P V (the two layouts coincide), rounded to T.
#pragma once

#include <cmath>

#include "cuda/common/device_utils.cuh"

namespace moekit::cuda::detail {

template <typename T, int D, int kTile>
struct MmaRows {
  static_assert(D % 16 == 0 && kTile % 16 == 0, "tile shapes");
  static constexpr int kKSteps = D / 16;   // k-steps of S = Q K^T
  static constexpr int kNTiles = kTile / 8;  // 8-key column tiles of S
  static constexpr int kDTiles = D / 8;    // 8-column tiles of O

  uint32_t qf[kKSteps][4];  // Q as A fragments, loaded once
  float o[kDTiles][4];
  float m[2];  // running max (base 2) of rows g and g + 8, uniform across the quad
  float l[2];  // this lane's part of their sums

  // q_lo / q_hi: rows g and g + 8 of Q (D elements each), or null for rows past the end (zeros).
  __device__ __forceinline__ void init(const T* q_lo, const T* q_hi, int t) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      const int c = ks * 16 + 2 * t;
      qf[ks][0] = q_lo ? *reinterpret_cast<const uint32_t*>(q_lo + c) : 0u;
      qf[ks][1] = q_hi ? *reinterpret_cast<const uint32_t*>(q_hi + c) : 0u;
      qf[ks][2] = q_lo ? *reinterpret_cast<const uint32_t*>(q_lo + c + 8) : 0u;
      qf[ks][3] = q_hi ? *reinterpret_cast<const uint32_t*>(q_hi + c + 8) : 0u;
    }
#pragma unroll
    for (int dn = 0; dn < kDTiles; ++dn)
#pragma unroll
      for (int i = 0; i < 4; ++i) o[dn][i] = 0.0f;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.0f;
  }

  // Attends keys [0, nkeys) of a shared-memory tile, key j at ks + j * kLd (vs likewise). Rows of
  // the tile at and past nkeys must hold finite values (the loader zero-fills them).
  template <int kLd>
  __device__ __forceinline__ void tile(const T* ks, const T* vs, int nkeys, float scale_log2, int g, int t) {
    float s[kNTiles][4];
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) s[nt][i] = 0.0f;
      const T* krow = ks + (nt * 8 + g) * kLd + 2 * t;
#pragma unroll
      for (int kk = 0; kk < kKSteps; ++kk) {
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(krow + kk * 16);
        const uint32_t b1 = *reinterpret_cast<const uint32_t*>(krow + kk * 16 + 8);
        mma_16816<T>(s[nt], qf[kk], b0, b1);
      }
    }

    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int key = nt * 8 + 2 * t + (i & 1);
        s[nt][i] = key < nkeys ? s[nt][i] * scale_log2 : -INFINITY;
        mx[i >> 1] = fmaxf(mx[i >> 1], s[nt][i]);
      }
    }
    float base[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xFFFFFFFFu, mx[h], 1));
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xFFFFFFFFu, mx[h], 2));
      const float m_new = fmaxf(m[h], mx[h]);
      base[h] = m_new == -INFINITY ? 0.0f : m_new;
      const float alpha = exp2f(m[h] - base[h]);
      l[h] *= alpha;
#pragma unroll
      for (int dn = 0; dn < kDTiles; ++dn) {
        o[dn][2 * h] *= alpha;
        o[dn][2 * h + 1] *= alpha;
      }
      m[h] = m_new;
    }
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        s[nt][i] = exp2f(s[nt][i] - base[i >> 1]);
        l[i >> 1] += s[nt][i];
      }
    }

    // O += P V, 16 keys per k-step: S column tiles 2kk and 2kk + 1 form the A fragment.
#pragma unroll
    for (int kk = 0; kk < kTile / 16; ++kk) {
      const uint32_t a[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]), pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                             pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      const T* vrow = vs + (kk * 16 + 2 * t) * kLd + g;
#pragma unroll
      for (int dn = 0; dn < kDTiles; ++dn) {
        const T* p = vrow + dn * 8;
        const uint32_t b0 = pack2_raw(p, p + kLd);
        const uint32_t b1 = pack2_raw(p + 8 * kLd, p + 9 * kLd);
        mma_16816<T>(o[dn], a, b0, b1);
      }
    }
  }

  // Writes rows g (if lo_valid) and g + 8 (if hi_valid): max and sum to ml_lo/ml_hi[0..1], the
  // unnormalized output to acc_lo/acc_hi[0 .. D). Every lane calls this.
  __device__ __forceinline__ void store(float* ml_lo, float* acc_lo, bool lo_valid, float* ml_hi, float* acc_hi, bool hi_valid,
                                        int t) {
    float sum[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      sum[h] = l[h] + __shfl_xor_sync(0xFFFFFFFFu, l[h], 1);
      sum[h] += __shfl_xor_sync(0xFFFFFFFFu, sum[h], 2);
    }
#pragma unroll
    for (int dn = 0; dn < kDTiles; ++dn) {
      const int c = dn * 8 + 2 * t;
      if (lo_valid) *reinterpret_cast<float2*>(acc_lo + c) = make_float2(o[dn][0], o[dn][1]);
      if (hi_valid) *reinterpret_cast<float2*>(acc_hi + c) = make_float2(o[dn][2], o[dn][3]);
    }
    if (t == 0) {
      if (lo_valid) ml_lo[0] = m[0], ml_lo[1] = sum[0];
      if (hi_valid) ml_hi[0] = m[1], ml_hi[1] = sum[1];
    }
  }
};

}  // namespace moekit::cuda::detail
