// One warp routes one token, with the semantics of the CPU reference (src/cpu/routing.cpp): scores
// in double, candidates ranked by (score descending, expert id ascending), NaN below every number,
// weights summed and renormalized in slot order. Used by the routing kernel, the fused routing +
// maps kernel and the decode layer's plan kernel.
//
// Code size is speed here. At decode this code runs once per launch, and on the H200 every distinct
// instruction line a warp executes for the first time in a launch costs about 23 ns to fetch
// (bench/probes/icache_probe.cu: straight-line code runs 2.5x slower than the same work in a
// loop, launch after launch). So loops whose bodies hold an exp, a division or a sigmoid are kept
// rolled (`#pragma unroll 1`): one copy of the code, fetched once, run E/32 times. DeepSeek-V3's
// sigmoids run two a turn (two copies: two independent exp chains in flight; not measured apart
// from the other changes of docs/perf-notes.md step 12).
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

// Entries lane + 32 u (u < N) of a float or bf16 row, those below `count` (0 elsewhere). The type
// is tested once around all N loads: tested per entry, the compiler waited out each load before
// issuing the next (the bf16 conversion shared the f32 load's wait), so N entries cost N round trips
// to memory (docs/perf-notes.md, step 12).
template <int N>
__device__ __forceinline__ void load_row(const void* p, Elem t, int lane, int count, float (&v)[N]) {
  if (t == Elem::kBF16) {
    const unsigned short* q = static_cast<const unsigned short*>(p);
    unsigned short r[N];
#pragma unroll
    for (int u = 0; u < N; ++u) r[u] = lane + 32 * u < count ? q[lane + 32 * u] : 0;
#pragma unroll
    for (int u = 0; u < N; ++u) v[u] = __uint_as_float(static_cast<uint32_t>(r[u]) << 16);
  } else {
    const float* q = static_cast<const float*>(p);
#pragma unroll
    for (int u = 0; u < N; ++u) v[u] = lane + 32 * u < count ? q[lane + 32 * u] : 0.f;
  }
}
// The element size of a logits or bias row.
__device__ __forceinline__ int64_t row_elem_bytes(Elem t) { return t == Elem::kBF16 ? 2 : 4; }
__device__ __forceinline__ const void* row_at(const void* p, Elem t, int64_t i) { return static_cast<const char*>(p) + i * row_elem_bytes(t); }

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
// The value of a rank_key (a NaN for key 1; +0 for the key of +0 and -0).
__device__ __forceinline__ double key_value(uint64_t k) {
  const uint64_t b = k - 1;
  return __longlong_as_double(static_cast<long long>((b >> 63) ? (b & ~(1ull << 63)) : ~b));
}

// DeepSeek-V3's group scores: gscore[g] = the sum of group g's two best entries of s[] by
// ranks_before (its only one when a group has one expert), gflag[g] = 0. L lanes share a group (the
// largest power of two with L * G <= 32), each scanning every L-th entry, and merge their two best
// keys over log2(L) shuffles: a quarter of the dependent loads of a lane per group at DeepSeek-V3's 8
// groups. Equal keys are equal values, so which of two equal entries counts as "second" does not
// change the sum; the order of a NaN (key 1) is the reference's, and its sum is a NaN as there.
__device__ __forceinline__ void warp_group_scores(const double* s, double* gscore, uint8_t* gflag, int experts, int groups, int lane) {
  const int per_group = experts / groups;
  int L = 1;
  while (L * 2 * groups <= 32) L *= 2;
  const int sub = lane % L;
#pragma unroll 1
  for (int g0 = 0; g0 < groups; g0 += 32 / L) {
    const int g = g0 + lane / L;
    uint64_t k1 = 0, k2 = 0;  // this lane's best two keys of group g (0: none)
    if (g < groups) {
#pragma unroll 1
      for (int i = g * per_group + sub; i < (g + 1) * per_group; i += L) {
        const uint64_t k = rank_key(s[i]);
        if (k > k1) {
          k2 = k1;
          k1 = k;
        } else if (k > k2) {
          k2 = k;
        }
      }
    }
#pragma unroll 1
    for (int off = 1; off < L; off <<= 1) {
      const uint64_t o1 = __shfl_xor_sync(0xFFFFFFFFu, k1, off), o2 = __shfl_xor_sync(0xFFFFFFFFu, k2, off);
      const uint64_t lower = k1 < o1 ? k1 : o1;
      k1 = k1 > o1 ? k1 : o1;
      k2 = k2 > o2 ? k2 : o2;
      k2 = k2 > lower ? k2 : lower;
    }
    if (g < groups && sub == 0) {
      gscore[g] = key_value(k1) + (per_group > 1 ? key_value(k2) : 0.0);
      gflag[g] = 0;
    }
  }
}

