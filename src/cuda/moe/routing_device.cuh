// One warp routes one token, with the semantics of the CPU reference (src/cpu/routing.cpp): scores
// in double, candidates ranked by (score descending, expert id ascending), NaN below every number,
// weights summed and renormalized in slot order. Used by the routing kernel, the fused routing +
// maps kernel and the decode layer's plan kernel.
//
// Code size is speed here. At decode this code runs once per launch, and on the H200 every distinct
// instruction line a warp executes for the first time in a launch costs about 23 ns to fetch
// (bench/probes/icache_probe.cu: straight-line code runs 2.5x slower than the same work in a
// loop, launch after launch). So loops whose bodies hold an exp, a division or a sigmoid are kept
// rolled (`#pragma unroll 1`): one copy of the code, fetched once, run E/32 times.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "cuda/moe/moe_launch.h"
#include "moekit/moe_problem.h"

namespace moekit::cuda::moe {

// The local index of global expert g: expert_map[g] when a map is given, else g's place in the
// local range [begin, begin + local); -1 for a remote expert or an id outside [0, experts) (ids are
// never read on the host, so a bad one counts as remote rather than faulting).
__host__ __device__ __forceinline__ int local_expert_of(int32_t g, int experts, const int32_t* map, int begin, int local) {
  if (g < 0 || g >= experts) return -1;
  if (map) return map[g];
  const int l = g - begin;
  return (l >= 0 && l < local) ? l : -1;
}

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

// The reference's sigmoid (1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below) with one inlined exp:
// both branches take exp(-|x|), so the results are the reference's bit for bit.
__device__ __forceinline__ double sigmoid_d(double x) {
  const double e = exp(-fabs(x));
  return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
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
// lane 0 stores the ids in `chosen`. The generic path: k rounds of shared-memory scans.
__device__ __forceinline__ void warp_select_smem(const double* s, uint8_t* flag, int n, int k, int* chosen, int lane) {
  for (int j = 0; j < k; ++j) {
    const int best = warp_best(s, flag, n, lane);
    if (lane == 0) {
      chosen[j] = best;
      flag[best] = 1;
    }
    __syncwarp();
  }
}

// A 64-bit key whose unsigned order is ranks_before's order: larger ranks first. NaN gets the lowest
// key of an eligible entry (1), -0 the key of +0 (they compare equal), 0 means "not eligible". Equal
// keys are equal scores, so ties fall to the lower id as in the reference.
__device__ __forceinline__ uint64_t rank_key(double v) {
  if (isnan(v)) return 1;
  if (v == 0.0) v = 0.0;
  const uint64_t b = static_cast<uint64_t>(__double_as_longlong(v));
  return ((b >> 63) ? ~b : (b | (1ull << 63))) + 1;  // +inf -> 0xFFF0...01, -inf -> 0x0010...00
}

// The same selection with the n <= 32 * N keys held in registers (entry lane + 32 j in key[j]).
// One round is three warp reductions (key high word, low word, lowest id) instead of a scan of
// shared memory and five shuffle steps of (double, int) pairs: for Qwen3's 8 of 128 this is most of
// the routing time of a decode step.
template <int N>
__device__ __forceinline__ void warp_select_regs(const double* s, uint8_t* flag, int n, int k, int* chosen, int lane) {
  uint64_t key[N];
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const int i = lane + 32 * j;
    key[j] = i < n && flag[i] == 0 ? rank_key(s[i]) : 0;
  }
  __syncwarp();
#pragma unroll 1
  for (int r = 0; r < k; ++r) {
    uint64_t best = 0;
    int bj = 0;
#pragma unroll
    for (int j = 0; j < N; ++j)
      if (key[j] > best) best = key[j], bj = j;
    const unsigned hi = __reduce_max_sync(0xFFFFFFFFu, static_cast<unsigned>(best >> 32));
    const bool top_hi = static_cast<unsigned>(best >> 32) == hi;
    const unsigned lo = __reduce_max_sync(0xFFFFFFFFu, top_hi ? static_cast<unsigned>(best) : 0u);
    const bool top = top_hi && static_cast<unsigned>(best) == lo;
    const unsigned id = __reduce_min_sync(0xFFFFFFFFu, top ? static_cast<unsigned>(lane + 32 * bj) : 0xFFFFFFFFu);
    const bool none = hi == 0 && lo == 0;  // fewer eligible entries than k: as warp_best, -1
    if (!none && lane == static_cast<int>(id % 32)) {
#pragma unroll
      for (int j = 0; j < N; ++j)
        if (j == static_cast<int>(id / 32)) key[j] = 0;
    }
    if (lane == 0) {
      chosen[r] = none ? -1 : static_cast<int>(id);
      if (!none) flag[id] = 1;
    }
  }
  __syncwarp();
}

// Chooses k of the n entries (flag 0 = eligible), best first by ranks_before, marking each chosen
// with flag 1; lane 0 stores the ids in `chosen`. Registers up to 512 entries, shared memory above.
__device__ __forceinline__ void warp_select(const double* s, uint8_t* flag, int n, int k, int* chosen, int lane) {
  if (n <= 32) return warp_select_regs<1>(s, flag, n, k, chosen, lane);
  if (n <= 64) return warp_select_regs<2>(s, flag, n, k, chosen, lane);
  if (n <= 128) return warp_select_regs<4>(s, flag, n, k, chosen, lane);
  if (n <= 256) return warp_select_regs<8>(s, flag, n, k, chosen, lane);
  if (n <= 512) return warp_select_regs<16>(s, flag, n, k, chosen, lane);
  warp_select_smem(s, flag, n, k, chosen, lane);
}

// Slot j of token t's result: to the caller's shared-memory arrays when given, and to the global
// outputs (with their copies) when `store` is true. Both routing paths end here.
__device__ __forceinline__ void store_route_slot(const RouteArgs& a, int64_t t, int j, int32_t id, float w, bool store, int* ids_out,
                                                 float* weights_out) {
  if (ids_out) ids_out[j] = id;
  if (weights_out) weights_out[j] = w;
  if (!store) return;
  const int64_t at = t * a.top_k + j;
  a.topk_ids[at] = id;
  a.topk_weights[at] = w;
  if (a.copy_ids) a.copy_ids[at] = id;
  if (a.copy_weights) a.copy_weights[at] = w;
}

// ---- the fast path: selection on the logits ---------------------------------------------------------
// softmax_topk (renormalized) and topk_softmax rank the experts by their logits: softmax is monotonic,
// so the top K of the probabilities are the top K of the logits, unless two different logits give
// equal probabilities (underflow, or a difference below double precision), which the check below
// hands to the full path. Then a token's chain is K selection rounds on 32-bit keys held in
// registers and one exp and one division per slot lane, instead of E exps and E divisions in double
// through shared memory: less code run once per launch (docs/perf-notes.md, step 8) and a shorter
// dependent chain. Any NaN or infinite logit takes the full path as well.

// A 32-bit key whose unsigned order is the order of finite floats, -0 the key of +0; never 0.
__device__ __forceinline__ uint32_t float_key(float f) {
  const uint32_t u = __float_as_uint(f == 0.f ? 0.f : f);
  return (u >> 31) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float key_float(uint32_t k) { return __uint_as_float((k >> 31) ? (k & 0x7FFFFFFFu) : ~k); }

// Routes token t on its logits when it can (see above); false: nothing was written, take the full path.
// N: keys per lane (E <= 32 N); K < 32.
template <int N>
__device__ bool route_on_logits(const RouteArgs& a, int64_t t, int lane, bool store, int* ids_out, float* weights_out) {
  const int E = a.experts, K = a.top_k;
  const bool softmax_first = static_cast<RoutingMethod>(a.method) == RoutingMethod::kSoftmaxTopK;
  uint32_t key[N];
  bool finite = true;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const int i = lane + 32 * j;
    float f = 0.f;
    if (i < E)
      f = a.logits_type == Elem::kBF16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(a.logits)[t * E + i])
                                       : static_cast<const float*>(a.logits)[t * E + i];
    finite = finite && isfinite(f);
    key[j] = i < E ? float_key(f) : 0u;
  }
  if (!__all_sync(0xFFFFFFFFu, finite)) return false;
  // Round r's winner: the largest key, the lowest id among equal keys (the reference's order); lane r
  // keeps its logit and id. softmax_topk takes one round more, for the check.
  const int rounds = min(E, K + (softmax_first ? 1 : 0));
  float logit = 0.f;
  int id = -1;
#pragma unroll 1
  for (int r = 0; r < rounds; ++r) {
    uint32_t best = 0;
    int bj = 0;
#pragma unroll
    for (int j = 0; j < N; ++j)
      if (key[j] > best) best = key[j], bj = j;
    const uint32_t top = __reduce_max_sync(0xFFFFFFFFu, best);
    const uint32_t win = __reduce_min_sync(0xFFFFFFFFu, best == top ? static_cast<uint32_t>(lane + 32 * bj) : 0xFFFFFFFFu);
    if (lane == static_cast<int>(win % 32)) {
#pragma unroll
      for (int j = 0; j < N; ++j)
        if (j == static_cast<int>(win / 32)) key[j] = 0;
    }
    if (lane == r) {
      logit = key_float(top);
      id = static_cast<int>(win);
    }
  }
  // e = exp(logit - the largest logit) in double, as the reference computes it.
  const double e = exp(static_cast<double>(logit) - static_cast<double>(__shfl_sync(0xFFFFFFFFu, logit, 0)));
  if (softmax_first) {
    // The reference ranks probabilities: two different logits must give clearly different ones.
    const double e_prev = __shfl_up_sync(0xFFFFFFFFu, e, 1);
    const float l_prev = __shfl_up_sync(0xFFFFFFFFu, logit, 1);
    const bool tie = lane >= 1 && lane < rounds && l_prev != logit && !(e_prev - e > e_prev * 0x1p-40);
    if (__any_sync(0xFFFFFFFFu, tie)) return false;
  }
  // The weights: e over the sum of the K slots' e in slot order (every lane sums in the same order).
  double sum = 0.0;
  for (int j = 0; j < K; ++j) sum += __shfl_sync(0xFFFFFFFFu, e, j);
  if (lane < K) store_route_slot(a, t, lane, id, static_cast<float>(e / sum), store, ids_out, weights_out);
  __syncwarp();
  return true;
}

