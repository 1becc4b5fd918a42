// The few-token kernel (src/cuda/moe/decode_tokens.cu, "cuda.decode_tokens"): the default plan at
// T = 2..8 wherever it takes the problem (T*K <= 64, the hidden rows within its shared memory).
// Checked against the float64 oracle with moe_case.h's tolerance for every option it takes, at
// token counts where the groups hold 1..8 pairs (a kernel built for 2, 4 and 8), bitwise against
// itself across runs, in a CUDA graph replayed with new routing, at its edges (no local expert hit,
// one expert in every slot of every token: groups split at 8 pairs) and where it declines.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cuda/moe/moe_launch.h"
#include "moe_case.h"
#include "moekit/random_layer.h"
#include "moekit/runner.h"

namespace moekit {
namespace {

constexpr const char* kTokens = "cuda.decode_tokens";

// The kernel itself, wherever it takes the problem: whole_layer forced on (the kernel is the first
// registered whole-layer implementation that takes T = 2..8; where every expert is expected to be
// hit the default plan prefers the stages: DefaultPlanTakesItWhereSlotsAreFewerThanExperts).
Outcome run_tokens(Case c, uint64_t seed) {
  c.fusions.whole_layer = Switch::kOn;
  return run_case(c, seed);
}

void expect_tokens_within_tolerance(const Case& c, uint64_t seed) {
  SCOPED_TRACE(c.name);
  const Outcome o = run_tokens(c, seed);
  EXPECT_EQ(o.steps, kTokens) << c.name << ": the plan ran " << o.steps;
  EXPECT_EQ(o.errors.non_finite, 0) << c.name;
  EXPECT_LE(o.errors.gpu, 2 * o.errors.naive + 1e-6) << c.name << ": gpu err " << o.errors.gpu << " naive16 err " << o.errors.naive;
  std::printf("  %-60s err %.3e  naive16 %.3e\n", c.name.c_str(), o.errors.gpu, o.errors.naive);
}

TEST(DecodeTokensCuda, TokenCountsAndOddShapes) {
  MOEKIT_REQUIRE_GPU();
  // Every T the kernel takes; E = 4, K = 2 puts several tokens on one expert (groups of 2..8 pairs).
  for (int64_t T = 2; T <= cuda::moe::kDecodeTokensMax; ++T) {
    expect_tokens_within_tolerance({"softmax E8 K2 H264 I136 T" + std::to_string(T), base_problem(8, 2, kH, kI), T}, 500 + T);
    expect_tokens_within_tolerance({"softmax E4 K2 T" + std::to_string(T), base_problem(4, 2, kH, kI), T}, 520 + T);
  }
  expect_tokens_within_tolerance({"one expert E1 K1 T5", base_problem(1, 1, kH, kI), 5}, 541);
  // Rows longer than one pass of the loads (gemm1: 2048 elements a pass; gemm2: 512 or 768), biases.
  expect_tokens_within_tolerance({"softmax E16 K6 H4104 I1032 biases T3", base_problem(16, 6, 4104, 1032), 3, true}, 542);
  Case f16{"f16 softmax E64 K8 H2048 I768 T8", base_problem(64, 8, 2048, 768), 8};
  f16.problem.activation_dtype = DType::kF16;
  expect_tokens_within_tolerance(f16, 543);
  // Hidden rows over the shared-memory budget in float: kept in the activation dtype (bf16, f16).
  expect_tokens_within_tolerance({"16-bit hidden rows: E16 K2 H12008 I136 T4", base_problem(16, 2, 12008, 136), 4}, 544);
  Case f16_rows{"16-bit hidden rows, f16: E64 K8 H7168 I256 T7 biases", base_problem(64, 8, 7168, 256), 7, true};
  f16_rows.problem.activation_dtype = DType::kF16;
  expect_tokens_within_tolerance(f16_rows, 545);
}

TEST(DecodeTokensCuda, RoutingMethodsAndWideExperts) {
  MOEKIT_REQUIRE_GPU();
  uint64_t seed = 0;
  for (const Case& c : routing_method_cases(5)) expect_tokens_within_tolerance(c, ++seed);
}

TEST(DecodeTokensCuda, ActivationsLayoutsAndBiases) {
  MOEKIT_REQUIRE_GPU();
  expect_tokens_within_tolerance(gpt_oss_case(16, 4, 2880, 1408, 5), 6);
  uint64_t seed = 6;
  for (const Case& c : every_activation_case(3)) expect_tokens_within_tolerance(c, ++seed);
}

TEST(DecodeTokensCuda, ExpertParallelNoCombineAndPreRouted) {
  MOEKIT_REQUIRE_GPU();
  expect_tokens_within_tolerance(expert_range_no_combine_case(5), 20);
  expect_tokens_within_tolerance(expert_map_case(8), 21);
  expect_tokens_within_tolerance(prerouted_f16_relu2_case(4), 22);
}

// PreRouted ids, written by the test: every slot on a remote expert (the output is zeros: every
// element of the poisoned output is written), and one expert in every slot of every token (up to
// 32 pairs on one expert: groups of at most 8, the last one shorter at T = 3 and 5).
TEST(DecodeTokensCuda, NoLocalExpertAndRepeatedExperts) {
  MOEKIT_REQUIRE_GPU();
  for (bool no_combine : {false, true}) {
    const Case none = only_remote_experts_case(3, no_combine);
    const Outcome o = run_tokens(none, 400);
    EXPECT_EQ(o.steps, kTokens);
    ASSERT_FALSE(o.out.empty());
    for (double v : o.out) ASSERT_EQ(v, 0.0) << none.name << ": poison or garbage left in the output";
  }
  for (int64_t T : {2, 3, 5, 8}) expect_tokens_within_tolerance(one_expert_in_every_slot_case(T), 401 + T);
}

TEST(DecodeTokensCuda, BitwiseStableAcrossRuns) {
  MOEKIT_REQUIRE_GPU();
  Case c{"deterministic E64 K8 I2048 biases T8", base_problem(64, 8, kH, 2048), 8, true};
  c.problem.deterministic = true;
  const Outcome a = run_tokens(c, 50), b = run_tokens(c, 50);
  EXPECT_EQ(a.steps, kTokens);
  ASSERT_EQ(a.out.size(), b.out.size());
  EXPECT_EQ(std::memcmp(a.out.data(), b.out.data(), a.out.size() * sizeof(double)), 0);
  EXPECT_LE(a.errors.gpu, 2 * a.errors.naive + 1e-6);
}

// The default plan (nothing forced): the kernel where the routed slots are fewer than the experts,
// the stages where they are not (T*K >= E).
TEST(DecodeTokensCuda, DefaultPlanTakesItWhereSlotsAreFewerThanExperts) {
  MOEKIT_REQUIRE_GPU();
  for (const auto& [c, expect_tokens] : std::vector<std::pair<Case, bool>>{
           {{"E128 K8 T6 (48 slots)", base_problem(128, 8, kH, kI), 6}, true},
           {{"E8 K2 T3 (6 slots)", base_problem(8, 2, kH, kI), 3}, true},
           {{"E8 K2 T4 (8 slots: the stages)", base_problem(8, 2, kH, kI), 4}, false},
           {{"E64 K8 T8 (64 slots: the stages)", base_problem(64, 8, kH, kI), 8}, false}}) {
    SCOPED_TRACE(c.name);
    const Outcome o = run_case(c, 70);
    EXPECT_EQ(o.steps == kTokens, expect_tokens) << c.name << ": " << o.steps;
    EXPECT_EQ(o.errors.non_finite, 0);
    EXPECT_LE(o.errors.gpu, 2 * o.errors.naive + 1e-6) << c.name;
  }
}

// What the kernel declines runs elsewhere, still correct: T*K over its slot tables, the router weight
// on the input, hidden rows over its shared-memory budget, T = 9; and the stage pipeline when the
// caller turns whole-layer kernels off.
TEST(DecodeTokensCuda, DeclinedProblemsRunElsewhere) {
  MOEKIT_REQUIRE_GPU();
  std::vector<Case> cases;
  cases.push_back({"T*K = 72: E64 K9 T8", base_problem(64, 9, kH, kI), 8});
  Case on_input{"weight on input E16 K1 T4", base_problem(16, 1, kH, kI), 4};
  on_input.problem.apply_router_weight_on_input = true;
  cases.push_back(on_input);
  cases.push_back({"E2 K1 H16400 I8 T8: hidden rows over the budget even in 16 bits", base_problem(2, 1, 16400, 8), 8});
  cases.push_back({"T9 E8 K2", base_problem(8, 2, kH, kI), 9});
  Case off{"whole_layer off T4", base_problem(8, 2, kH, kI), 4};
  off.fusions.whole_layer = Switch::kOff;
  cases.push_back(off);
  uint64_t seed = 600;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Outcome o = run_case(c, ++seed);
    EXPECT_EQ(o.steps.find(kTokens), std::string::npos) << c.name << ": " << o.steps;
    EXPECT_EQ(o.errors.non_finite, 0);
    EXPECT_LE(o.errors.gpu, 2 * o.errors.naive + 1e-6) << c.name;
  }
}

TEST(DecodeTokensCuda, GraphReplaysWithNewRouting) {
  MOEKIT_REQUIRE_GPU();
  MoeProblem p = base_problem(64, 6, kH, kI);
  p.routing.method = RoutingMethod::kDeepSeekV3;
  p.routing.n_group = 8;
  p.routing.topk_group = 4;
  expect_graph_replays_with_new_routing({.problem = p, .tokens = 6, .layer_seed = 63, .logits_seed = 91, .replays = 4, .first_step = kTokens});
}

}  // namespace
}  // namespace moekit
