// DeepSeek-V3's grouped top-k for one token over several warps of a CTA (the one-token kernel's
// routing), with the reference's results bit for bit (src/cpu/routing.cpp; route_token_warp's full
// path gives the same).
//
// One warp routing all E experts spends most of its time in chains that only depend on one group:
// at E = 256 (8 groups of 32) each lane runs 8 double sigmoids, the group scores scan 8 entries a
// lane, and each of the K selection rounds reduces 8 keys a lane (docs/perf-notes.md step 12: 9.5 us
// of routing per CTA). Here warp g takes group g, an expert a lane:
//   phase 1 (warps 0 .. G-1, at once): the logit and bias, one sigmoid and the biased score per lane;
//     the group's score (the sum of its two best biased scores) and its best kc = min(K, E/G)
//     experts in rank order, by single-key warp reductions, into shared memory;
//   phase 2 (warp 0): the topk_group best groups, then the K best of their kc candidates each (at
//     most 32: one a lane), the weights (unbiased sigmoids, renormalized in slot order).
// The K best experts of the kept groups are among their groups' kc best, so phase 2 sees every
// expert the reference can choose. Ranks are rank_key's (score descending, NaN below every number,
// ties to the lower id), so ties between groups and inside them fall as in the reference.
#pragma once

#include <cstdint>

#include "cuda/moe/routing_device.cuh"

