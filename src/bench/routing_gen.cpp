#include "bench/routing_gen.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "moekit/float_formats.h"

namespace moekit::bench {

std::vector<int> popularity_ranks(int num_experts, const RoutingSkew& skew) {
  std::vector<int> order(static_cast<size_t>(num_experts));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(skew.seed ^ 0x5A17C0DEull);
  // Fisher-Yates with our own draws: std::shuffle's algorithm differs between standard libraries.
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  std::vector<int> rank(order.size());
  for (size_t r = 0; r < order.size(); ++r) rank[static_cast<size_t>(order[r])] = static_cast<int>(r);
  return rank;
}

void fill_router_logits(const TensorView& logits, const RoutingSkew& skew, uint64_t set_seed) {
  const int64_t T = logits.size(0), E = logits.size(1);
  if (skew.balanced_top_k > 0) {
    const int64_t K = std::min<int64_t>(skew.balanced_top_k, E);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t e = 0; e < E; ++e) store_element(logits.data(), logits.dtype(), t * E + e, -8.0);
      for (int64_t j = 0; j < K; ++j) store_element(logits.data(), logits.dtype(), t * E + (t * K + j) % E, 8.0 - 0.01 * static_cast<double>(j));
    }
    return;
  }
  const std::vector<int> rank = popularity_ranks(static_cast<int>(E), skew);
  std::vector<double> log_p(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) log_p[static_cast<size_t>(e)] = -skew.zipf_s * std::log(rank[static_cast<size_t>(e)] + 1.0);
  std::mt19937_64 rng(set_seed * 0x9E3779B97F4A7C15ull + 17);
  for (int64_t i = 0; i < T * E; ++i) {
    // Gumbel(0, 1) from a uniform in (0, 1): 53 random bits, never 0.
    const double u = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
    store_element(logits.data(), logits.dtype(), i, log_p[static_cast<size_t>(i % E)] - std::log(-std::log(u)));
  }
}

Result<RandomLayer> bench_set_inputs(const MoeProblem& problem, int64_t tokens, uint64_t seed, int set, const RoutingSkew& skew) {
  // Fresh hidden states and routing per set; the same seeds give the same data on every machine.
  auto in = make_random_layer(problem, {.num_tokens = tokens, .seed = seed * 1000003 + static_cast<uint64_t>(tokens) * 101 + static_cast<uint64_t>(set),
                                        .inputs_only = true});
  if (!in.ok()) return in.status();
  if (in->router_logits.view().defined())
    fill_router_logits(in->router_logits, skew, seed * 7919 + static_cast<uint64_t>(tokens) * 31 + static_cast<uint64_t>(set));
  return in;
}

}  // namespace moekit::bench
