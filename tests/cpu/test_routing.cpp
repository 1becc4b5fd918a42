// Tests for moekit::cpu::route / route_token: every method against a brute-force oracle written
// independently here (full std::sort by (value desc, id asc)), ties, bf16 inputs, a hand-worked
// DeepSeek-V3 example, and every validation error (with a check that nothing was written).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cpu/routing_reference.h"
#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"

namespace moekit {
namespace {

constexpr int32_t kIdSentinel = -7;
constexpr float kWeightSentinel = -123.0f;
constexpr RoutingMethod kAllMethods[] = {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax,
                                         RoutingMethod::kDeepSeekV3, RoutingMethod::kLlama4, RoutingMethod::kTopK};

struct Routed {
  Status status;
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// Runs cpu::route on f32 logits (and an optional f32 bias) with poisoned outputs.
Routed run(const RoutingParams& p, int e, int k, int64_t t, std::vector<float> logits,
           std::vector<float> bias = {}) {
  Routed r;
  r.ids.assign(static_cast<size_t>(t * k), kIdSentinel);
  r.weights.assign(static_cast<size_t>(t * k), kWeightSentinel);
  TensorView lv(logits.data(), DType::kF32, {t, e});
  TensorView bv = bias.empty() ? TensorView() : TensorView(bias.data(), DType::kF32, {static_cast<int64_t>(bias.size())});
  r.status = cpu::route(p, e, k, lv, bv, TensorView(r.ids.data(), DType::kI32, {t, k}),
                        TensorView(r.weights.data(), DType::kF32, {t, k}));
  return r;
}

// A zero bias for kDeepSeekV3 (which requires one), none for the other methods (which reject one).
std::vector<float> zero_bias_for(RoutingMethod m, int e) {
  return m == RoutingMethod::kDeepSeekV3 ? std::vector<float>(static_cast<size_t>(e), 0.0f) : std::vector<float>{};
}

// One token: expects exactly `ids` and `weights` to 1e-6.
void expect_route(const RoutingParams& p, const std::vector<float>& logits, const std::vector<float>& bias,
                  const std::vector<int32_t>& ids, const std::vector<double>& weights) {
  Routed r = run(p, static_cast<int>(logits.size()), static_cast<int>(ids.size()), 1, logits, bias);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.ids, ids);
  for (size_t j = 0; j < weights.size(); ++j) EXPECT_NEAR(r.weights[j], weights[j], 1e-6) << "slot " << j;
}

// ---- The brute-force oracle ------------------------------------------------------------------------
using Scored = std::vector<std::pair<double, int>>;  // (score, id)
void sort_desc(Scored& v) {
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
}
Scored scored(const std::vector<double>& x) {
  Scored v;
  for (int i = 0; i < static_cast<int>(x.size()); ++i) v.emplace_back(x[i], i);
  return v;
}

double naive_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// One token: returns (ids, weights in double).
std::pair<std::vector<int>, std::vector<double>> naive_route(const RoutingParams& p, const std::vector<double>& l,
                                                              const std::vector<double>& bias, int k) {
  const int e = static_cast<int>(l.size());
  std::vector<int> ids;
  std::vector<double> w;
  switch (p.method) {
    case RoutingMethod::kSoftmaxTopK: {
      const double m = *std::max_element(l.begin(), l.end());
      std::vector<double> prob(e);
      double sum = 0;
      for (int i = 0; i < e; ++i) sum += prob[i] = std::exp(l[i] - m);
      for (double& x : prob) x /= sum;
      Scored s = scored(prob);
      sort_desc(s);
      for (int j = 0; j < k; ++j) ids.push_back(s[j].second), w.push_back(s[j].first);
      break;
    }
    case RoutingMethod::kDeepSeekV3: {
      const int per = e / p.n_group;
      std::vector<double> sig(e), b(e);
      for (int i = 0; i < e; ++i) sig[i] = naive_sigmoid(l[i]), b[i] = sig[i] + bias[i];
      Scored groups;
      for (int g = 0; g < p.n_group; ++g) {
        std::vector<double> mine(b.begin() + g * per, b.begin() + (g + 1) * per);
        std::sort(mine.rbegin(), mine.rend());  // descending
        groups.emplace_back(mine[0] + (per > 1 ? mine[1] : 0.0), g);
      }
      sort_desc(groups);
      Scored cand;
      for (int j = 0; j < p.topk_group; ++j)
        for (int i = groups[j].second * per; i < (groups[j].second + 1) * per; ++i) cand.emplace_back(b[i], i);
      sort_desc(cand);
      for (int j = 0; j < k; ++j) ids.push_back(cand[j].second), w.push_back(sig[cand[j].second]);
      break;
    }
    default: {  // kTopKSoftmax, kLlama4, kTopK: the K largest logits
      Scored s = scored(l);
      sort_desc(s);
      double sum = 0;
      for (int j = 0; j < k; ++j) sum += std::exp(s[j].first - s[0].first);
      for (int j = 0; j < k; ++j) {
        const double x = s[j].first;
        ids.push_back(s[j].second);
        if (p.method == RoutingMethod::kTopKSoftmax) w.push_back(std::exp(x - s[0].first) / sum);
        else w.push_back(p.method == RoutingMethod::kLlama4 ? naive_sigmoid(x) : x);
      }
    }
  }
  if (p.renormalize && p.method != RoutingMethod::kTopKSoftmax) {
    double sum = 0;
    for (double x : w) sum += x;
    for (double& x : w) x /= sum;
  }
  return {ids, w};
}

// Checks every token of `r` against the oracle; ids exactly, weights to 1e-6 relative.
void expect_matches_oracle(const RoutingParams& p, int e, int k, int64_t t, const std::vector<float>& logits,
                           const std::vector<float>& bias, const Routed& r) {
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  std::vector<double> b(bias.begin(), bias.end());
  for (int64_t tok = 0; tok < t; ++tok) {
    std::vector<double> row(logits.begin() + tok * e, logits.begin() + (tok + 1) * e);
    auto [ids, w] = naive_route(p, row, b, k);
    for (int j = 0; j < k; ++j) {
      ASSERT_EQ(r.ids[tok * k + j], ids[j]) << "token " << tok << " slot " << j;
      ASSERT_NEAR(r.weights[tok * k + j], w[j], 1e-6 * std::max(std::abs(w[j]), 1e-30)) << "token " << tok << " slot " << j;
    }
  }
}

struct GroupConfig { int n_group, topk_group; };
std::vector<GroupConfig> group_configs(int e) {
  if (e == 1) return {{1, 1}};
  if (e == 8) return {{4, 2}, {8, 3}, {2, 2}, {1, 1}};
  return {{8, 4}, {8, 8}, {16, 1}};  // 8 groups / 4 kept is DeepSeek-V3's own shape at E=256
}

TEST(Routing, EveryMethodMatchesBruteForce) {
  const auto ds = RoutingMethod::kDeepSeekV3;
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> logit_dist(-4.0f, 4.0f), bias_dist(-0.2f, 0.2f);
  // kTopK weights are the scores themselves: positive, so that renormalizing is well conditioned.
  std::uniform_real_distribution<float> score_dist(0.05f, 1.0f);
  for (RoutingMethod m : kAllMethods)
    for (int64_t t : {0, 1, 3, 77})
      for (int e : {1, 8, 64, 256})
        for (int k : {1, 2, 8, e})
          for (GroupConfig g : m == ds ? group_configs(e) : std::vector<GroupConfig>{{0, 0}})
            for (bool renorm : {false, true}) {
              if (k > e || (m == ds && k > g.topk_group * (e / g.n_group))) continue;
              std::vector<float> logits(static_cast<size_t>(t * e)), bias(m == ds ? e : 0);
              for (float& x : logits) x = m == RoutingMethod::kTopK ? score_dist(rng) : logit_dist(rng);
              for (float& x : bias) x = bias_dist(rng);
              RoutingParams p{.method = m, .renormalize = renorm, .n_group = g.n_group, .topk_group = g.topk_group};
              SCOPED_TRACE(testing::Message() << "method=" << static_cast<int>(m) << " T=" << t << " E=" << e
                                              << " K=" << k << " renorm=" << renorm << " n_group=" << g.n_group
                                              << " topk_group=" << g.topk_group);
              expect_matches_oracle(p, e, k, t, logits, bias, run(p, e, k, t, logits, bias));
            }
}

TEST(Routing, AllEqualLogitsChooseTheLowestIds) {
  const int e = 16, k = 4;
  std::vector<float> logits(2 * e, 0.25f);
  for (RoutingMethod m : kAllMethods) {
    RoutingParams p{.method = m, .n_group = 4, .topk_group = 2};
    Routed r = run(p, e, k, 2, logits, zero_bias_for(m, e));
    ASSERT_TRUE(r.status.ok()) << r.status.to_string();
    for (int tok = 0; tok < 2; ++tok)
      for (int j = 0; j < k; ++j) EXPECT_EQ(r.ids[tok * k + j], j) << "method " << static_cast<int>(m);
  }
  // Softmax over 16 equal logits: every p is 1/16; Mixtral's softmax over the 4 chosen: 1/4.
  EXPECT_FLOAT_EQ(run({.method = RoutingMethod::kSoftmaxTopK}, e, k, 2, logits).weights[3], 1.0f / 16);
  EXPECT_FLOAT_EQ(run({.method = RoutingMethod::kTopKSoftmax}, e, k, 2, logits).weights[3], 0.25f);
}

TEST(Routing, DuplicatedValuesBreakTiesByLowerId) {
  // Values 3 at ids 1, 2, 4; value 2 at id 3: order 1, 2, 4, 3, then 5 (value 1), then 0.
  const std::vector<float> logits = {0, 3, 3, 2, 3, 1};
  expect_route({.method = RoutingMethod::kTopK}, logits, {}, {1, 2, 4, 3, 5}, {3, 3, 3, 2, 1});
  // route_token directly (the fused paths call it), with the same ranking for Llama-4.
  const std::vector<double> row = {0, 3, 3, 2, 3, 1};
  std::vector<int32_t> ids(3);
  std::vector<float> w(3);
  cpu::route_token({.method = RoutingMethod::kLlama4}, row, {}, ids, w);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2, 4}));
  EXPECT_FLOAT_EQ(w[0], static_cast<float>(1.0 / (1.0 + std::exp(-3.0))));
  // -0.0 and +0.0 are a tie as well.
  expect_route({.method = RoutingMethod::kTopK}, {-1.0f, -0.0f, 0.0f}, {}, {1, 2}, {0, 0});
}