// The lowest j with key[j] == v (v one of the keys). Selects over an unrolled loop, and drop_key below
// likewise: indexing key[] with a value known only at run time puts the array in local memory,
// which made every selection round a local load and store (docs/perf-notes.md, step 12).
template <typename Key, int N>
__device__ __forceinline__ int lowest_holding(const Key (&key)[N], Key v) {
  int j0 = 0;
#pragma unroll
  for (int j = N - 1; j >= 0; --j) j0 = key[j] == v ? j : j0;
  return j0;
}
// key[j0] = 0 when `drop`.
template <typename Key, int N>
__device__ __forceinline__ void drop_key(Key (&key)[N], int j0, bool drop) {
#pragma unroll
  for (int j = 0; j < N; ++j) key[j] = drop && j == j0 ? Key(0) : key[j];
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
#pragma unroll
    for (int j = 0; j < N; ++j) best = key[j] > best ? key[j] : best;
    const unsigned hi = __reduce_max_sync(0xFFFFFFFFu, static_cast<unsigned>(best >> 32));
    const bool top_hi = static_cast<unsigned>(best >> 32) == hi;
    const unsigned lo = __reduce_max_sync(0xFFFFFFFFu, top_hi ? static_cast<unsigned>(best) : 0u);
    const bool top = top_hi && static_cast<unsigned>(best) == lo;
    const int bj = lowest_holding(key, best);
    const unsigned id = __reduce_min_sync(0xFFFFFFFFu, top ? static_cast<unsigned>(lane + 32 * bj) : 0xFFFFFFFFu);
    const bool none = hi == 0 && lo == 0;  // fewer eligible entries than k: as warp_best, -1
    drop_key(key, bj, !none && lane == static_cast<int>(id % 32));
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
//
// `early` (shared memory, K entries holding -1, or null): slot r's expert id is stored there as soon
// as it is final, before the weights, so that a caller can start on it (the one-token kernel's first
// weight loads). topk_softmax ranks the logits themselves: every round's winner is final. For
// softmax_topk a winner is final once the next round shows its logit at least 2^-30 above the
// next one, with a probability far from underflow (logit - max > -700): then exp() and the division
// keep the two apart in double, and no tie can reorder them, whether or not the full path takes over
// later. Publishing stops at the first pair that is closer than that.
template <int N>
__device__ bool route_on_logits(const RouteArgs& a, int64_t t, int lane, bool store, int* ids_out, float* weights_out, volatile int* early) {
  const int E = a.experts, K = a.top_k;
  const bool softmax_first = static_cast<RoutingMethod>(a.method) == RoutingMethod::kSoftmaxTopK;
  float f[N];
  load_row(row_at(a.logits, a.logits_type, t * E), a.logits_type, lane, E, f);
  uint32_t key[N];
  bool finite = true;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    finite = finite && isfinite(f[j]);
    key[j] = lane + 32 * j < E ? float_key(f[j]) : 0u;
  }
  if (!__all_sync(0xFFFFFFFFu, finite)) return false;
  // Round r's winner: the largest key, the lowest id among equal keys (the reference's order); lane r
  // keeps its logit and id. softmax_topk takes one round more, for the check.
  const int rounds = min(E, K + (softmax_first ? 1 : 0));
  float logit = 0.f;
  int id = -1;
  bool publish = early != nullptr;
  float first = 0.f, prev = 0.f;  // round 0's and the previous round's logit
  uint32_t prev_win = 0;
#pragma unroll 1
  for (int r = 0; r < rounds; ++r) {
    uint32_t best = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) best = max(best, key[j]);
    const uint32_t top = __reduce_max_sync(0xFFFFFFFFu, best);
    const int bj = lowest_holding(key, best);
    const uint32_t win = __reduce_min_sync(0xFFFFFFFFu, best == top ? static_cast<uint32_t>(lane + 32 * bj) : 0xFFFFFFFFu);
    drop_key(key, bj, lane == static_cast<int>(win % 32));
    const float l = key_float(top);
    logit = lane == r ? l : logit;
    id = lane == r ? static_cast<int>(win) : id;
    if (publish) {
      if (!softmax_first) {
        if (lane == 0 && r < K) early[r] = static_cast<int>(win);
      } else if (r > 0) {
        publish = static_cast<double>(prev) - static_cast<double>(l) >= 0x1p-30 && static_cast<double>(prev) - static_cast<double>(first) > -700.0;
        if (publish && lane == 0 && r - 1 < K) early[r - 1] = static_cast<int>(prev_win);
      }
    }
    first = r == 0 ? l : first;
    prev = l;
    prev_win = win;
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
#pragma unroll 4
  for (int j = 0; j < K; ++j) sum += __shfl_sync(0xFFFFFFFFu, e, j);
  if (lane < K) store_route_slot(a, t, lane, id, static_cast<float>(e / sum), store, ids_out, weights_out);
  __syncwarp();
  return true;
}

