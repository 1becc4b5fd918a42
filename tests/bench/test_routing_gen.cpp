// The benchmark's router logits: deterministic per seed, fresh per set, and with the popularity
// the skew asks for (checked through the softmax top-k routing the presets use).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "bench/routing_gen.h"
#include "moekit/cpu_reference.h"
#include "moekit/presets.h"

namespace moekit::bench {
namespace {

Tensor logits(int64_t T, int64_t E, const RoutingSkew& skew, uint64_t set_seed) {
  Tensor t = Tensor::empty(DType::kF32, {T, E}).value();
  fill_router_logits(t, skew, set_seed);
  return t;
}

// How often each expert is among a token's top-k logits.
std::vector<int> topk_counts(const Tensor& l, int K) {
  const int64_t T = l.shape()[0], E = l.shape()[1];
  std::vector<int> count(static_cast<size_t>(E), 0), idx(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    const float* row = l.data_as<const float>() + t * E;
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(idx.begin(), idx.begin() + K, idx.end(), [&](int a, int b) { return row[a] > row[b]; });
    for (int k = 0; k < K; ++k) ++count[static_cast<size_t>(idx[static_cast<size_t>(k)])];
  }
  return count;
}

TEST(RoutingGen, SameSeedsSameBytesOtherSetOtherBytes) {
  const RoutingSkew skew{.zipf_s = 1.2, .seed = 3};
  const Tensor a = logits(16, 32, skew, 7), b = logits(16, 32, skew, 7), c = logits(16, 32, skew, 8);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.storage_bytes()), 0);
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.storage_bytes()), 0);
}

TEST(RoutingGen, RanksArePermutationsFixedBySeed) {
  const auto r1 = popularity_ranks(64, {.seed = 1}), r1b = popularity_ranks(64, {.seed = 1}), r2 = popularity_ranks(64, {.seed = 2});
  std::vector<int> sorted = r1;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
  EXPECT_EQ(r1, r1b);
  EXPECT_NE(r1, r2);
}

TEST(RoutingGen, ZipfPopularityFollowsRank) {
  const RoutingSkew skew{.zipf_s = 1.2, .seed = 5};
  const int E = 16, K = 2;
  const std::vector<int> count = topk_counts(logits(20000, E, skew, 1), K);
  const std::vector<int> rank = popularity_ranks(E, skew);
  std::vector<int> by_rank(E);
  for (int e = 0; e < E; ++e) by_rank[static_cast<size_t>(rank[static_cast<size_t>(e)])] = count[static_cast<size_t>(e)];
  // Hotter ranks are chosen more often (the first few are far apart; the tail is close, so compare
  // the head strictly and the halves in aggregate).
  EXPECT_GT(by_rank[0], by_rank[1]);
  EXPECT_GT(by_rank[1], by_rank[2]);
  EXPECT_GT(by_rank[2], by_rank[4]);
  EXPECT_GT(std::accumulate(by_rank.begin(), by_rank.begin() + E / 2, 0), 3 * std::accumulate(by_rank.begin() + E / 2, by_rank.end(), 0));
  // Top-2 without replacement: rank 0 is in at most every token's top-2, and clearly dominant.
  EXPECT_GT(by_rank[0], 20000 / 3);
}

TEST(RoutingGen, UniformSpreadsTheLoad) {
  const int E = 16, K = 2;
  const std::vector<int> count = topk_counts(logits(20000, E, {.zipf_s = 0.0, .seed = 5}, 1), K);
  const double mean = 20000.0 * K / E;  // 2500
  for (int c : count) EXPECT_NEAR(c, mean, 0.1 * mean);
}

// Balanced routing: every preset's own router (softmax, sigmoid with DeepSeek-V3's groups and a
// correction bias as large as the random layers draw) gives each expert exactly T*K/E rows.
TEST(RoutingGen, BalancedGivesEveryExpertTheSameRowsUnderEveryRouter) {
  for (const ModelPreset& preset : model_presets()) {
    const MoeProblem& p = preset.problem;
    SCOPED_TRACE(std::string(preset.name));
    const int E = p.num_experts, K = p.top_k;
    for (const int64_t T : {int64_t{E}, int64_t{3} * E, int64_t{7}}) {
      SCOPED_TRACE(testing::Message() << "T=" << T);
      Tensor l = Tensor::empty(DType::kF32, {T, E}).value();
      fill_router_logits(l, {.seed = 9, .balanced_top_k = K}, 1);
      Tensor bias = Tensor::empty(DType::kF32, {E}).value();
      for (int e = 0; e < E; ++e) bias.data_as<float>()[e] = (e % 7 - 3) * 0.1f;  // within the random layers' +-0.3
      Tensor ids = Tensor::empty(DType::kI32, {T, K}).value();
      Tensor w = Tensor::empty(DType::kF32, {T, K}).value();
      ASSERT_TRUE(cpu::route(p.routing, E, K, l, p.routing.method == RoutingMethod::kDeepSeekV3 ? bias.view() : TensorView(), ids, w).ok());
      std::vector<int64_t> count(static_cast<size_t>(E), 0);
      for (int64_t i = 0; i < T * K; ++i) ++count[static_cast<size_t>(ids.data_as<int32_t>()[i])];
      const int64_t fewest = *std::min_element(count.begin(), count.end()), most = *std::max_element(count.begin(), count.end());
      if (T * K % E == 0) {
        EXPECT_EQ(fewest, T * K / E);
        EXPECT_EQ(most, T * K / E);
      } else {
        EXPECT_LE(most - fewest, 1);
      }
      // Token t's experts are t*K .. t*K + K - 1 (mod E), whatever order the router lists them in.
      for (int64_t t = 0; t < T; ++t) {
        std::vector<int> got(ids.data_as<int32_t>() + t * K, ids.data_as<int32_t>() + (t + 1) * K), want;
        for (int j = 0; j < K; ++j) want.push_back(static_cast<int>((t * K + j) % E));
        std::sort(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        ASSERT_EQ(got, want) << "token " << t;
      }
    }
  }
}

TEST(RoutingGen, BalancedIgnoresTheSeeds) {
  const Tensor a = logits(8, 16, {.seed = 1, .balanced_top_k = 4}, 1), b = logits(8, 16, {.seed = 2, .balanced_top_k = 4}, 5);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.storage_bytes()), 0);
}

}  // namespace
}  // namespace moekit::bench
