// cpu::run_reference against tests/cpu/naive_moe.h, an independent per-token float64 layer, for every
// option of moekit/moe_problem.h (QuantScheme::kNone), plus hand-checkable exact cases and bad input.
// Every output is poisoned (NaN) before a run; the test checks that it is fully written, and that
// rows which must stay untouched (Masked format) and outputs of rejected calls still hold the poison.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cpu/layer_tensors.h"
#include "cpu/naive_moe.h"
#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"
#include "moekit/moe_problem.h"
#include "moekit/tensor.h"

namespace moekit {
namespace {

constexpr DType kF32 = DType::kF32;
constexpr DType kBF16 = DType::kBF16;
constexpr DType kF16 = DType::kF16;
constexpr DType kI32 = DType::kI32;

using test::count_poison;
using test::fill;
using test::from_values;
using test::is_poison;
using test::make;
using test::poison;
using test::value_at;


// Distance in units in the last place between two 16-bit float encodings (same sign convention).
int ulp_distance16(uint16_t a, uint16_t b) {
  auto ordered = [](uint16_t x) { return (x & 0x8000) ? -static_cast<int>(x & 0x7FFF) : static_cast<int>(x); };
  return std::abs(ordered(a) - ordered(b));
}

// Compares `got` (f32: |d| <= 1e-6 or |d| <= 1e-5 |want|; bf16/f16: <= 1 ulp of the correctly rounded
// `want`) element by element. A NaN in `want` means "must still hold the poison".
void expect_matches(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  int reported = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double w = want[static_cast<size_t>(i)];
    bool ok;
    std::string detail;
    if (std::isnan(w)) {
      ok = is_poison(got, i);
      if (!ok) detail = "must be untouched (poison) but holds " + std::to_string(value_at(got, i));
    } else if (is_poison(got, i)) {
      ok = false;
      detail = "never written (still poison), expected " + std::to_string(w);
    } else if (got.dtype() == kF32) {
      const double g = value_at(got, i);
      const double d = std::abs(g - w);
      ok = std::isfinite(g) && (d <= 1e-6 || d <= 1e-5 * std::abs(w));
      char buf[160];
      std::snprintf(buf, sizeof buf, "got %.9g expected %.12g (abs err %.3g, rel %.3g)", g, w, d, d / std::abs(w));
      detail = buf;
    } else {
      const uint16_t g = got.data_as<uint16_t>()[i];
      const uint16_t e = got.dtype() == kBF16 ? encode_bf16(w) : encode_f16(w);
      ok = ulp_distance16(g, e) <= 1;
      char buf[160];
      std::snprintf(buf, sizeof buf, "got 0x%04x (%.6g) expected 0x%04x (exact %.9g), %d ulp", g, value_at(got, i), e,
                    w, ulp_distance16(g, e));
      detail = buf;
    }
    if (!ok) {
      ++bad;
      if (reported++ < 6) ADD_FAILURE() << what << ": element " << i << ": " << detail;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.numel() << " elements differ";
}

// ---- A layer call with random data ----------------------------------------------------------------

struct Spec {
  MoeProblem p;
  int T = 3;
  bool bias13 = false;
  bool bias2 = false;
  DType bias_dtype = kF32;
  DType logits_dtype = kF32;
  std::vector<int32_t> expert_map;            // empty: none
  std::vector<std::vector<int>> pre_ids;      // kPreRouted: explicit ids per token (empty: random)
  int max_m = 5;                              // kMasked
  std::vector<int32_t> masked_m;              // kMasked (empty: random in [0, max_m])
  int indexed_empty_expert = -1;              // kIndexed: a local expert that gets no rows
  bool topk_outputs = true;                   // kStandard: also request outputs.topk_ids/weights
  uint32_t seed = 1;
};

struct Layer {
  MoeProblem p;
  Tensor w13, w2, b13, b2, emap;
  Tensor hidden, logits, corr_bias, topk_ids, topk_weights, masked_m, offsets, gather, row_weights;
  Tensor out, out_ids, out_weights;

  MoeWeights weights() const {
    MoeWeights w;
    w.w13 = w13.view();
    w.w2 = w2.view();
    w.w13_bias = b13.view();
    w.w2_bias = b2.view();
    w.expert_map = emap.view();
    return w;
  }
  MoeInputs inputs() const {
    MoeInputs in;
    in.hidden = hidden.view();
    in.router_logits = logits.view();
    in.e_score_correction_bias = corr_bias.view();
    in.topk_ids = topk_ids.view();
    in.topk_weights = topk_weights.view();
    in.masked_m = masked_m.view();
    in.expert_offsets = offsets.view();
    in.gather_index = gather.view();
    in.row_weights = row_weights.view();
    return in;
  }
  MoeOutputs outputs() const {
    MoeOutputs o;
    o.out = out.view();
    o.topk_ids = out_ids.view();
    o.topk_weights = out_weights.view();
    return o;
  }
};

Layer build(const Spec& s) {
  Layer L;
  L.p = s.p;
  const MoeProblem& p = s.p;
  const int E = p.num_experts, K = p.top_k, H = p.hidden, I = p.intermediate, T = s.T;
  const int EL = p.local_experts();
  const DType act = p.activation_dtype;
  std::mt19937 rng(s.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);

  // Weights scaled by 1/sqrt(fan_in) so every intermediate and output value stays O(1).
  L.w13 = make(act, {EL, p.gemm1_rows(), H});
  fill(L.w13, [&](int64_t) { return normal(rng) / std::sqrt(static_cast<double>(H)); });
  L.w2 = make(act, {EL, H, I});
  fill(L.w2, [&](int64_t) { return normal(rng) / std::sqrt(static_cast<double>(I)); });
  if (s.bias13) {
    L.b13 = make(s.bias_dtype, {EL, p.gemm1_rows()});
    fill(L.b13, [&](int64_t) { return 0.5 * normal(rng); });
  }
  if (s.bias2) {
    L.b2 = make(s.bias_dtype, {EL, H});
    fill(L.b2, [&](int64_t) { return 0.5 * normal(rng); });
  }
  if (!s.expert_map.empty()) {
    L.emap = make(kI32, {E});
    fill(L.emap, [&](int64_t i) { return s.expert_map[static_cast<size_t>(i)]; });
  }

  switch (p.input_format) {
    case InputFormat::kStandard: {
      L.hidden = make(act, {T, H});
      fill(L.hidden, [&](int64_t) { return normal(rng); });
      L.logits = make(s.logits_dtype, {T, E});
      if (p.routing.method == RoutingMethod::kTopK)  // scores, e.g. already through a sigmoid: positive
        fill(L.logits, [&](int64_t) { return 0.05 + uniform(rng); });
      else
        fill(L.logits, [&](int64_t) { return 1.5 * normal(rng); });
      if (p.routing.method == RoutingMethod::kDeepSeekV3) {
        L.corr_bias = make(s.logits_dtype, {E});
        fill(L.corr_bias, [&](int64_t) { return 0.3 * normal(rng); });
      }
      if (s.topk_outputs) {
        L.out_ids = make(kI32, {T, K});
        L.out_weights = make(kF32, {T, K});
      }
      L.out = make(act, p.no_combine ? std::vector<int64_t>{T, K, H} : std::vector<int64_t>{T, H});
      break;
    }
    case InputFormat::kPreRouted: {
      L.hidden = make(act, {T, H});
      fill(L.hidden, [&](int64_t) { return normal(rng); });
      L.topk_ids = make(kI32, {T, K});
      L.topk_weights = make(kF32, {T, K});
      for (int t = 0; t < T; ++t) {
        std::vector<int> ids;
        if (!s.pre_ids.empty()) {
          ids = s.pre_ids[static_cast<size_t>(t)];
        } else {
          std::vector<int> perm(E);
          std::iota(perm.begin(), perm.end(), 0);
          std::shuffle(perm.begin(), perm.end(), rng);
          ids.assign(perm.begin(), perm.begin() + K);
        }
        for (int k = 0; k < K; ++k) {
          store_element(L.topk_ids.data(), kI32, t * K + k, ids[static_cast<size_t>(k)]);
          store_element(L.topk_weights.data(), kF32, t * K + k, 0.1 + 0.9 * uniform(rng));
        }
      }
      L.out = make(act, p.no_combine ? std::vector<int64_t>{T, K, H} : std::vector<int64_t>{T, H});
      break;
    }
    case InputFormat::kMasked: {
      L.hidden = make(act, {EL, s.max_m, H});
      fill(L.hidden, [&](int64_t) { return normal(rng); });
      L.masked_m = make(kI32, {EL});
      for (int e = 0; e < EL; ++e) {
        const int m = s.masked_m.empty() ? static_cast<int>(rng() % static_cast<uint32_t>(s.max_m + 1))
                                         : s.masked_m[static_cast<size_t>(e)];
        store_element(L.masked_m.data(), kI32, e, m);
      }
      L.out = make(act, {EL, s.max_m, H});
      break;
    }
    case InputFormat::kIndexed: {
      L.hidden = make(act, {T, H});
      fill(L.hidden, [&](int64_t) { return normal(rng); });
      // Each token, with probability 0.8, goes to min(K, EL) distinct local experts.
      std::vector<std::vector<std::pair<int, double>>> rows_of(static_cast<size_t>(EL));
      std::vector<int> candidates;
      for (int e = 0; e < EL; ++e)
        if (e != s.indexed_empty_expert) candidates.push_back(e);
      const int per_token = std::min<int>(K, static_cast<int>(candidates.size()));
      for (int t = 0; t < T; ++t) {
        if (uniform(rng) >= 0.8) continue;
        std::shuffle(candidates.begin(), candidates.end(), rng);
        for (int k = 0; k < per_token; ++k) rows_of[candidates[k]].push_back({t, 0.1 + 0.9 * uniform(rng)});
      }
      std::vector<double> off{0}, gather, rw;
      for (int e = 0; e < EL; ++e) {
        for (auto [t, w] : rows_of[e]) {
          gather.push_back(t);
          rw.push_back(w);
        }
        off.push_back(static_cast<double>(gather.size()));
      }
      const int64_t R = static_cast<int64_t>(gather.size());
      L.offsets = from_values(kI32, {EL + 1}, off);
      L.gather = from_values(kI32, {R}, gather);
      L.row_weights = from_values(kF32, {R}, rw);
      L.out = make(act, {T, H});
      break;
    }
  }
  return L;
}

// Poisons the outputs, runs cpu::run_reference, and compares with naive::run (and with the naive
// routing for outputs.topk_ids / topk_weights). `expected` receives the naive result.
void run_and_compare(Layer& L, const std::string& what, std::vector<double>* expected = nullptr) {
  SCOPED_TRACE(what);
  poison(L.out);
  poison(L.out_ids);
  poison(L.out_weights);
  const Status st = cpu::run_reference(L.p, L.weights(), L.inputs(), L.outputs());
  ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
  const std::vector<double> want = naive::run(L.p, L.weights(), L.inputs());
  ASSERT_NO_FATAL_FAILURE(expect_matches(L.out, want, what + " [out]"));
  if (L.out_ids.data() != nullptr && L.p.input_format == InputFormat::kStandard) {
    const auto routes = naive::routes(L.p, L.inputs());
    const int K = L.p.top_k;
    for (size_t t = 0; t < routes.size(); ++t) {
      for (int k = 0; k < K; ++k) {
        const int64_t i = static_cast<int64_t>(t) * K + k;
        EXPECT_EQ(L.out_ids.data_as<int32_t>()[i], routes[t].ids[k]) << what << ": topk_ids[" << t << "][" << k << "]";
        const double g = L.out_weights.data_as<float>()[i], w = routes[t].weights[k];
        EXPECT_NEAR(g, w, 1e-6 + 1e-6 * std::abs(w)) << what << ": topk_weights[" << t << "][" << k << "]";
      }
    }
  }
  if (expected) *expected = want;
}

MoeProblem small_problem(int E = 8, int K = 2, int H = 40, int I = 24) {
  MoeProblem p;
  p.num_experts = E;
  p.top_k = K;
  p.hidden = H;
  p.intermediate = I;
  p.activation_dtype = kF32;
  return p;
}

const char* method_name(RoutingMethod m) {
  switch (m) {
    case RoutingMethod::kSoftmaxTopK: return "SoftmaxTopK";
    case RoutingMethod::kTopKSoftmax: return "TopKSoftmax";
    case RoutingMethod::kDeepSeekV3: return "DeepSeekV3";
    case RoutingMethod::kLlama4: return "Llama4";
    case RoutingMethod::kTopK: return "TopK";
  }
  return "?";
}

const char* act_label(Activation a) {
  switch (a) {
    case Activation::kSwiGLU: return "SwiGLU";
    case Activation::kGeGLU: return "GeGLU";
    case Activation::kGeGLUTanh: return "GeGLUTanh";
    case Activation::kSwiGLUClamped: return "SwiGLUClamped";
    case Activation::kReLU2: return "ReLU2";
    case Activation::kSiLU: return "SiLU";
    case Activation::kGeLU: return "GeLU";
    case Activation::kReLU: return "ReLU";
    case Activation::kIdentity: return "Identity";
  }
  return "?";
}

Spec valid_spec_for_empty_batch() {
  Spec s;
  s.p = small_problem();
  s.T = 0;
  s.topk_outputs = false;
  s.seed = 99;
  return s;
}

constexpr RoutingMethod kAllMethods[] = {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax,
                                         RoutingMethod::kDeepSeekV3, RoutingMethod::kLlama4, RoutingMethod::kTopK};
constexpr Activation kAllActivations[] = {Activation::kSwiGLU, Activation::kGeGLU,  Activation::kGeGLUTanh,
                                          Activation::kSwiGLUClamped, Activation::kReLU2, Activation::kSiLU,
                                          Activation::kGeLU,   Activation::kReLU,  Activation::kIdentity};

// ---- The naive oracle itself (sanity checks of the test helper) -----------------------------------

TEST(NaiveOracle, PickTopBreaksTiesTowardLowerIdAndRoutesByHand) {
  EXPECT_EQ(naive::pick_top({1, 3, 3, 2, 3}, 3, std::vector<bool>(5, true)), (std::vector<int>{1, 2, 4}));
  RoutingParams rp;
  rp.method = RoutingMethod::kTopKSoftmax;
  const auto r = naive::route_token(rp, 2, {0.0, std::log(3.0), 0.0, -5.0}, {});
  EXPECT_EQ(r.ids, (std::vector<int>{1, 0}));
  EXPECT_NEAR(r.weights[0], 0.75, 1e-15);
  EXPECT_NEAR(r.weights[1], 0.25, 1e-15);
  // DeepSeek: groups {0,1},{2,3},{4,5}; biased b = sigmoid(0) + bias = 0.5 + bias.
  rp = RoutingParams{};
  rp.method = RoutingMethod::kDeepSeekV3;
  rp.n_group = 3;
  rp.topk_group = 1;
  const auto d = naive::route_token(rp, 2, std::vector<double>(6, 0.0), {0.0, 0.0, 0.4, -0.3, 0.1, 0.1});
  // Group sums: 1.0, 1.1, 1.2 -> group 2 only; experts 4, 5 (tie -> 4 first); weights s = 0.5 each.
  EXPECT_EQ(d.ids, (std::vector<int>{4, 5}));
  EXPECT_DOUBLE_EQ(d.weights[0], 0.5);
}

// ---- Routing methods through the kStandard format ----------------------------------------------------

TEST(MoeReferenceVsNaive, EveryRoutingMethodWithAndWithoutRenormalizeStandardFormat) {
  uint32_t seed = 100;
  for (RoutingMethod m : kAllMethods) {
    for (bool renorm : {false, true}) {
      for (int T : {0, 1, 3, 77}) {
        Spec s;
        s.p = small_problem();
        s.p.routing.method = m;
        s.p.routing.renormalize = renorm;
        if (m == RoutingMethod::kDeepSeekV3) {
          s.p.routing.n_group = 4;
          s.p.routing.topk_group = 2;
        }
        s.T = T;
        s.seed = ++seed;
        Layer L = build(s);
        run_and_compare(L, std::string(method_name(m)) + (renorm ? " renormalize" : "") + " T=" + std::to_string(T));
      }
    }
  }
}

TEST(MoeReferenceVsNaive, DeepSeekV3GroupedTopKWithFourExpertsPerGroupAndScaling) {
  // E=16 in 4 groups of 4 (so "sum of the two largest" differs from the group sum), keep 2, K=4.
  uint32_t seed = 200;
  for (int topk_group : {1, 2, 4}) {
    for (bool renorm : {false, true}) {
      Spec s;
      s.p = small_problem(16, 4);
      s.p.routing.method = RoutingMethod::kDeepSeekV3;
      s.p.routing.n_group = 4;
      s.p.routing.topk_group = topk_group;
      s.p.routing.renormalize = renorm;
      s.p.routing.routed_scaling_factor = 2.5f;
      s.T = 77;
      s.seed = ++seed;
      Layer L = build(s);
      run_and_compare(L, "DeepSeekV3 E=16 n_group=4 topk_group=" + std::to_string(topk_group) +
                             (renorm ? " renormalize" : ""));
    }
  }
}

TEST(MoeReferenceVsNaive, DeepSeekV3WithoutGrouping) {
  Spec s;
  s.p = small_problem();
  s.p.routing.method = RoutingMethod::kDeepSeekV3;
  s.p.routing.n_group = 1;
  s.p.routing.topk_group = 1;
  s.p.routing.renormalize = true;
  s.T = 77;
  s.seed = 250;
  Layer L = build(s);
  run_and_compare(L, "DeepSeekV3 n_group=1");
}

TEST(MoeReferenceVsNaive, Bf16RouterLogitsAndCorrectionBias) {
  uint32_t seed = 300;
  for (RoutingMethod m : kAllMethods) {
    Spec s;
    s.p = small_problem();
    s.p.routing.method = m;
    s.p.routing.renormalize = true;
    if (m == RoutingMethod::kDeepSeekV3) {
      s.p.routing.n_group = 2;
      s.p.routing.topk_group = 1;
    }
    s.logits_dtype = kBF16;
    s.T = 77;
    s.seed = ++seed;
    Layer L = build(s);
    run_and_compare(L, std::string(method_name(m)) + " bf16 logits");
  }
}

TEST(MoeReferenceVsNaive, RoutingTiesGoToTheLowerExpertId) {
  // All logits equal: every method must pick experts 0 and 1.
  for (RoutingMethod m : kAllMethods) {
    Spec s;
    s.p = small_problem();
    s.p.routing.method = m;
    if (m == RoutingMethod::kDeepSeekV3) {
      s.p.routing.n_group = 4;
      s.p.routing.topk_group = 2;
    }
    s.T = 3;
    s.seed = 350;
    Layer L = build(s);
    fill(L.logits, [](int64_t) { return 0.5; });
    if (L.corr_bias.data()) fill(L.corr_bias, [](int64_t) { return 0.0; });
    run_and_compare(L, std::string(method_name(m)) + " equal logits");
    for (int t = 0; t < 3; ++t) {
      EXPECT_EQ(L.out_ids.data_as<int32_t>()[t * 2 + 0], 0) << method_name(m);
      EXPECT_EQ(L.out_ids.data_as<int32_t>()[t * 2 + 1], 1) << method_name(m);
    }
  }
}

TEST(MoeReferenceVsNaive, TopKEqualsNumExperts) {
  uint32_t seed = 400;
  for (RoutingMethod m : kAllMethods) {
    Spec s;
    s.p = small_problem(4, 4);
    s.p.routing.method = m;
    s.p.routing.renormalize = m != RoutingMethod::kLlama4;
    if (m == RoutingMethod::kDeepSeekV3) {
      s.p.routing.n_group = 2;
      s.p.routing.topk_group = 2;
    }
    s.T = 77;
    s.seed = ++seed;
    Layer L = build(s);
    run_and_compare(L, std::string(method_name(m)) + " K=E=4");
  }
}

TEST(MoeReferenceVsNaive, SingleExpertTopOne) {
  uint32_t seed = 450;
  for (RoutingMethod m : {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax, RoutingMethod::kLlama4,
                          RoutingMethod::kTopK}) {
    for (int T : {0, 1, 77}) {
      Spec s;
      s.p = small_problem(1, 1);
      s.p.routing.method = m;
      s.T = T;
      s.seed = ++seed;
      Layer L = build(s);
      run_and_compare(L, std::string(method_name(m)) + " E=1 K=1 T=" + std::to_string(T));
    }
  }
}

TEST(MoeReferenceVsNaive, EmptyBatchWithNullDataPointers) {
  // A zero-token batch may come with null data (as torch.empty(0, H) can): still a valid call.
  Layer L = build(valid_spec_for_empty_batch());
  MoeInputs in = L.inputs();
  in.hidden = TensorView(nullptr, kF32, {0, 40});
  in.router_logits = TensorView(nullptr, kF32, {0, 8});
  MoeOutputs o;
  o.out = TensorView(nullptr, kF32, {0, 40});
  const Status st = cpu::run_reference(L.p, L.weights(), in, o);
  EXPECT_TRUE(st.ok()) << st.to_string();
}

// ---- Activations, layouts, biases ------------------------------------------------------------------

TEST(MoeReferenceVsNaive, EveryActivationBothGateUpLayoutsBiasesOnAndOff) {
  uint32_t seed = 500;
  for (Activation a : kAllActivations) {
    const bool gated = activation_is_gated(a);
    for (GateUpLayout layout : {GateUpLayout::kConcatenated, GateUpLayout::kInterleaved}) {
      if (!gated && layout == GateUpLayout::kInterleaved) continue;
      for (int bias : {0, 1, 2, 3}) {
        Spec s;
        s.p = small_problem();
        s.p.activation.kind = a;
        s.p.gate_up_layout = layout;
        s.bias13 = bias & 1;
        s.bias2 = bias & 2;
        s.T = 77;
        s.seed = ++seed;
        Layer L = build(s);
        run_and_compare(L, std::string(act_label(a)) +
                               (layout == GateUpLayout::kInterleaved ? " interleaved" : " concatenated") +
                               " b13=" + std::to_string(bias & 1) + " b2=" + std::to_string((bias >> 1) & 1));
      }
    }
  }
}

TEST(MoeReferenceVsNaive, SwiGLUClampedLimitAndAlphaAreHonoured) {
  // Large pre-activations so the clamp is active for most elements; non-default alpha and limit.
  uint32_t seed = 600;
  for (GateUpLayout layout : {GateUpLayout::kConcatenated, GateUpLayout::kInterleaved}) {
    for (auto [alpha, limit] : {std::pair{1.702f, 7.0f}, std::pair{0.5f, 1.25f}, std::pair{2.0f, 0.75f}}) {
      Spec s;
      s.p = small_problem();
      s.p.activation.kind = Activation::kSwiGLUClamped;
      s.p.activation.alpha = alpha;
      s.p.activation.limit = limit;
      s.p.gate_up_layout = layout;
      s.bias13 = true;
      s.T = 77;
      s.seed = ++seed;
      Layer L = build(s);
      fill(L.b13, [&](int64_t i) { return (i % 3 == 0 ? 4.0 : -3.0) * (1.0 + 0.01 * static_cast<double>(i % 7)); });
      run_and_compare(L, std::string("SwiGLUClamped alpha=") + std::to_string(alpha) + " limit=" +
                             std::to_string(limit) + (layout == GateUpLayout::kInterleaved ? " interleaved" : ""));
    }
  }
}

TEST(MoeReferenceVsNaive, BiasesInActivationDtype) {
  Spec s;
  s.p = small_problem();
  s.p.activation_dtype = kBF16;
  s.bias13 = s.bias2 = true;
  s.bias_dtype = kBF16;
  s.T = 77;
  s.seed = 650;
  Layer L = build(s);
  run_and_compare(L, "bf16 activations with bf16 biases");
}

// ---- Input formats -----------------------------------------------------------------------------------

TEST(MoeReferenceVsNaive, PreRoutedFormat) {
  uint32_t seed = 700;
  for (int T : {0, 1, 3, 77}) {
    for (Activation a : {Activation::kSwiGLU, Activation::kReLU2}) {
      Spec s;
      s.p = small_problem();
      s.p.input_format = InputFormat::kPreRouted;
      s.p.activation.kind = a;
      s.bias13 = s.bias2 = true;
      s.T = T;
      s.seed = ++seed;
      Layer L = build(s);
      run_and_compare(L, std::string("PreRouted ") + act_label(a) + " T=" + std::to_string(T));
    }
  }
}

TEST(MoeReferenceVsNaive, PreRoutedWithRoutedScalingFactor) {
  Spec s;
  s.p = small_problem();
  s.p.input_format = InputFormat::kPreRouted;
  s.p.routing.routed_scaling_factor = 2.5f;
  s.T = 77;
  s.seed = 720;
  Layer L = build(s);
  run_and_compare(L, "PreRouted routed_scaling_factor=2.5");
}

TEST(MoeReferenceVsNaive, PreRoutedAllTokensOnOneExpertAndExpertsWithoutTokens) {
  // K=1: every token on expert 5 (experts 0-4, 6, 7 get nothing); K=2: every token on {5, 2}.
  for (int K : {1, 2}) {
    Spec s;
    s.p = small_problem(8, K);
    s.p.input_format = InputFormat::kPreRouted;
    s.T = 77;
    s.bias2 = true;
    s.pre_ids.assign(77, K == 1 ? std::vector<int>{5} : std::vector<int>{5, 2});
    s.seed = 730 + static_cast<uint32_t>(K);
    Layer L = build(s);
    run_and_compare(L, "all tokens on expert 5, K=" + std::to_string(K));
  }
}

TEST(MoeReferenceVsNaive, StandardFormatWithAnExpertThatGetsNoTokens) {
  Spec s;
  s.p = small_problem();
  s.T = 77;
  s.seed = 740;
  Layer L = build(s);
  // Expert 3 never wins: its logit is far below the others.
  for (int t = 0; t < 77; ++t) store_element(L.logits.data(), kF32, t * 8 + 3, -50.0);
  run_and_compare(L, "expert 3 unused");
  for (int i = 0; i < 77 * 2; ++i) EXPECT_NE(L.out_ids.data_as<int32_t>()[i], 3);
}

TEST(MoeReferenceVsNaive, MaskedFormatLeavesRowsBeyondMaskedMUntouched) {
  uint32_t seed = 800;
  struct MaskedCase {
    int EL, max_m;
    std::vector<int32_t> m;
    Activation act;
  };
  const MaskedCase cases[] = {
      {8, 5, {0, 5, 3, 1, 5, 0, 2, 4}, Activation::kSwiGLU},
      {8, 7, {}, Activation::kGeGLU},  // random masked_m
      {1, 4, {4}, Activation::kSwiGLUClamped},
      {1, 4, {0}, Activation::kSwiGLU},
      {3, 1, {1, 0, 1}, Activation::kReLU2},
      {4, 0, {0, 0, 0, 0}, Activation::kSwiGLU},
  };
  for (const auto& c : cases) {
    for (bool bias : {false, true}) {
      Spec s;
      s.p = small_problem(c.EL, 1);
      s.p.input_format = InputFormat::kMasked;
      s.p.activation.kind = c.act;
      s.p.routing.routed_scaling_factor = 1.0f;
      s.bias13 = s.bias2 = bias;
      s.max_m = c.max_m;
      s.masked_m = c.m;
      s.seed = ++seed;
      Layer L = build(s);
      run_and_compare(L, "Masked EL=" + std::to_string(c.EL) + " max_m=" + std::to_string(c.max_m) + " " +
                             act_label(c.act) + (bias ? " biases" : ""));
    }
  }
}

TEST(MoeReferenceVsNaive, MaskedFormatAppliesNoRoutingWeightOrScale) {
  // The dispatcher's combine applies weights: routed_scaling_factor must not scale masked outputs.
  Spec s;
  s.p = small_problem(4, 2);
  s.p.input_format = InputFormat::kMasked;
  s.p.routing.routed_scaling_factor = 2.5f;
  s.max_m = 6;
  s.masked_m = {6, 2, 0, 3};
  s.seed = 850;
  Layer L = build(s);
  run_and_compare(L, "Masked with routed_scaling_factor=2.5 (ignored)");
}

TEST(MoeReferenceVsNaive, MaskedFormatBf16) {
  Spec s;
  s.p = small_problem(8, 2);
  s.p.input_format = InputFormat::kMasked;
  s.p.activation_dtype = kBF16;
  s.bias13 = s.bias2 = true;
  s.max_m = 6;
  s.seed = 860;
  Layer L = build(s);
  run_and_compare(L, "Masked bf16");
}

TEST(MoeReferenceVsNaive, IndexedFormat) {
  uint32_t seed = 900;
  for (int T : {0, 1, 3, 77}) {
    for (int K : {1, 2}) {
      Spec s;
      s.p = small_problem(8, K);
      s.p.input_format = InputFormat::kIndexed;
      s.bias13 = s.bias2 = true;
      s.indexed_empty_expert = 6;
      s.T = T;
      s.seed = ++seed;
      Layer L = build(s);
      run_and_compare(L, "Indexed T=" + std::to_string(T) + " K=" + std::to_string(K));
    }
  }
}

TEST(MoeReferenceVsNaive, IndexedFormatWithRoutedScalingFactorAndLocalExperts) {
  // Indexed rows address local experts; E=16 in the model, 5 held here.
  Spec s;
  s.p = small_problem(16, 2);
  s.p.input_format = InputFormat::kIndexed;
  s.p.local_expert_begin = 8;
  s.p.num_local_experts = 5;
  s.p.routing.routed_scaling_factor = 2.5f;
  s.p.activation.kind = Activation::kGeGLUTanh;
  s.p.gate_up_layout = GateUpLayout::kInterleaved;
  s.T = 77;
  s.seed = 950;
  Layer L = build(s);
  run_and_compare(L, "Indexed E_local=5 routed_scaling_factor=2.5");
}

// ---- Combine options ---------------------------------------------------------------------------------

TEST(MoeReferenceVsNaive, NoCombineMatchesNaiveAndSumsToTheCombinedOutput) {
  uint32_t seed = 1000;
  for (InputFormat f : {InputFormat::kStandard, InputFormat::kPreRouted}) {
    for (int T : {0, 1, 77}) {
      Spec s;
      s.p = small_problem();
      s.p.input_format = f;
      s.p.routing.method = RoutingMethod::kDeepSeekV3;
      s.p.routing.n_group = 4;
      s.p.routing.topk_group = 2;
      s.p.routing.renormalize = true;
      s.p.routing.routed_scaling_factor = 2.5f;
      s.bias13 = s.bias2 = true;
      s.T = T;
      s.seed = ++seed;
      s.p.no_combine = true;
      Layer split = build(s);
      const std::string what = std::string(input_format_name(f)) + " no_combine T=" + std::to_string(T);
      ASSERT_NO_FATAL_FAILURE(run_and_compare(split, what));
      s.p.no_combine = false;
      Layer combined = build(s);  // same seed: the same data
      ASSERT_NO_FATAL_FAILURE(run_and_compare(combined, what + " (combined)"));
      const int H = s.p.hidden, K = s.p.top_k;
      for (int t = 0; t < T; ++t) {
        for (int h = 0; h < H; ++h) {
          double sum = 0.0;
          for (int k = 0; k < K; ++k) sum += value_at(split.out, (static_cast<int64_t>(t) * K + k) * H + h);
          const double c = value_at(combined.out, static_cast<int64_t>(t) * H + h);
          ASSERT_NEAR(sum, c, 1e-5 + 1e-5 * std::abs(c)) << what << " t=" << t << " h=" << h;
        }
      }
    }
  }
}

TEST(MoeReferenceVsNaive, ApplyRouterWeightOnInputWithTopOne) {
  uint32_t seed = 1100;
  for (InputFormat f : {InputFormat::kStandard, InputFormat::kPreRouted}) {
    for (Activation a : {Activation::kSwiGLU, Activation::kReLU2, Activation::kIdentity}) {
      for (bool bias : {false, true}) {
        Spec s;
        s.p = small_problem(8, 1);
        s.p.input_format = f;
        s.p.routing.method = RoutingMethod::kLlama4;
        s.p.activation.kind = a;
        s.p.apply_router_weight_on_input = true;
        s.bias13 = s.bias2 = bias;
        s.T = 77;
        s.seed = ++seed;
        Layer L = build(s);
        std::vector<double> on_input;
        const std::string what = std::string(input_format_name(f)) + " apply_router_weight_on_input " +
                                 act_label(a) + (bias ? " biases" : "");
        ASSERT_NO_FATAL_FAILURE(run_and_compare(L, what, &on_input));
        // Sanity of the test itself: for a nonlinear expert the placement of the weight matters.
        if (a != Activation::kIdentity || bias) {
          MoeProblem q = L.p;
          q.apply_router_weight_on_input = false;
          const auto on_output = naive::run(q, L.weights(), L.inputs());
          double diff = 0.0;
          for (size_t i = 0; i < on_output.size(); ++i) diff = std::max(diff, std::abs(on_output[i] - on_input[i]));
          EXPECT_GT(diff, 1e-3) << what;
        }
      }
    }
  }
}

TEST(MoeReferenceVsNaive, ApplyRouterWeightOnInputWithNoCombineAndScaling) {
  Spec s;
  s.p = small_problem(8, 1);
  s.p.routing.method = RoutingMethod::kSoftmaxTopK;
  s.p.apply_router_weight_on_input = true;
  s.p.no_combine = true;
  s.p.routing.routed_scaling_factor = 2.5f;
  s.T = 77;
  s.seed = 1150;
  Layer L = build(s);
  run_and_compare(L, "apply_router_weight_on_input + no_combine + routed_scaling_factor");
}

TEST(MoeReferenceVsNaive, RoutedScalingFactorEveryMethod) {
  uint32_t seed = 1200;
  for (RoutingMethod m : kAllMethods) {
    Spec s;
    s.p = small_problem();
    s.p.routing.method = m;
    if (m == RoutingMethod::kDeepSeekV3) {
      s.p.routing.n_group = 4;
      s.p.routing.topk_group = 2;
    }
    s.p.routing.routed_scaling_factor = 0.375f;
    s.T = 77;
    s.seed = ++seed;
    Layer L = build(s);
    run_and_compare(L, std::string(method_name(m)) + " routed_scaling_factor=0.375");
  }
}

// ---- Expert parallelism --------------------------------------------------------------------------------

TEST(MoeReferenceVsNaive, LocalExpertRangeNonLocalExpertsContributeZero) {
  uint32_t seed = 1300;
  struct Range {
    int begin, count;
  };
  for (Range r : {Range{0, 3}, Range{2, 3}, Range{5, 3}, Range{7, 1}, Range{0, 8}}) {
    for (bool no_combine : {false, true}) {
      for (InputFormat f : {InputFormat::kStandard, InputFormat::kPreRouted}) {
        Spec s;
        s.p = small_problem();
        s.p.input_format = f;
        s.p.local_expert_begin = r.begin;
        s.p.num_local_experts = r.count;
        s.p.no_combine = no_combine;
        s.bias13 = s.bias2 = true;
        s.T = 77;
        s.seed = ++seed;
        Layer L = build(s);
        run_and_compare(L, std::string(input_format_name(f)) + " local experts [" + std::to_string(r.begin) + ", " +
                               std::to_string(r.begin + r.count) + ")" + (no_combine ? " no_combine" : ""));
      }
    }
  }
}

TEST(MoeReferenceVsNaive, ExpertMapOverridesTheLocalRange) {
  // Global experts 1, 3, 4 are held here as local 0, 2, 1; the range [0, 3) would say 0, 1, 2.
  const std::vector<int32_t> map = {-1, 0, -1, 2, 1, -1, -1, -1};
  uint32_t seed = 1400;
  for (bool no_combine : {false, true}) {
    for (InputFormat f : {InputFormat::kStandard, InputFormat::kPreRouted}) {
      Spec s;
      s.p = small_problem();
      s.p.input_format = f;
      s.p.num_local_experts = 3;
      s.p.no_combine = no_combine;
      s.p.activation.kind = Activation::kGeGLU;
      s.bias2 = true;
      s.expert_map = map;
      s.T = 77;
      s.seed = ++seed;
      Layer L = build(s);
      run_and_compare(L, std::string(input_format_name(f)) + " expert_map" + (no_combine ? " no_combine" : ""));
    }
  }
}

// ---- 16-bit activations --------------------------------------------------------------------------------

TEST(MoeReferenceVsNaive, Bf16ActivationsWithinOneUlp) {
  uint32_t seed = 1500;
  for (Activation a : kAllActivations) {
    Spec s;
    s.p = small_problem();
    s.p.activation_dtype = kBF16;
    s.p.activation.kind = a;
    s.p.gate_up_layout = (seed % 2) ? GateUpLayout::kInterleaved : GateUpLayout::kConcatenated;
    s.p.routing.renormalize = true;
    s.bias13 = s.bias2 = true;
    s.T = 77;
    s.seed = ++seed;
    Layer L = build(s);
    run_and_compare(L, std::string("bf16 ") + act_label(a));
  }
  // bf16 with no_combine, expert parallelism and DeepSeek routing with bf16 logits.
  Spec s;
  s.p = small_problem(16, 4);
  s.p.activation_dtype = kBF16;
  s.p.routing.method = RoutingMethod::kDeepSeekV3;
  s.p.routing.n_group = 4;
  s.p.routing.topk_group = 2;
  s.p.routing.renormalize = true;
  s.p.routing.routed_scaling_factor = 2.5f;
  s.p.local_expert_begin = 4;
  s.p.num_local_experts = 8;
  s.p.no_combine = true;
  s.logits_dtype = kBF16;
  s.T = 77;
  s.seed = 1599;
  Layer L = build(s);
  run_and_compare(L, "bf16 DeepSeekV3 local [4, 12) no_combine");
}

TEST(MoeReferenceVsNaive, F16ActivationsWithinOneUlp) {
  Spec s;
  s.p = small_problem();
  s.p.activation_dtype = kF16;
  s.p.activation.kind = Activation::kSwiGLU;
  s.bias13 = s.bias2 = true;
  s.T = 77;
  s.seed = 1600;
  Layer L = build(s);
  run_and_compare(L, "f16 SwiGLU");
}

// ---- Model-sized hidden/intermediate (few, small T) ------------------------------------------------

TEST(MoeReferenceVsNaive, GptOssSizesH2880I1408) {
  {
    Spec s;  // two experts, K=2, f32, Standard softmax routing
    s.p = small_problem(2, 2, 2880, 1408);
    s.p.routing.renormalize = true;
    s.T = 3;
    s.seed = 1700;
    Layer L = build(s);
    run_and_compare(L, "H=2880 I=1408 E=2 K=2 T=3 SwiGLU f32");
  }
  {
    Spec s;  // GPT-OSS style: clamped SwiGLU, interleaved gate/up, biases, bf16
    s.p = small_problem(2, 1, 2880, 1408);
    s.p.activation_dtype = kBF16;
    s.p.activation.kind = Activation::kSwiGLUClamped;
    s.p.gate_up_layout = GateUpLayout::kInterleaved;
    s.p.routing.method = RoutingMethod::kTopKSoftmax;
    s.bias13 = s.bias2 = true;
    s.T = 3;
    s.seed = 1701;
    Layer L = build(s);
    run_and_compare(L, "H=2880 I=1408 E=2 K=1 T=3 SwiGLUClamped interleaved bf16");
  }
  {
    Spec s;  // one expert, one token, and the empty batch
    s.p = small_problem(1, 1, 2880, 1408);
    s.p.activation.kind = Activation::kGeLU;
    s.bias2 = true;
    for (int T : {0, 1}) {
      s.T = T;
      s.seed = 1702 + static_cast<uint32_t>(T);
      Layer L = build(s);
      run_and_compare(L, "H=2880 I=1408 E=1 K=1 GeLU T=" + std::to_string(T));
    }
  }
}

// ---- Hand-checkable exact cases -----------------------------------------------------------------------

// Expert e: W13 = 2^e * identity, W2 = identity, b2 = e (the expert id): y = 2^e x + e.
Layer diagonal_layer(int E, int K, int H, Activation act, int T) {
  Layer L;
  L.p = small_problem(E, K, H, H);
  L.p.activation.kind = act;
  L.w13 = make(kF32, {E, H, H});
  fill(L.w13, [&](int64_t i) {
    const int64_t e = i / (H * H), r = (i / H) % H, c = i % H;
    return r == c ? std::ldexp(1.0, static_cast<int>(e)) : 0.0;
  });
  L.w2 = make(kF32, {E, H, H});
  fill(L.w2, [&](int64_t i) { return (i / H) % H == i % H ? 1.0 : 0.0; });
  L.b2 = make(kF32, {E, H});
  fill(L.b2, [&](int64_t i) { return static_cast<double>(i / H); });
  L.hidden = make(kF32, {T, H});
  L.out = make(kF32, {T, H});
  return L;
}

std::vector<float> out_row(const Tensor& out, int64_t row, int H) {
  std::vector<float> r(static_cast<size_t>(H));
  for (int h = 0; h < H; ++h) r[static_cast<size_t>(h)] = out.data_as<float>()[row * H + h];
  return r;
}

TEST(MoeReferenceExact, DiagonalExpertsPowerOfTwoScalesBiasIsExpertId) {
  Layer L = diagonal_layer(4, 2, 4, Activation::kIdentity, 3);
  L.p.input_format = InputFormat::kPreRouted;
  L.hidden = from_values(kF32, {3, 4}, {1, 2, -3, 0.5, /**/ 0, 1, 2, 3, /**/ -1, -1, 4, 8});
  L.topk_ids = from_values(kI32, {3, 2}, {0, 3, /**/ 2, 1, /**/ 3, 3 - 3});
  L.topk_weights = from_values(kF32, {3, 2}, {0.5, 0.25, /**/ 1, 0.125, /**/ 0.75, 0.0625});
  poison(L.out);
  ASSERT_TRUE(cpu::run_reference(L.p, L.weights(), L.inputs(), L.outputs()).ok());
  // t0: 0.5*(x + 0) + 0.25*(8x + 3) = 2.5x + 0.75
  EXPECT_EQ(out_row(L.out, 0, 4), (std::vector<float>{3.25f, 5.75f, -6.75f, 2.0f}));
  // t1: 1*(4x + 2) + 0.125*(2x + 1) = 4.25x + 2.125
  EXPECT_EQ(out_row(L.out, 1, 4), (std::vector<float>{2.125f, 6.375f, 10.625f, 14.875f}));
  // t2: 0.75*(8x + 3) + 0.0625*(x + 0) = 6.0625x + 2.25
  EXPECT_EQ(out_row(L.out, 2, 4), (std::vector<float>{-3.8125f, -3.8125f, 26.5f, 50.75f}));
  // The same through the naive oracle.
  const auto want = naive::run(L.p, L.weights(), L.inputs());
  for (int i = 0; i < 12; ++i) EXPECT_EQ(want[static_cast<size_t>(i)], L.out.data_as<float>()[i]) << i;
}

TEST(MoeReferenceExact, ReLUScalingFactorAndNoCombineByHand) {
  Layer L = diagonal_layer(4, 2, 4, Activation::kReLU, 1);
  L.p.input_format = InputFormat::kPreRouted;
  L.p.routing.routed_scaling_factor = 2.0f;
  L.p.no_combine = true;
  L.out = make(kF32, {1, 2, 4});
  L.hidden = from_values(kF32, {1, 4}, {1, -2, 3, -0.5});
  L.topk_ids = from_values(kI32, {1, 2}, {1, 2});
  L.topk_weights = from_values(kF32, {1, 2}, {0.5, 0.25});
  poison(L.out);
  ASSERT_TRUE(cpu::run_reference(L.p, L.weights(), L.inputs(), L.outputs()).ok());
  // k=0: 2 * 0.5 * (relu(2x) + 1) ; k=1: 2 * 0.25 * (relu(4x) + 2)
  EXPECT_EQ(out_row(L.out, 0, 4), (std::vector<float>{3, 1, 7, 1}));
  EXPECT_EQ(out_row(L.out, 1, 4), (std::vector<float>{3, 1, 7, 1}));
}

TEST(MoeReferenceExact, ReLU2AndApplyRouterWeightOnInputByHand) {
  Layer L = diagonal_layer(2, 1, 4, Activation::kReLU2, 2);
  L.p.input_format = InputFormat::kPreRouted;
  L.p.apply_router_weight_on_input = true;
  L.hidden = from_values(kF32, {2, 4}, {1, -2, 3, 0.5, /**/ 2, 2, -2, 0});
  L.topk_ids = from_values(kI32, {2, 1}, {1, 0});
  L.topk_weights = from_values(kF32, {2, 1}, {0.5, 0.25});
  poison(L.out);
  ASSERT_TRUE(cpu::run_reference(L.p, L.weights(), L.inputs(), L.outputs()).ok());
  // t0, expert 1: relu(2 * 0.5x)^2 + 1 = relu(x)^2 + 1 (weight on the input only).
  EXPECT_EQ(out_row(L.out, 0, 4), (std::vector<float>{2, 1, 10, 1.25f}));
  // t1, expert 0: relu(0.25x)^2 + 0.
  EXPECT_EQ(out_row(L.out, 1, 4), (std::vector<float>{0.25f, 0.25f, 0, 0}));
}

TEST(MoeReferenceExact, GateUpLayoutsSelectTheRightRows) {
  // H = I = 2. Gate rows: weight 0, bias 64, so the gate activation is exactly 64 (silu, both gelus);
  // up rows: 2^e * identity; W2 = identity / 64. Hence y = 2^e x + b2, b2 = expert id. A layout
  // mix-up makes the gate x-dependent and the up 64: visibly different.
  for (Activation a : {Activation::kSwiGLU, Activation::kGeGLU, Activation::kGeGLUTanh, Activation::kSwiGLUClamped}) {
    for (GateUpLayout layout : {GateUpLayout::kConcatenated, GateUpLayout::kInterleaved}) {
      const int E = 2, H = 2, I = 2;
      Layer L;
      L.p = small_problem(E, 1, H, I);
      L.p.activation.kind = a;
      L.p.activation.alpha = 1.0f;
      L.p.activation.limit = 1000.0f;  // (up + 1) * gate * sigmoid(gate) with gate 64: (up + 1) * 64
      L.p.gate_up_layout = layout;
      L.p.input_format = InputFormat::kPreRouted;
      const bool inter = layout == GateUpLayout::kInterleaved;
      auto is_gate_row = [&](int r) { return inter ? r % 2 == 0 : r < I; };
      auto unit_of_row = [&](int r) { return inter ? r / 2 : r % I; };
      L.w13 = make(kF32, {E, 2 * I, H});
      fill(L.w13, [&](int64_t i) {
        const int e = static_cast<int>(i / (2 * I * H)), r = static_cast<int>((i / H) % (2 * I)),
                  c = static_cast<int>(i % H);
        return (!is_gate_row(r) && unit_of_row(r) == c) ? std::ldexp(1.0, e) : 0.0;
      });
      L.b13 = make(kF32, {E, 2 * I});
      fill(L.b13, [&](int64_t i) { return is_gate_row(static_cast<int>(i % (2 * I))) ? 64.0 : 0.0; });
      L.w2 = make(kF32, {E, H, I});
      fill(L.w2, [&](int64_t i) { return (i / I) % H == i % I ? 1.0 / 64.0 : 0.0; });
      L.b2 = make(kF32, {E, H});
      fill(L.b2, [&](int64_t i) { return static_cast<double>(i / H); });
      L.hidden = from_values(kF32, {2, 2}, {3, -5, 0.5, 1.5});
      L.topk_ids = from_values(kI32, {2, 1}, {0, 1});
      L.topk_weights = from_values(kF32, {2, 1}, {1, 0.5});
      L.out = make(kF32, {2, 2});
      poison(L.out);
      const std::string what = std::string(act_label(a)) + (inter ? " interleaved" : " concatenated");
      const Status st = cpu::run_reference(L.p, L.weights(), L.inputs(), L.outputs());
      ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
      // SwiGLUClamped: (u + 1) * 64 / 64 = u + 1; the others: u. t0: expert 0, u = x; t1: expert 1, u = 2x.
      const float c = a == Activation::kSwiGLUClamped ? 1.0f : 0.0f;
      EXPECT_EQ(out_row(L.out, 0, 2), (std::vector<float>{3 + c, -5 + c})) << what;
      EXPECT_EQ(out_row(L.out, 1, 2), (std::vector<float>{0.5f * (1 + c + 1), 0.5f * (3 + c + 1)})) << what;
    }
  }
}

TEST(MoeReferenceExact, SwiGLUClampedClampsGateAboveAndUpBothSides) {
  // One unit: gate = 5 * x0, up = 5 * x1, limit 2, alpha 1.5; W2 = 1, no bias.
  Layer L;
  L.p = small_problem(1, 1, 2, 1);
  L.p.activation.kind = Activation::kSwiGLUClamped;
  L.p.activation.alpha = 1.5f;
  L.p.activation.limit = 2.0f;
  L.p.input_format = InputFormat::kPreRouted;
  L.w13 = from_values(kF32, {1, 2, 2}, {5, 0, 0, 5});
  L.w2 = from_values(kF32, {1, 2, 1}, {1, 1});
  // Rows: gate 5 -> 2, up 5 -> 2; gate -5 (unclamped below), up -5 -> -2; gate 1, up 0.5.
  L.hidden = from_values(kF32, {3, 2}, {1, 1, -1, -1, 0.2, 0.1});
  L.topk_ids = from_values(kI32, {3, 1}, {0, 0, 0});
  L.topk_weights = from_values(kF32, {3, 1}, {1, 1, 1});
  L.out = make(kF32, {3, 2});
  poison(L.out);
  ASSERT_TRUE(cpu::run_reference(L.p, L.weights(), L.inputs(), L.outputs()).ok());
  auto f = [](double g, double u) { return (u + 1) * g / (1 + std::exp(-1.5 * g)); };
  const double want[3] = {f(2, 2), f(-5, -2), f(1, 0.5)};
  for (int t = 0; t < 3; ++t)
    for (int h = 0; h < 2; ++h) EXPECT_NEAR(L.out.data_as<float>()[t * 2 + h], want[t], 1e-6 * (1 + std::abs(want[t])));
}

TEST(MoeReferenceExact, MaskedRowsByHand) {
  Layer L = diagonal_layer(2, 1, 4, Activation::kIdentity, 0);
  L.p.input_format = InputFormat::kMasked;
  L.hidden = from_values(kF32, {2, 3, 4}, {1, 2, 3, 4, -1, -2, -3, -4, 9, 9, 9, 9, /**/ 5, 6, 7, 8, 0, 0, 0, 0, 9, 9, 9, 9});
  L.masked_m = from_values(kI32, {2}, {2, 1});
  L.out = make(kF32, {2, 3, 4});
  poison(L.out);
  ASSERT_TRUE(cpu::run_reference(L.p, L.weights(), L.inputs(), L.outputs()).ok());
  EXPECT_EQ(out_row(L.out, 0, 4), (std::vector<float>{1, 2, 3, 4}));       // expert 0: x + 0
  EXPECT_EQ(out_row(L.out, 1, 4), (std::vector<float>{-1, -2, -3, -4}));
  EXPECT_EQ(out_row(L.out, 3, 4), (std::vector<float>{11, 13, 15, 17}));  // expert 1: 2x + 1
  for (int64_t row : {2, 4, 5})
    for (int h = 0; h < 4; ++h) EXPECT_TRUE(is_poison(L.out, row * 4 + h)) << "row " << row << " must be untouched";
}

TEST(MoeReferenceExact, IndexedRowsByHand) {
  Layer L = diagonal_layer(2, 2, 4, Activation::kIdentity, 3);
  L.p.input_format = InputFormat::kIndexed;
  L.hidden = from_values(kF32, {3, 4}, {1, 2, 3, 4, /**/ 7, 7, 7, 7, /**/ -1, 0, 1, 2});
  L.offsets = from_values(kI32, {3}, {0, 2, 3});  // expert 0: rows 0, 1; expert 1: row 2
  L.gather = from_values(kI32, {3}, {2, 0, 2});
  L.row_weights = from_values(kF32, {3}, {0.5, 0.25, 2});
  poison(L.out);
  ASSERT_TRUE(cpu::run_reference(L.p, L.weights(), L.inputs(), L.outputs()).ok());
  EXPECT_EQ(out_row(L.out, 0, 4), (std::vector<float>{0.25f, 0.5f, 0.75f, 1}));  // 0.25 * x
  EXPECT_EQ(out_row(L.out, 1, 4), (std::vector<float>{0, 0, 0, 0}));            // no rows: zero
  // 0.5 * x + 2 * (2x + 1) = 4.5x + 2
  EXPECT_EQ(out_row(L.out, 2, 4), (std::vector<float>{-2.5f, 2, 6.5f, 11}));
}

TEST(MoeReferenceExact, LocalRangeAndExpertMapByHand) {
  // Global E = 4; this rank holds global experts 1 and 2 (local 0 and 1): y = 2^local x + local.
  for (bool use_map : {false, true}) {
    Layer L = diagonal_layer(2, 2, 4, Activation::kIdentity, 2);
    L.p.num_experts = 4;
    L.p.num_local_experts = 2;
    L.p.input_format = InputFormat::kPreRouted;
    if (use_map)
      L.emap = from_values(kI32, {4}, {-1, 0, 1, -1});  // range [0, 2) would say global 0 and 1
    else
      L.p.local_expert_begin = 1;
    L.hidden = from_values(kF32, {2, 4}, {1, 2, 3, 4, /**/ 5, 6, 7, 8});
    L.topk_ids = from_values(kI32, {2, 2}, {0, 1, /**/ 3, 2});
    L.topk_weights = from_values(kF32, {2, 2}, {0.5, 0.25, /**/ 0.5, 0.25});
    poison(L.out);
    ASSERT_TRUE(cpu::run_reference(L.p, L.weights(), L.inputs(), L.outputs()).ok());
    // t0: expert 0 absent; expert 1 = local 0: 0.25 * x. t1: expert 3 absent; expert 2 = local 1: 0.25 (2x + 1).
    EXPECT_EQ(out_row(L.out, 0, 4), (std::vector<float>{0.25f, 0.5f, 0.75f, 1})) << (use_map ? "map" : "range");
    EXPECT_EQ(out_row(L.out, 1, 4), (std::vector<float>{2.75f, 3.25f, 3.75f, 4.25f})) << (use_map ? "map" : "range");
  }
}

TEST(MoeReferenceExact, TopKRoutingOutputsByHand) {
  // kTopK with renormalize: scores {0.1, 0.4, 0.2, 0.3} -> ids {1, 3}, weights {4/7, 3/7}.
  Layer L = diagonal_layer(4, 2, 4, Activation::kIdentity, 1);
  L.p.routing.method = RoutingMethod::kTopK;
  L.p.routing.renormalize = true;
  L.hidden = from_values(kF32, {1, 4}, {1, 1, 1, 1});
  L.logits = from_values(kF32, {1, 4}, {0.125, 0.5, 0.25, 0.375});
  L.out_ids = make(kI32, {1, 2});
  L.out_weights = make(kF32, {1, 2});
  poison(L.out);
  poison(L.out_ids);
  poison(L.out_weights);
  ASSERT_TRUE(cpu::run_reference(L.p, L.weights(), L.inputs(), L.outputs()).ok());
  EXPECT_EQ(L.out_ids.data_as<int32_t>()[0], 1);
  EXPECT_EQ(L.out_ids.data_as<int32_t>()[1], 3);
  EXPECT_FLOAT_EQ(L.out_weights.data_as<float>()[0], 0.5f / 0.875f);
  EXPECT_FLOAT_EQ(L.out_weights.data_as<float>()[1], 0.375f / 0.875f);
  // (4/7)(2x + 1) + (3/7)(8x + 3) = (32/7) x + 13/7 with x = 1: 45/7.
  for (int h = 0; h < 4; ++h) EXPECT_FLOAT_EQ(L.out.data_as<float>()[h], 45.0f / 7.0f);
}

// ---- Bad input ----------------------------------------------------------------------------------------

Spec valid_spec() {
  Spec s;
  s.p = small_problem();
  s.T = 3;
  s.topk_outputs = false;
  s.seed = 2000;
  return s;
}

// Runs validate() and run_reference() on a bad call: both must fail, name every `needles` entry,
// and leave the output fully poisoned.
void expect_rejected(Layer& L, const std::vector<std::string>& needles, const std::string& what) {
  SCOPED_TRACE(what);
  poison(L.out);
  poison(L.out_ids);
  poison(L.out_weights);
  const Status v = cpu::validate(L.p, L.weights(), L.inputs(), L.outputs());
  const Status r = cpu::run_reference(L.p, L.weights(), L.inputs(), L.outputs());
  EXPECT_FALSE(v.ok()) << what << ": validate() accepted it";
  ASSERT_FALSE(r.ok()) << what << ": run_reference() accepted it";
  for (const std::string& n : needles) {
    EXPECT_NE(r.message().find(n), std::string::npos) << what << ": message \"" << r.message() << "\" lacks \"" << n << "\"";
    EXPECT_NE(v.message().find(n), std::string::npos) << what << ": validate message \"" << v.message() << "\" lacks \"" << n << "\"";
  }
  EXPECT_EQ(count_poison(L.out), L.out.numel()) << what << ": output written on error";
  if (L.out_ids.data()) {
    EXPECT_EQ(count_poison(L.out_ids), L.out_ids.numel()) << what;
  }
  if (L.out_weights.data()) {
    EXPECT_EQ(count_poison(L.out_weights), L.out_weights.numel()) << what;
  }
}

TEST(MoeReferenceBadInput, TheValidBaselineIsAccepted) {
  Layer L = build(valid_spec());
  run_and_compare(L, "baseline");
}

TEST(MoeReferenceBadInput, ApplyRouterWeightOnInputNeedsTopKOne) {
  Layer L = build(valid_spec());
  L.p.apply_router_weight_on_input = true;
  expect_rejected(L, {"apply_router_weight_on_input", "top_k=2"}, "apply_router_weight_on_input with K=2");
}

TEST(MoeReferenceBadInput, NGroupMustDivideNumExperts) {
  Spec s = valid_spec();
  s.p.routing.method = RoutingMethod::kDeepSeekV3;
  s.p.routing.n_group = 3;
  s.p.routing.topk_group = 1;
  Layer L = build(s);
  expect_rejected(L, {"n_group=3", "8"}, "n_group=3 with E=8");
}

TEST(MoeReferenceBadInput, TopKAboveNumExperts) {
  Spec s = valid_spec();
  s.p.top_k = 9;
  Layer L = build(s);
  expect_rejected(L, {"top_k=9", "num_experts=8"}, "top_k=9 > E=8");
}

TEST(MoeReferenceBadInput, HiddenWithTheWrongShape) {
  Layer L = build(valid_spec());
  L.hidden = make(kF32, {3, 41});
  fill(L.hidden, [](int64_t) { return 1.0; });
  expect_rejected(L, {"hidden", "[3, 41]"}, "hidden [3, 41] for H=40");
}

TEST(MoeReferenceBadInput, HiddenWithTheWrongDtype) {
  Layer L = build(valid_spec());
  L.hidden = make(kBF16, {3, 40});
  fill(L.hidden, [](int64_t) { return 1.0; });
  expect_rejected(L, {"hidden", "bf16"}, "bf16 hidden with activation_dtype f32");
}

TEST(MoeReferenceBadInput, W13WithTheWrongShape) {
  Layer L = build(valid_spec());
  L.w13 = make(kF32, {8, 47, 40});  // gemm1_rows is 48
  fill(L.w13, [](int64_t) { return 0.0; });
  expect_rejected(L, {"w13", "47"}, "w13 [8, 47, 40]");
}

TEST(MoeReferenceBadInput, StandardFormatWithoutRouterLogits) {
  Layer L = build(valid_spec());
  L.logits = Tensor();
  expect_rejected(L, {"router_logits"}, "missing router_logits");
}

TEST(MoeReferenceBadInput, OutputWithTheWrongShape) {
  Layer L = build(valid_spec());
  L.out = make(kF32, {3, 39});
  expect_rejected(L, {"out", "[3, 39]"}, "out [3, 39]");
}

TEST(MoeReferenceBadInput, NoCombineOutputMustBeTokensByTopKByHidden) {
  Spec s = valid_spec();
  s.p.no_combine = true;
  Layer L = build(s);
  L.out = make(kF32, {3, 40});
  expect_rejected(L, {"out", "[3, 40]"}, "no_combine with out [3, 40]");
}

TEST(MoeReferenceBadInput, OutOfRangeIndicesAndInconsistentOptions) {
  // Values a reference must check before indexing with them. A needle "a|b" accepts either.
  struct BadCase {
    const char* what;
    std::function<void(Spec&)> spec;
    std::function<void(Layer&)> mutate;
    std::vector<std::string> needles;
  };
  auto pre = [](Spec& s) { s.p.input_format = InputFormat::kPreRouted; };
  auto masked = [](Spec& s) {
    s.p.input_format = InputFormat::kMasked;
    s.max_m = 4;
    s.masked_m = {4, 0, 2, 1, 3, 4, 0, 1};
  };
  auto indexed = [](Spec& s) {
    s.p.input_format = InputFormat::kIndexed;
    s.T = 5;
    s.seed = 3;
  };
  auto deepseek = [](int n_group, int topk_group, int K) {
    return [=](Spec& s) {
      s.p.routing.method = RoutingMethod::kDeepSeekV3;
      s.p.routing.n_group = n_group;
      s.p.routing.topk_group = topk_group;
      s.p.top_k = K;
    };
  };
  auto i32 = [](const Tensor& t, int64_t i) -> int32_t& { return t.data_as<int32_t>()[i]; };
  const std::vector<BadCase> cases = {
      {"PreRouted topk_ids 8 with E=8", pre, [&](Layer& L) { i32(L.topk_ids, 3) = 8; }, {"topk_ids", "=8"}},
      {"PreRouted topk_ids -1", pre, [&](Layer& L) { i32(L.topk_ids, 3) = -1; }, {"topk_ids", "=-1"}},
      {"masked_m 5 above max_m 4", masked, [&](Layer& L) { i32(L.masked_m, 2) = 5; }, {"masked_m", "=5"}},
      {"masked_m -1", masked, [&](Layer& L) { i32(L.masked_m, 2) = -1; }, {"masked_m", "=-1"}},
      {"gather_index 5 with T=5", indexed, [&](Layer& L) { i32(L.gather, 0) = 5; }, {"gather_index", "=5"}},
      {"expert_offsets last entry != rows", indexed, [&](Layer& L) { i32(L.offsets, 8) += 1; },
       {"expert_offsets|gather_index"}},
      {"expert_offsets decreasing", indexed,
       [&](Layer& L) { std::swap(i32(L.offsets, 2), i32(L.offsets, 6)); }, {"expert_offsets"}},
      {"expert_map entry 3 with E_local=3",
       [](Spec& s) {
         s.p.num_local_experts = 3;
         s.expert_map = {-1, 0, -1, 2, 3, -1, -1, -1};
       },
       [](Layer&) {}, {"expert_map", "=3"}},
      {"local range [6, 9) beyond E=8",
       [](Spec& s) {
         s.p.local_expert_begin = 6;
         s.p.num_local_experts = 3;
       },
       [](Layer&) {}, {"6", "num_experts=8"}},
      {"topk_group 5 above n_group 4", deepseek(4, 5, 2), [](Layer&) {}, {"topk_group=5"}},
      {"top_k 3 above the 2 experts of the kept group", deepseek(4, 1, 3), [](Layer&) {}, {"top_k=3", "topk_group"}},
      {"no_combine with the Masked format",
       [&](Spec& s) {
         masked(s);
         s.p.no_combine = true;
       },
       [](Layer&) {}, {"no_combine", "masked"}},
  };
  for (const BadCase& c : cases) {
    Spec s = valid_spec();
    c.spec(s);
    Layer L = build(s);
    c.mutate(L);
    poison(L.out);
    const Status r = cpu::run_reference(L.p, L.weights(), L.inputs(), L.outputs());
    ASSERT_FALSE(r.ok()) << c.what << ": accepted";
    for (const std::string& needle : c.needles) {
      bool found = false;
      for (size_t begin = 0; begin <= needle.size();) {
        const size_t bar = std::min(needle.find('|', begin), needle.size());
        found = found || r.message().find(needle.substr(begin, bar - begin)) != std::string::npos;
        begin = bar + 1;
      }
      EXPECT_TRUE(found) << c.what << ": message \"" << r.message() << "\" lacks \"" << needle << "\"";
    }
    EXPECT_EQ(count_poison(L.out), L.out.numel()) << c.what << ": output written on error";
  }
}

TEST(MoeReferenceBadInput, GpuTensorGivenToTheCpuBackend) {
  Layer L = build(valid_spec());
  // The host pointer is never dereferenced by a correct validator: the device alone must reject it.
  MoeInputs in = L.inputs();
  in.hidden = TensorView(L.hidden.data(), kF32, {3, 40}, Device::cuda(0));
  poison(L.out);
  const Status v = cpu::validate(L.p, L.weights(), in, L.outputs());
  const Status r = cpu::run_reference(L.p, L.weights(), in, L.outputs());
  EXPECT_FALSE(v.ok());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("hidden"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("cuda"), std::string::npos) << r.message();
  EXPECT_EQ(count_poison(L.out), L.out.numel());
}

TEST(MoeReferenceBadInput, GpuOutputGivenToTheCpuBackend) {
  Layer L = build(valid_spec());
  MoeOutputs o = L.outputs();
  o.out = TensorView(L.out.data(), kF32, {3, 40}, Device::cuda(0));
  poison(L.out);
  const Status r = cpu::run_reference(L.p, L.weights(), L.inputs(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("out"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("cuda"), std::string::npos) << r.message();
  EXPECT_EQ(count_poison(L.out), L.out.numel());
}

}  // namespace
}  // namespace moekit
