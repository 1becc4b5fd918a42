// Router logits for the benchmark: uniform expert popularity, a Zipf-like skew, or balanced.
//
// Each logit is log(p_e) + Gumbel noise, where p_e is expert e's popularity. The top-k of such
// logits is a draw of k distinct experts without replacement, each step proportional to p (the
// Gumbel-top-k trick), so with a softmax-style router the experts' load follows p exactly in
// expectation. Uniform: p_e equal (s = 0). Zipf: the expert at popularity rank r (1 = hottest) has
// p proportional to r^-s; which expert holds which rank is a permutation drawn from `seed`.
// Routing methods that transform the logits (DeepSeek-V3's sigmoid, groups and bias) keep the
// ordering of popularity, not its exact proportions.
//
// Balanced (no randomness): token t's top-k are experts (t*k + j) mod E for j < k, by logits of +8
// for them (less 0.01 j, so that no two tie) and -8 for every other expert; so every router (softmax,
// sigmoid, grouped top-k with a small correction bias) picks them, and each expert gets exactly
// T*k/E routed rows when E divides T*k (at most one more otherwise). The layer's GEMMs then see no
// partial M tiles from uneven experts: what routing imbalance costs is the difference to uniform.
#pragma once

#include <cstdint>
#include <vector>

#include "moekit/random_layer.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit::bench {

struct RoutingSkew {
  double zipf_s = 0.0;      // 0: uniform
  uint64_t seed = 1;        // which expert gets which popularity rank (fixed for a whole run)
  int balanced_top_k = 0;   // > 0: balanced routing for this top-k (above); zipf_s and seeds unused
};

// rank_of[e] = popularity rank of expert e (0 = hottest), a permutation drawn from skew.seed.
std::vector<int> popularity_ranks(int num_experts, const RoutingSkew& skew);

// Fills host logits [T, E] (f32 or bf16) with fresh noise from `set_seed` (one per measurement
// set), biased by the popularity of `skew`. The same (skew, set_seed) gives the same bytes.
// Balanced (skew.balanced_top_k > 0, at most E) ignores set_seed.
void fill_router_logits(const TensorView& logits, const RoutingSkew& skew, uint64_t set_seed);

// The inputs of measurement set `set` of `moekit bench --seed SEED` at T tokens: hidden states and
// the other inputs (DeepSeek-V3's correction bias among them) of a random layer seeded per set, the
// router logits then drawn by fill_router_logits with `skew`. The tuner's worker times on the same
// sets (src/tune/worker.cpp), so both measure the same routings and the same data.
Result<RandomLayer> bench_set_inputs(const MoeProblem& problem, int64_t tokens, uint64_t seed, int set, const RoutingSkew& skew);

}  // namespace moekit::bench