__device__ inline bool try_route_on_logits(const RouteArgs& a, int64_t t, int lane, bool store, int* ids_out, float* weights_out) {
  const auto method = static_cast<RoutingMethod>(a.method);
  const bool takes = method == RoutingMethod::kTopKSoftmax || (method == RoutingMethod::kSoftmaxTopK && a.renormalize);
  if (!takes || a.top_k >= 32) return false;
  const int E = a.experts;
  if (E <= 32) return route_on_logits<1>(a, t, lane, store, ids_out, weights_out);
  if (E <= 64) return route_on_logits<2>(a, t, lane, store, ids_out, weights_out);
  if (E <= 128) return route_on_logits<4>(a, t, lane, store, ids_out, weights_out);
  if (E <= 256) return route_on_logits<8>(a, t, lane, store, ids_out, weights_out);
  if (E <= 512) return route_on_logits<16>(a, t, lane, store, ids_out, weights_out);
  return false;
}

// Routes token t. `smem` is this warp's route_smem_per_warp bytes (8-byte aligned). The ids and
// weights go to a.topk_ids / a.topk_weights (and the copies) when `store` is true, and to ids_out /
// weights_out (shared memory, K entries) when those are given: the one-token kernel routes in every
// CTA and only its first CTA stores.
__device__ inline void route_token_warp(const RouteArgs& a, int64_t t, unsigned char* smem, int lane, bool store = true,
                                        int* ids_out = nullptr, float* weights_out = nullptr) {
  const int E = a.experts, K = a.top_k, G = a.n_group;
  double* score = reinterpret_cast<double*>(smem);
  double* aux = score + E;
  double* wsel = aux + E;
  double* gscore = wsel + E;
  int* chosen = reinterpret_cast<int*>(gscore + G);
  uint8_t* flag = reinterpret_cast<uint8_t*>(chosen + E);
  uint8_t* gflag = flag + E;
  const auto method = static_cast<RoutingMethod>(a.method);
  if (try_route_on_logits(a, t, lane, store, ids_out, weights_out)) return;

  // Four loads in flight per lane before any store: the stores go through a generic pointer the
  // compiler cannot prove apart from the logits, so a plain loop would wait out each load in turn.
  for (int base = lane; base < E; base += 4 * 32) {
    double v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = base + 32 * u < E ? load_as_double(a.logits, a.logits_type, t * E + base + 32 * u) : 0.0;
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      if (base + 32 * u >= E) continue;
      score[base + 32 * u] = v[u];
      flag[base + 32 * u] = 0;
    }
  }
  __syncwarp();
  switch (method) {
    case RoutingMethod::kSoftmaxTopK: {
      double m = -INFINITY;
      for (int i = lane; i < E; i += 32)
        if (score[i] > m) m = score[i];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) m = fmax(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
      double sum = 0.0;
#pragma unroll 1
      for (int i = lane; i < E; i += 32) sum += (score[i] = exp(score[i] - m));
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, off);
#pragma unroll 1
      for (int i = lane; i < E; i += 32) score[i] /= sum;
      __syncwarp();
      warp_select(score, flag, E, K, chosen, lane);
      break;
    }
    case RoutingMethod::kTopKSoftmax: {
      warp_select(score, flag, E, K, chosen, lane);
      break;
    }
    case RoutingMethod::kDeepSeekV3: {
      // The bias goes to aux first (loads batched as above), then one rolled loop of sigmoids.
      for (int base = lane; base < E; base += 4 * 32) {
        double b[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) b[u] = base + 32 * u < E ? load_as_double(a.bias, a.bias_type, base + 32 * u) : 0.0;
#pragma unroll
        for (int u = 0; u < 4; ++u)
          if (base + 32 * u < E) aux[base + 32 * u] = b[u];
      }
#pragma unroll 1
      for (int i = lane; i < E; i += 32) {
        const double sg = sigmoid_d(score[i]);
        score[i] = sg + aux[i];
        aux[i] = sg;
      }
      __syncwarp();
      const int per_group = E / G;
#pragma unroll 1
      for (int g = lane; g < G; g += 32) {
        const int base = g * per_group;
        int best = base, second = -1;
#pragma unroll 1
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
      break;
    }
    case RoutingMethod::kLlama4:
    case RoutingMethod::kTopK: {
      warp_select(score, flag, E, K, chosen, lane);
      break;
    }
  }
  // The weights, a slot per lane (one warp, not K steps of one lane): the reference's values in
  // its order. topk_softmax's softmax over the chosen logits replaces the renormalization; the sum
  // runs in slot order on lane 0 as in the reference, the divisions in parallel.
  for (int j = lane; j < K; j += 32) {
    const int c = chosen[j];
    double w = score[c];  // softmax_topk's probability, topk's logit
    if (method == RoutingMethod::kTopKSoftmax) w = exp(score[c] - score[chosen[0]]);
    if (method == RoutingMethod::kDeepSeekV3) w = aux[c];  // the unbiased sigmoid
    if (method == RoutingMethod::kLlama4) w = sigmoid_d(score[c]);
    wsel[j] = w;
  }
  __syncwarp();
  const bool divide = method == RoutingMethod::kTopKSoftmax || a.renormalize;
  double sum = 0.0;
  if (divide) {
    if (lane == 0)
      for (int j = 0; j < K; ++j) sum += wsel[j];
    sum = __shfl_sync(0xFFFFFFFFu, sum, 0);
  }
  for (int j = lane; j < K; j += 32)
    store_route_slot(a, t, j, chosen[j], static_cast<float>(divide ? wsel[j] / sum : wsel[j]), store, ids_out, weights_out);
  __syncwarp();
}

}  // namespace moekit::cuda::moe