TEST(Routing, NanLogitsNeverGiveOutOfRangeIds) {
  const float nan = std::nanf("");
  const std::vector<float> logits = {nan, 1.0f, nan, 2.0f, nan, nan, nan, nan};
  for (RoutingMethod m : kAllMethods) {
    RoutingParams p{.method = m, .n_group = 2, .topk_group = 2};
    Routed r = run(p, 8, 4, 1, logits, zero_bias_for(m, 8));
    ASSERT_TRUE(r.status.ok());
    std::vector<int32_t> sorted = r.ids;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_TRUE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()) << "duplicate id";
    for (int32_t id : r.ids) EXPECT_TRUE(id >= 0 && id < 8) << id;
  }
  // With a plain top-k, numbers outrank NaN; NaNs then follow by id.
  EXPECT_EQ(run({.method = RoutingMethod::kTopK}, 8, 4, 1, logits).ids, (std::vector<int32_t>{3, 1, 0, 2}));
}

TEST(Routing, AllTokensToOneExpert) {
  const int e = 64, t = 50;
  std::vector<float> logits(t * e, -1.0f);
  for (int tok = 0; tok < t; ++tok) logits[tok * e + 37] = 5.0f;
  Routed r = run({.method = RoutingMethod::kSoftmaxTopK, .renormalize = true}, e, 1, t, logits);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.ids, std::vector<int32_t>(t, 37));
  EXPECT_EQ(r.weights, std::vector<float>(t, 1.0f));  // p / p is exactly one
}