__device__ inline bool try_route_on_logits(const RouteArgs& a, int64_t t, int lane, bool store, int* ids_out, float* weights_out,
                                           volatile int* early = nullptr) {
  const auto method = static_cast<RoutingMethod>(a.method);
  const bool takes = method == RoutingMethod::kTopKSoftmax || (method == RoutingMethod::kSoftmaxTopK && a.renormalize);
  if (!takes || a.top_k >= 32) return false;
  const int E = a.experts;
  if (E <= 32) return route_on_logits<1>(a, t, lane, store, ids_out, weights_out, early);
  if (E <= 64) return route_on_logits<2>(a, t, lane, store, ids_out, weights_out, early);
  if (E <= 128) return route_on_logits<4>(a, t, lane, store, ids_out, weights_out, early);
  if (E <= 256) return route_on_logits<8>(a, t, lane, store, ids_out, weights_out, early);
  if (E <= 512) return route_on_logits<16>(a, t, lane, store, ids_out, weights_out, early);
  return false;
}

// Routes token t. `smem` is this warp's route_smem_per_warp bytes (8-byte aligned). The ids and
// weights go to a.topk_ids / a.topk_weights (and the copies) when `store` is true, and to ids_out /
// weights_out (shared memory, K entries) when those are given: the one-token kernel routes in every
// CTA and only its first CTA stores. `early`: see route_on_logits (only its fast path fills it).
__device__ inline void route_token_warp(const RouteArgs& a, int64_t t, unsigned char* smem, int lane, bool store = true,
                                        int* ids_out = nullptr, float* weights_out = nullptr, volatile int* early = nullptr) {
  const int E = a.experts, K = a.top_k, G = a.n_group;
  double* score = reinterpret_cast<double*>(smem);
  double* aux = score + E;
  double* wsel = aux + E;
  double* gscore = wsel + E;
  int* chosen = reinterpret_cast<int*>(gscore + G);
  uint8_t* flag = reinterpret_cast<uint8_t*>(chosen + E);
  uint8_t* gflag = flag + E;
  const auto method = static_cast<RoutingMethod>(a.method);
  if (try_route_on_logits(a, t, lane, store, ids_out, weights_out, early)) return;

  // Eight loads in flight per lane (and DeepSeek-V3's bias beside them) before any store: the stores go
  // through a generic pointer the compiler cannot prove apart from the inputs, so a plain loop would
  // wait out each load in turn.
  const bool biased = method == RoutingMethod::kDeepSeekV3;
  for (int base = 0; base < E; base += 8 * 32) {
    float v[8], b[8];
    load_row(row_at(a.logits, a.logits_type, t * E + base), a.logits_type, lane, E - base, v);
    if (biased) load_row(row_at(a.bias, a.bias_type, base), a.bias_type, lane, E - base, b);
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int i = base + lane + 32 * u;
      if (i >= E) continue;
      score[i] = v[u];
      flag[i] = 0;
      if (biased) aux[i] = b[u];
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
      // aux holds the bias (loaded above); one rolled loop of sigmoids, two at a time.
#pragma unroll 2
      for (int i = lane; i < E; i += 32) {
        const double sg = sigmoid_d(score[i]);
        score[i] = sg + aux[i];
        aux[i] = sg;
      }
      __syncwarp();
      const int per_group = E / G;
      warp_group_scores(score, gscore, gflag, E, G, lane);
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
