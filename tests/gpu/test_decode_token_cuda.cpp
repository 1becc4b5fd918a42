// The one-token kernel (src/cuda/moe/decode_token.cu, "cuda.decode_token"): the default plan at
// T = 1 wherever it takes the problem. Checked against the float64 oracle with moe_case.h's tolerance
// for every option it takes, bitwise against itself across runs, in a CUDA graph replayed with new
// routing (its scratch must hold the "not written" sentinel again at every replay), at its edges (no
// local expert hit, one expert in every slot) and where it declines (the plan then runs another path).
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/moe/moe_launch.h"
#include "moe_case.h"
#include "moekit/random_layer.h"
#include "moekit/runner.h"

namespace moekit {
namespace {

constexpr const char* kToken = "cuda.decode_token";

// The plan as the caller gets it (no fusion forced): the one-token kernel must be the one that runs.
void expect_token_within_tolerance(const Case& c, uint64_t seed) {
  SCOPED_TRACE(c.name);
  ASSERT_EQ(c.tokens, 1);
  const Outcome o = run_case(c, seed);
  EXPECT_EQ(o.steps, kToken) << c.name << ": the plan ran " << o.steps;
  EXPECT_EQ(o.errors.non_finite, 0) << c.name;
  EXPECT_LE(o.errors.gpu, 2 * o.errors.naive + 1e-6) << c.name << ": gpu err " << o.errors.gpu << " naive16 err " << o.errors.naive;
  std::printf("  %-60s err %.3e  naive16 %.3e\n", c.name.c_str(), o.errors.gpu, o.errors.naive);
}

TEST(DecodeTokenCuda, OneTokenAtOddShapes) {
  MOEKIT_REQUIRE_GPU();
  // H = 264 and I = 136: 33 and 17 chunks of 16 bytes, so lanes end at different places in a row.
  expect_token_within_tolerance({"softmax E8 K2 H264 I136", base_problem(8, 2, kH, kI), 1}, 500);
  expect_token_within_tolerance({"one expert E1 K1", base_problem(1, 1, kH, kI), 1}, 501);
  // Rows longer than one pass of the loads (gemm1: 2048 elements a pass; gemm2: 512), K over a
  // group of four slots, bf16 and f16.
  expect_token_within_tolerance({"softmax E16 K6 H4104 I1032 biases", base_problem(16, 6, 4104, 1032), 1, true}, 502);
  Case f16{"f16 softmax E64 K8 H2048 I768", base_problem(64, 8, 2048, 768), 1};
  f16.problem.activation_dtype = DType::kF16;
  expect_token_within_tolerance(f16, 503);
}

TEST(DecodeTokenCuda, RoutingMethodsAndWideExperts) {
  MOEKIT_REQUIRE_GPU();
  uint64_t seed = 0;
  for (const Case& c : routing_method_cases(1)) expect_token_within_tolerance(c, ++seed);
}

// DeepSeek-V3's grouped routing over a warp per group (routing_grouped.cuh) where it fits, and the
// one-warp path where it does not; run_case checks every id against the CPU reference. Tie-heavy
// rows (logits and biases from a few values: equal scores inside a group, equal group scores) and
// NaN logits check that ties and NaN fall as in the reference.
Case grouped_case(const std::string& name, int E, int K, int groups, int kept, uint64_t tie_levels, bool nan) {
  Case c{name, base_problem(E, K, 256, 128), 1};
  c.problem.routing.method = RoutingMethod::kDeepSeekV3;
  c.problem.routing.n_group = groups;
  c.problem.routing.topk_group = kept;
  c.problem.routing.routed_scaling_factor = 2.5f;
  c.tweak = [tie_levels, nan](RandomLayer& l) {
    float* logits = l.router_logits.data_as<float>();
    float* bias = l.e_score_correction_bias.data_as<float>();
    const int64_t n = l.router_logits.numel();
    if (tie_levels > 0) {
      for (int64_t i = 0; i < n; ++i) logits[i] = static_cast<float>(static_cast<int64_t>(std::abs(logits[i]) * 1000) % tie_levels) - 1.0f;
      for (int64_t i = 0; i < l.e_score_correction_bias.numel(); ++i) bias[i] = (i % 3 == 0) ? 0.125f : 0.0f;
    }
    if (nan)
      for (int64_t i = 0; i < n; i += 7) logits[i] = std::nanf("");
  };
  return c;
}

TEST(DecodeTokenCuda, GroupedRoutingMatchesTheReference) {
  MOEKIT_REQUIRE_GPU();
  uint64_t seed = 700;
  const std::vector<Case> cases = {
      grouped_case("deepseek-v3 routing E256 K8 groups 8/4", 256, 8, 8, 4, 0, false),
      grouped_case("deepseek-v3 routing E256 K8 groups 8/4, ties", 256, 8, 8, 4, 3, false),
      grouped_case("deepseek-v3 routing E256 K8 groups 8/4, NaN logits", 256, 8, 8, 4, 0, true),
      grouped_case("E256 K8 groups 8/4, ties and NaN", 256, 8, 8, 4, 2, true),
      grouped_case("one expert a group E8 K4 groups 8/4, ties", 8, 4, 8, 4, 2, false),
      grouped_case("fewer experts a group than K: E64 K8 groups 16/4", 64, 8, 16, 4, 0, false),
      grouped_case("one group E32 K6 groups 1/1, ties", 32, 6, 1, 1, 3, false),
      grouped_case("groups of 20 E160 K8 groups 8/3", 160, 8, 8, 3, 0, false),
      grouped_case("one-warp path: groups of 64 E128 K8 groups 2/1", 128, 8, 2, 1, 0, false),
      grouped_case("one-warp path: 17 groups E68 K4 groups 17/2", 68, 4, 17, 2, 0, false),
  };
  for (const Case& c : cases) expect_token_within_tolerance(c, ++seed);
}

TEST(DecodeTokenCuda, ActivationsLayoutsAndBiases) {
  MOEKIT_REQUIRE_GPU();
  expect_token_within_tolerance(gpt_oss_case(16, 4, 2880, 1408, 1), 6);
  uint64_t seed = 6;
  for (const Case& c : every_activation_case(1)) expect_token_within_tolerance(c, ++seed);
}

TEST(DecodeTokenCuda, ExpertParallelNoCombineAndPreRouted) {
  MOEKIT_REQUIRE_GPU();
  expect_token_within_tolerance(expert_range_no_combine_case(1), 20);
  expect_token_within_tolerance(expert_map_case(1), 21);
  expect_token_within_tolerance(prerouted_f16_relu2_case(1), 22);
}

// PreRouted ids, written by the test: every slot on a remote expert (the output is zeros: every
// element of the poisoned output is written), and one expert in every slot of the token.
TEST(DecodeTokenCuda, NoLocalExpertAndRepeatedExperts) {
  MOEKIT_REQUIRE_GPU();
  for (bool no_combine : {false, true}) {
    const Case none = only_remote_experts_case(1, no_combine);
    const Outcome o = run_case(none, 400);
    EXPECT_EQ(o.steps, kToken);
    ASSERT_FALSE(o.out.empty());
    for (double v : o.out) ASSERT_EQ(v, 0.0) << none.name << ": poison or garbage left in the output";
  }
  expect_token_within_tolerance(one_expert_in_every_slot_case(1), 401);
}

TEST(DecodeTokenCuda, BitwiseStableAcrossRuns) {
  MOEKIT_REQUIRE_GPU();
  Case c{"deterministic E64 K8 I2048 biases", base_problem(64, 8, kH, 2048), 1, true};
  c.problem.deterministic = true;
  const Outcome a = run_case(c, 50), b = run_case(c, 50);
  EXPECT_EQ(a.steps, kToken);
  ASSERT_EQ(a.out.size(), b.out.size());
  EXPECT_EQ(std::memcmp(a.out.data(), b.out.data(), a.out.size() * sizeof(double)), 0);
  EXPECT_LE(a.errors.gpu, 2 * a.errors.naive + 1e-6);
}

// What the kernel declines runs elsewhere, still correct: the router weight on the input, a top_k
// over its slot tables, a hidden row over its shared-memory budget; and the stage pipeline when the
// caller turns whole-layer kernels off.
TEST(DecodeTokenCuda, DeclinedProblemsRunElsewhere) {
  MOEKIT_REQUIRE_GPU();
  std::vector<Case> cases;
  Case on_input{"weight on input E16 K1", base_problem(16, 1, kH, kI), 1};
  on_input.problem.apply_router_weight_on_input = true;
  cases.push_back(on_input);
  cases.push_back({"K65 E128", base_problem(128, cuda::moe::kDecodeTokenMaxSlots + 1, kH, kI), 1});
  cases.push_back({"E2 K1 H41984 I8: a hidden row over the budget", base_problem(2, 1, 41984, 8), 1});
  Case off{"whole_layer off", base_problem(8, 2, kH, kI), 1};
  off.fusions.whole_layer = Switch::kOff;
  cases.push_back(off);
  uint64_t seed = 600;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Outcome o = run_case(c, ++seed);
    EXPECT_EQ(o.steps.find(kToken), std::string::npos) << c.name << ": " << o.steps;
    EXPECT_EQ(o.errors.non_finite, 0);
    EXPECT_LE(o.errors.gpu, 2 * o.errors.naive + 1e-6) << c.name;
  }
}

TEST(DecodeTokenCuda, GraphReplaysWithNewRouting) {
  MOEKIT_REQUIRE_GPU();
  MoeProblem p = base_problem(64, 6, kH, kI);
  p.routing.method = RoutingMethod::kDeepSeekV3;
  p.routing.n_group = 8;
  p.routing.topk_group = 4;
  expect_graph_replays_with_new_routing({.problem = p, .tokens = 1, .layer_seed = 62, .logits_seed = 90, .replays = 4, .first_step = kToken});
}

}  // namespace
}  // namespace moekit