namespace moekit::cuda::moe {

// Whether route_grouped_phase1 / route_grouped_finish take this routing with `warps` warps:
// DeepSeek-V3's method, a group per warp with at most 32 experts each, enough experts in the kept
// groups for K slots, and the kept groups' candidates within one warp's lanes.
__host__ __device__ inline bool grouped_routing_fits(const RouteArgs& a, int warps) {
  if (static_cast<RoutingMethod>(a.method) != RoutingMethod::kDeepSeekV3 || a.bias == nullptr) return false;
  const int E = a.experts, G = a.n_group, K = a.top_k;
  if (G < 1 || G > warps || E % G != 0 || K < 1 || K > 32 || a.topk_group < 1 || a.topk_group > G) return false;
  const int per = E / G, kc = K < per ? K : per;
  return per <= 32 && a.topk_group * kc <= 32 && a.topk_group * per >= K;
}

// The largest key of the warp (every lane gets it): the high words, then the low words of the keys
// whose high word is the largest.
__device__ __forceinline__ uint64_t warp_max_key(uint64_t k) {
  const unsigned hi = __reduce_max_sync(0xFFFFFFFFu, static_cast<unsigned>(k >> 32));
  const unsigned lo = __reduce_max_sync(0xFFFFFFFFu, static_cast<unsigned>(k >> 32) == hi ? static_cast<unsigned>(k) : 0u);
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// The warp's largest key and the lowest lane holding it (ties fall to the lower lane).
struct WarpBest {
  uint64_t key;
  int lane;
};
__device__ __forceinline__ WarpBest warp_best_key(uint64_t k, int lane) {
  const uint64_t best = warp_max_key(k);
  const unsigned win = __reduce_min_sync(0xFFFFFFFFu, k == best ? static_cast<unsigned>(lane) : 32u);
  return {best, static_cast<int>(win)};
}

// The grouped routing's shared memory, in the caller's route_smem_per_warp(E, G) bytes: G * kc <= E
// candidates of 20 bytes and G group keys of 8 take at most 20 E + 8 G bytes, under its 24 E + 8 G.
struct GroupedScratch {
  uint64_t* cand_key;  // [G][kc], in each group's rank order
  double* cand_sig;    // [G][kc], the unbiased sigmoid
  int* cand_id;        // [G][kc]
  uint64_t* group_key; // [G]
  __device__ GroupedScratch(unsigned char* smem, int groups, int kc) {
    const int n = groups * kc;
    cand_key = reinterpret_cast<uint64_t*>(smem);
    cand_sig = reinterpret_cast<double*>(cand_key + n);
    group_key = reinterpret_cast<uint64_t*>(cand_sig + n);
    cand_id = reinterpret_cast<int*>(group_key + groups);
  }
};

// Named barrier 1: the G phase-1 warps arrive, warp 0 waits for them (a CTA's other warps go on).
constexpr int kGroupedBarrier = 1;

// Phase 1 for warp `warp` < G of token t: its group's candidates and score into `smem`. Warps 1..G-1
// arrive at the barrier and return; warp 0 then runs route_grouped_finish.
__device__ inline void route_grouped_phase1(const RouteArgs& a, int64_t t, unsigned char* smem, int warp, int lane) {
  const int E = a.experts, G = a.n_group, K = a.top_k, per = E / G, kc = K < per ? K : per;
  const GroupedScratch s(smem, G, kc);
  float lg[1], bs[1];
  load_row(row_at(a.logits, a.logits_type, t * E + warp * per), a.logits_type, lane, per, lg);
  load_row(row_at(a.bias, a.bias_type, warp * per), a.bias_type, lane, per, bs);
  const bool in = lane < per;
  const double sig = sigmoid_d(static_cast<double>(lg[0]));
  uint64_t key = in ? rank_key(sig + static_cast<double>(bs[0])) : 0;  // the reference's score: sigmoid + bias
  // The group's score: its best two entries (one when the group has one expert). Equal keys are
  // equal values, so dropping the lowest lane holding the best leaves the reference's second best.
  const WarpBest first = warp_best_key(key, lane);
  const uint64_t k2 = warp_max_key(lane == first.lane ? 0 : key);
  if (lane == 0) s.group_key[warp] = rank_key(key_value(first.key) + (per > 1 ? key_value(k2) : 0.0));
  // The group's kc best, best first (ties: the lower lane, which is the lower id).
#pragma unroll 1
  for (int r = 0; r < kc; ++r) {
    const WarpBest best = warp_best_key(key, lane);
    if (lane == best.lane) {
      s.cand_key[warp * kc + r] = best.key;
      s.cand_sig[warp * kc + r] = sig;
      s.cand_id[warp * kc + r] = warp * per + lane;
      key = 0;
    }
  }
  if (G > 1) {
    if (warp == 0) {
      asm volatile("bar.sync %0, %1;\n" ::"r"(kGroupedBarrier), "r"(G * 32) : "memory");
    } else {
      asm volatile("bar.arrive %0, %1;\n" ::"r"(kGroupedBarrier), "r"(G * 32) : "memory");
    }
  } else {
    __syncwarp();
  }
}

// Phase 2 on warp 0, after route_grouped_phase1: the kept groups, the K slots and their weights, to
// store_route_slot (as route_token_warp's outputs). `early` (shared memory, K entries holding -1, or
// null): each round's winner is final (ranks are exact keys), so slot r's id is stored there as soon
// as round r picks it, as route_on_logits does.
__device__ inline void route_grouped_finish(const RouteArgs& a, int64_t t, unsigned char* smem, int lane, bool store, int* ids_out,
                                            float* weights_out, volatile int* early = nullptr) {
  const int E = a.experts, G = a.n_group, K = a.top_k, per = E / G, kc = K < per ? K : per;
  const GroupedScratch s(smem, G, kc);
  // The topk_group best groups, by their scores' keys (ties: the lower group id).
  uint64_t gk = lane < G ? s.group_key[lane] : 0;
  unsigned kept = 0;
#pragma unroll 1
  for (int r = 0; r < a.topk_group; ++r) {
    const int win = warp_best_key(gk, lane).lane;
    kept |= 1u << win;
    if (lane == win) gk = 0;
  }
  // Lane c holds candidate c % kc of the (c / kc)-th kept group in id order.
  uint64_t ck = 0;
  double csig = 0.0;
  int cid = 0;
  const int c = lane, j = c / kc;
  if (c < a.topk_group * kc) {
    unsigned m = kept;
    for (int q = 0; q < j; ++q) m &= m - 1;  // drop the j lowest kept groups
    const int g = __ffs(static_cast<int>(m)) - 1;
    ck = s.cand_key[g * kc + c % kc];
    csig = s.cand_sig[g * kc + c % kc];
    cid = s.cand_id[g * kc + c % kc];
  }
  // K rounds: the best key, the lowest expert id among equal keys; lane r keeps slot r.
  int id = -1;
  double sig = 0.0;
#pragma unroll 1
  for (int r = 0; r < K; ++r) {
    const uint64_t best = warp_max_key(ck);
    const bool holds = ck == best && ck != 0;
    const unsigned wid = __reduce_min_sync(0xFFFFFFFFu, holds ? static_cast<unsigned>(cid) : 0xFFFFFFFFu);
    const int wl = __ffs(static_cast<int>(__ballot_sync(0xFFFFFFFFu, holds && cid == static_cast<int>(wid)))) - 1;
    const double wsig = __shfl_sync(0xFFFFFFFFu, csig, wl);
    if (lane == r) {
      id = static_cast<int>(wid);
      sig = wsig;
    }
    if (lane == wl) ck = 0;
    if (early != nullptr && lane == 0) early[r] = static_cast<int>(wid);
  }
  // The weights: the unbiased sigmoids, renormalized by their sum in slot order (every lane sums in
  // that order, as the reference's single loop).
  double sum = 0.0;
  if (a.renormalize)
#pragma unroll 4
    for (int r = 0; r < K; ++r) sum += __shfl_sync(0xFFFFFFFFu, sig, r);
  if (lane < K) store_route_slot(a, t, lane, id, static_cast<float>(a.renormalize ? sig / sum : sig), store, ids_out, weights_out);
  __syncwarp();
}

}  // namespace moekit::cuda::moe