TEST(Routing, SoftmaxIsStableForHugeLogits) {
  // exp(1000) overflows a double: only a max-subtracted softmax gives finite weights.
  const std::vector<float> logits = {1000.0f, 999.0f, -1000.0f};
  const double w0 = 1.0 / (1.0 + std::exp(-1.0));  // e^1000 / (e^1000 + e^999), the e^-1000 term is negligible
  for (RoutingMethod m : {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax})
    expect_route({.method = m}, logits, {}, {0, 1}, {w0, 1.0 - w0});
}

// s = the sigmoid we want; the logit that gives it.
float logit_of(double s) { return static_cast<float>(std::log(s / (1.0 - s))); }

TEST(Routing, DeepSeekV3WorkedExample) {
  // E = 8 in n_group = 4 groups of 2: {0,1} {2,3} {4,5} {6,7}; keep topk_group = 2; K = 2.
  // Unbiased sigmoid scores s:         0.9 0.1 | 0.6 0.5 | 0.7 0.65 | 0.2 0.3
  const double s[8] = {0.9, 0.1, 0.6, 0.5, 0.7, 0.65, 0.2, 0.3};
  std::vector<float> logits;
  for (double x : s) logits.push_back(logit_of(x));
  RoutingParams p{.method = RoutingMethod::kDeepSeekV3, .renormalize = false, .n_group = 4, .topk_group = 2};

  // No bias: group scores (sum of the two best) 1.0, 1.1, 1.35, 0.5 -> keep groups 2 and 1.
  // Expert 0 has the best single score (0.9) but its group is dropped. Among {2,3,4,5}: 4 (0.7), 5 (0.65).
  expect_route(p, logits, std::vector<float>(8, 0.0f), {4, 5}, {0.7, 0.65});

  // bias[2] = +0.3: b2 = 0.9, group 1 now scores 1.4 > group 2's 1.35; keep groups 1 and 2.
  // Chosen by biased score: 2 (b 0.9), then 4 (b 0.7). Weights are the UNBIASED s: 0.6 and 0.7,
  // so the first slot carries the smaller weight; renormalized: 0.6/1.3 and 0.7/1.3.
  std::vector<float> bias(8, 0.0f);
  bias[2] = 0.3f;
  p.renormalize = true;
  expect_route(p, logits, bias, {2, 4}, {0.6 / 1.3, 0.7 / 1.3});

  // bias[1] = +0.5 instead: b1 = 0.6, group 0 scores 0.9 + 0.6 = 1.5 and is kept with group 2 (1.35).
  // Best biased among {0,1,4,5}: 0 (0.9), 4 (0.7); expert 1 (b 0.6) loses to 4. Renormalized: 0.9/1.6, 0.7/1.6.
  bias = std::vector<float>(8, 0.0f);
  bias[1] = 0.5f;
  expect_route(p, logits, bias, {0, 4}, {0.9 / 1.6, 0.7 / 1.6});
}

