// One warp routes one token, with the semantics of the CPU reference (src/cpu/routing.cpp): scores
// in double, candidates ranked by (score descending, expert id ascending), NaN below every number,
// weights summed and renormalized in slot order. Used by the routing kernel and by the fused
// routing + maps kernel.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "cuda/moe/moe_launch.h"
#include "moekit/moe_problem.h"

namespace moekit::cuda::moe {

// Per-warp shared memory: score[E], aux[E], wsel[E], gscore[n_group] (doubles), chosen[E] (ints),
// flag[E], gflag[n_group] (bytes).
__host__ __device__ inline size_t route_smem_per_warp(int experts, int n_group) {
  const size_t doubles = 3 * static_cast<size_t>(experts) + static_cast<size_t>(n_group);
  const size_t bytes = 4 * static_cast<size_t>(experts) + static_cast<size_t>(experts) + static_cast<size_t>(n_group);
  return doubles * 8 + (bytes + 7) / 8 * 8;
}

__device__ __forceinline__ double load_as_double(const void* p, Elem t, int64_t i) {
  if (t == Elem::kBF16) return static_cast<double>(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
  return static_cast<double>(static_cast<const float*>(p)[i]);
}

// True when (va, ia) ranks strictly before (vb, ib): the reference's total order.
__device__ __forceinline__ bool ranks_before(double va, int ia, double vb, int ib) {
  const bool na = isnan(va), nb = isnan(vb);
  if (na != nb) return nb;
  if (!na && va != vb) return va > vb;
  return ia < ib;
}

__device__ __forceinline__ double sigmoid_d(double x) {
  if (x >= 0) return 1.0 / (1.0 + exp(-x));
  const double e = exp(x);
  return e / (1.0 + e);
}

// The best i in [0, n) with flag[i] == 0, by ranks_before; -1 when none. Uniform across the warp.
__device__ __forceinline__ int warp_best(const double* s, const uint8_t* flag, int n, int lane) {
  double bv = 0.0;
  int bi = -1;
  for (int i = lane; i < n; i += 32)
    if (flag[i] == 0 && (bi < 0 || ranks_before(s[i], i, bv, bi))) bv = s[i], bi = i;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const double ov = __shfl_xor_sync(0xFFFFFFFFu, bv, off);
    const int oi = __shfl_xor_sync(0xFFFFFFFFu, bi, off);
    if (oi >= 0 && (bi < 0 || ranks_before(ov, oi, bv, bi))) bv = ov, bi = oi;
  }
  return bi;
}

// Chooses k of the n entries (flag 0 = eligible), best first, marking each chosen with flag 1;
// lane 0 stores the ids in `chosen`.
__device__ __forceinline__ void warp_select(const double* s, uint8_t* flag, int n, int k, int* chosen, int lane) {
  for (int j = 0; j < k; ++j) {
    const int best = warp_best(s, flag, n, lane);
    if (lane == 0) {
      chosen[j] = best;
      flag[best] = 1;
    }
    __syncwarp();
  }
}

// Routes token t. `smem` is this warp's route_smem_per_warp bytes (8-byte aligned).
__device__ inline void route_token_warp(const RouteArgs& a, int64_t t, unsigned char* smem, int lane) {
  const int E = a.experts, K = a.top_k, G = a.n_group;
  double* score = reinterpret_cast<double*>(smem);
  double* aux = score + E;
  double* wsel = aux + E;
  double* gscore = wsel + E;
  int* chosen = reinterpret_cast<int*>(gscore + G);
  uint8_t* flag = reinterpret_cast<uint8_t*>(chosen + E);
  uint8_t* gflag = flag + E;
  const auto method = static_cast<RoutingMethod>(a.method);

  for (int i = lane; i < E; i += 32) {
    score[i] = load_as_double(a.logits, a.logits_type, t * E + i);
    flag[i] = 0;
  }
  __syncwarp();
  bool renormalize = a.renormalize;
  switch (method) {
    case RoutingMethod::kSoftmaxTopK: {
      double m = -INFINITY;
      for (int i = lane; i < E; i += 32)
        if (score[i] > m) m = score[i];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) m = fmax(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
      double sum = 0.0;
      for (int i = lane; i < E; i += 32) sum += (score[i] = exp(score[i] - m));
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, off);
      for (int i = lane; i < E; i += 32) score[i] /= sum;
      __syncwarp();
      warp_select(score, flag, E, K, chosen, lane);
      if (lane == 0)
        for (int j = 0; j < K; ++j) wsel[j] = score[chosen[j]];
      break;
    }
    case RoutingMethod::kTopKSoftmax: {
      warp_select(score, flag, E, K, chosen, lane);
      if (lane == 0) {
        const double m = score[chosen[0]];
        double sum = 0.0;
        for (int j = 0; j < K; ++j) sum += (wsel[j] = exp(score[chosen[j]] - m));
        for (int j = 0; j < K; ++j) wsel[j] /= sum;
      }
      renormalize = false;
      break;
    }
    case RoutingMethod::kDeepSeekV3: {
      for (int i = lane; i < E; i += 32) {
        aux[i] = sigmoid_d(score[i]);
        score[i] = aux[i] + load_as_double(a.bias, a.bias_type, i);
      }
      __syncwarp();
      const int per_group = E / G;
      for (int g = lane; g < G; g += 32) {
        const int base = g * per_group;
        int best = base, second = -1;
        for (int i = base + 1; i < base + per_group; ++i) {
          if (ranks_before(score[i], i, score[best], best)) {
            second = best;
            best = i;
          } else if (second < 0 || ranks_before(score[i], i, score[second], second)) {
            second = i;
          }
        }
        gscore[g] = score[best] + (second >= 0 ? score[second] : 0.0);
        gflag[g] = 0;
      }
      __syncwarp();
      // The kept groups (ids into `chosen` temporarily), then every expert outside them is barred.
      warp_select(gscore, gflag, G, a.topk_group, chosen, lane);
      for (int i = lane; i < E; i += 32) flag[i] = gflag[i / per_group] == 1 ? 0 : 2;
      __syncwarp();
      warp_select(score, flag, E, K, chosen, lane);
      if (lane == 0)
        for (int j = 0; j < K; ++j) wsel[j] = aux[chosen[j]];
      break;
    }
    case RoutingMethod::kLlama4:
    case RoutingMethod::kTopK: {
      warp_select(score, flag, E, K, chosen, lane);
      if (lane == 0) {
        const bool llama = method == RoutingMethod::kLlama4;
        for (int j = 0; j < K; ++j) wsel[j] = llama ? sigmoid_d(score[chosen[j]]) : score[chosen[j]];
      }
      break;
    }
  }
  if (lane == 0) {
    double sum = 0.0;
    if (renormalize)
      for (int j = 0; j < K; ++j) sum += wsel[j];
    for (int j = 0; j < K; ++j) {
      const int32_t id = chosen[j];
      const float w = static_cast<float>(renormalize ? wsel[j] / sum : wsel[j]);
      a.topk_ids[t * K + j] = id;
      a.topk_weights[t * K + j] = w;
      if (a.copy_ids) a.copy_ids[t * K + j] = id;
      if (a.copy_weights) a.copy_weights[t * K + j] = w;
    }
  }
  __syncwarp();
}

}  // namespace moekit::cuda::moe