TEST(Routing, Bf16LogitsMatchTheSameValuesInF32) {
  const int e = 64, k = 8, t = 9;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-3.0, 3.0);
  std::vector<uint16_t> logits16(t * e), bias16(e);
  std::vector<float> logits32(t * e), bias32(e);
  // Random values stored as bf16; the f32 copies hold the same values (bf16 is a subset of f32).
  const auto fill = [&](std::vector<uint16_t>& b16, std::vector<float>& f32, double scale) {
    for (size_t i = 0; i < b16.size(); ++i) {
      store_element(b16.data(), DType::kBF16, static_cast<int64_t>(i), dist(rng) * scale);
      f32[i] = static_cast<float>(load_element(b16.data(), DType::kBF16, static_cast<int64_t>(i)));
    }
  };
  fill(logits16, logits32, 1.0);
  fill(bias16, bias32, 0.05);
  for (RoutingMethod m : kAllMethods) {
    const bool ds = m == RoutingMethod::kDeepSeekV3;
    RoutingParams p{.method = m, .renormalize = true, .n_group = 8, .topk_group = 4};
    Routed want = run(p, e, k, t, logits32, ds ? bias32 : std::vector<float>{});
    std::vector<int32_t> ids(t * k, kIdSentinel);
    std::vector<float> w(t * k, kWeightSentinel);
    TensorView bv = ds ? TensorView(bias16.data(), DType::kBF16, {e}) : TensorView();
    ASSERT_TRUE(cpu::route(p, e, k, TensorView(logits16.data(), DType::kBF16, {t, e}), bv,
                           TensorView(ids.data(), DType::kI32, {t, k}), TensorView(w.data(), DType::kF32, {t, k})).ok());
    EXPECT_EQ(ids, want.ids) << "method " << static_cast<int>(m);
    EXPECT_EQ(w, want.weights) << "method " << static_cast<int>(m);
  }
}

// ---- Validation ------------------------------------------------------------------------------------
// A valid call (T = 3, E = 8, K = 2) over its own buffers, outputs poisoned so that a write would show.
// Each validation case breaks one thing.
struct Case {
  std::vector<float> f32 = std::vector<float>(64, 0.5f), w_buf = std::vector<float>(64, kWeightSentinel);
  std::vector<int32_t> i32 = std::vector<int32_t>(64, 0), ids_buf = std::vector<int32_t>(64, kIdSentinel);
  std::vector<uint16_t> u16 = std::vector<uint16_t>(64, 0);
  RoutingParams p;
  int e = 8, k = 2;
  TensorView logits{f32.data(), DType::kF32, {3, 8}};
  TensorView bias, ids{ids_buf.data(), DType::kI32, {3, 2}}, weights{w_buf.data(), DType::kF32, {3, 2}};

  explicit Case(RoutingMethod m) : p{.method = m, .n_group = 4, .topk_group = 2} {
    if (m == RoutingMethod::kDeepSeekV3) bias = TensorView(f32.data(), DType::kF32, {8});
  }
  Case(const Case&) = delete;  // the views point into this object's buffers
  Status route() const { return cpu::route(p, e, k, logits, bias, ids, weights); }
};

template <typename Mutate>
void expect_error(RoutingMethod m, Mutate mutate, const std::string& message) {
  Case c(m);
  mutate(c);
  Status s = c.route();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), message);
  for (int32_t x : c.ids_buf) ASSERT_EQ(x, kIdSentinel) << message;
  for (float x : c.w_buf) ASSERT_EQ(x, kWeightSentinel) << message;
}

TEST(Routing, ValidationErrorsNameTheFieldAndWriteNothing) {
  const auto sm = RoutingMethod::kSoftmaxTopK;
  const auto ds = RoutingMethod::kDeepSeekV3;
  EXPECT_TRUE(Case(sm).route().ok());  // sanity: the unbroken cases are valid
  EXPECT_TRUE(Case(ds).route().ok());
  const auto strided = [](void* data, DType t, std::array<int64_t, 2> shape, std::array<int64_t, 2> strides) {
    return TensorView::create(data, t, shape, strides).value();
  };
  expect_error(sm, [](Case& c) { c.p.method = static_cast<RoutingMethod>(9); }, "routing method=9 is unknown");
  expect_error(sm, [](Case& c) { c.e = 0; }, "num_experts=0 must be >= 1");
  expect_error(sm, [](Case& c) { c.k = 0; }, "top_k=0 must be >= 1");
  expect_error(sm, [](Case& c) { c.k = 9; }, "top_k=9 exceeds num_experts=8");
  expect_error(sm, [](Case& c) { c.logits = TensorView(c.u16.data(), DType::kF16, {3, 8}); },
               "logits: dtype f16 is not one of f32, bf16");
  expect_error(sm, [](Case& c) { c.logits = TensorView(c.f32.data(), DType::kF32, {3, 7}); },
               "logits: shape [3, 7] does not match [T, 8] (num_experts=8)");
  expect_error(sm, [](Case& c) { c.logits = TensorView(c.f32.data(), DType::kF32, {24}); },
               "logits: shape [24] does not match [T, 8] (num_experts=8)");
  expect_error(sm, [&](Case& c) { c.logits = strided(c.f32.data(), DType::kF32, {3, 8}, {16, 1}); },
               "logits: f32[3, 8] cpu with strides [16, 1] is not contiguous");
  expect_error(sm, [](Case& c) { c.logits = TensorView(c.f32.data(), DType::kF32, {3, 8}, Device::cuda(0)); },
               "logits: f32[3, 8] cuda:0 is not a host (cpu) tensor, which the CPU reference needs");
  expect_error(sm, [](Case& c) { c.logits = TensorView(); },
               "logits: required but not given (expected [T, 8] (num_experts=8))");
  expect_error(sm, [](Case& c) { c.ids = TensorView(c.f32.data(), DType::kF32, {3, 2}); }, "topk_ids: dtype f32 does not match i32");
  expect_error(sm, [](Case& c) { c.ids = TensorView(c.ids_buf.data(), DType::kI32, {3, 3}); },
               "topk_ids: shape [3, 3] does not match [3, 2] (T=3, top_k=2)");
  expect_error(sm, [](Case& c) { c.ids = TensorView(c.ids_buf.data(), DType::kI32, {3, 2}, Device::cuda(0)); },
               "topk_ids: i32[3, 2] cuda:0 is not a host (cpu) tensor, which the CPU reference needs");
  expect_error(sm, [&](Case& c) { c.ids = strided(c.ids_buf.data(), DType::kI32, {3, 2}, {1, 3}); },
               "topk_ids: i32[3, 2] cpu with strides [1, 3] is not contiguous");
  expect_error(sm, [](Case& c) { c.weights = TensorView(c.u16.data(), DType::kBF16, {3, 2}); },
               "topk_weights: dtype bf16 does not match f32");
  expect_error(sm, [](Case& c) { c.weights = TensorView(c.w_buf.data(), DType::kF32, {2, 2}); },
               "topk_weights: shape [2, 2] does not match [3, 2] (T=3, top_k=2)");
  expect_error(sm, [&](Case& c) { c.weights = strided(c.w_buf.data(), DType::kF32, {3, 2}, {4, 1}); },
               "topk_weights: f32[3, 2] cpu with strides [4, 1] is not contiguous");
  expect_error(sm, [](Case& c) { c.weights = TensorView(c.w_buf.data(), DType::kF32, {3, 2}, Device::cuda(0)); },
               "topk_weights: f32[3, 2] cuda:0 is not a host (cpu) tensor, which the CPU reference needs");
  // A bias for a method that does not use it would be silently ignored: rejected instead.
  expect_error(sm, [](Case& c) { c.bias = TensorView(c.f32.data(), DType::kF32, {8}); },
               "correction_bias: f32[8] cpu is given but routing method softmax_topk does not use it");
  // DeepSeek-V3 grouping and bias.
  expect_error(ds, [](Case& c) { c.p.n_group = 0; }, "n_group=0 must be >= 1");
  expect_error(ds, [](Case& c) { c.p.n_group = 3; }, "n_group=3 does not divide num_experts=8");
  expect_error(ds, [](Case& c) { c.p.topk_group = 0; }, "topk_group=0 must be in [1, n_group=4]");
  expect_error(ds, [](Case& c) { c.p.topk_group = 5; }, "topk_group=5 must be in [1, n_group=4]");
  expect_error(ds, [](Case& c) { c.k = 5; }, "top_k=5 exceeds the 4 experts of topk_group=2 groups of 2");
  expect_error(ds, [](Case& c) { c.bias = TensorView(); }, "correction_bias: required but not given (expected [8] (num_experts=8) for routing method deepseek_v3)");
  expect_error(ds, [](Case& c) { c.bias = TensorView(c.f32.data(), DType::kF32, {7}); },
               "correction_bias: shape [7] does not match [8] (num_experts=8) for routing method deepseek_v3");
  expect_error(ds, [](Case& c) { c.bias = TensorView(c.i32.data(), DType::kI32, {8}); },
               "correction_bias: dtype i32 is not one of f32, bf16");
  expect_error(ds, [](Case& c) { c.bias = TensorView(c.f32.data(), DType::kF32, {8}, Device::cuda(0)); },
               "correction_bias: f32[8] cuda:0 is not a host (cpu) tensor, which the CPU reference needs");
}

}  // namespace
}  // namespace moekit
