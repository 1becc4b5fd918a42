// The whole-layer decode kernel (src/cuda/moe/decode_layer.cuh, "cuda.decode_layer") against the
// float64 oracle with moe_case.h's tolerance, bitwise against the stage pipeline on the same stream
// tiles, bitwise against itself across runs, in a CUDA graph replayed with new routing (its
// counters must start from zero every replay), and at its edge cases: no local expert hit, an expert
// repeated within a token (more rows than a CTA holds).
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/naive_moe.h"
#include "cuda/moe/moe_launch.h"
#include "moe_case.h"
#include "moekit/runner.h"

namespace moekit {
namespace {

constexpr const char* kDecode = "cuda.decode_layer";

// The decode layer is off by default (the stages are preferred for cost), and up to T = 8 the GEMV
// kernels are registered before it: every case turns it on by name.
Outcome run_decode(Case c, uint64_t seed) {
  c.fusions.whole_layer = Switch::kOn;
  c.fusions.whole_layer_impl = kDecode;
  return run_case(c, seed);
}

void expect_decode_within_tolerance(const Case& c, uint64_t seed) {
  SCOPED_TRACE(c.name);
  const Outcome o = run_decode(c, seed);
  EXPECT_EQ(o.steps, kDecode) << c.name << ": the plan ran " << o.steps;
  EXPECT_EQ(o.errors.non_finite, 0) << c.name;
  EXPECT_LE(o.errors.gpu, 2 * o.errors.naive + 1e-6) << c.name << ": gpu err " << o.errors.gpu << " naive16 err " << o.errors.naive;
  std::printf("  %-60s err %.3e  naive16 %.3e\n", c.name.c_str(), o.errors.gpu, o.errors.naive);
}

Case gpt_oss(int E, int K, int64_t T) { return gpt_oss_case(E, K, 2880, 1408, T); }

TEST(DecodeLayerCuda, TokenCountsAndRowsPerCta) {
  MOEKIT_REQUIRE_GPU();
  // 8, 16 and 32 routed rows per CTA (T <= 8, <= 16, <= 32); T = 0 launches nothing. At T = 1 the
  // whole-layer path is the one-token kernel (registered first; test_decode_token_cuda.cpp).
  for (int64_t T : {0, 2, 3, 8, 9, 16, 17, 32}) {
    Case c{"softmax E8 K2 T" + std::to_string(T), base_problem(8, 2, kH, kI), T};
    if (T == 0) {
      c.fusions.whole_layer = Switch::kOn;
      expect_within_tolerance(c, 200);
      continue;
    }
    expect_decode_within_tolerance(c, 200 + T);
  }
  expect_decode_within_tolerance({"one expert E1 K1 T5", base_problem(1, 1, kH, kI), 5}, 230);
}

TEST(DecodeLayerCuda, RoutingMethodsAndWideExperts) {
  MOEKIT_REQUIRE_GPU();
  // T = 7, and 17 (a CTA of 32 routed rows) for the plain top-k of E64 K8.
  uint64_t seed = 0;
  for (const Case& c : routing_method_cases(7)) expect_decode_within_tolerance(c, ++seed);
  expect_decode_within_tolerance(routing_method_cases(17)[2], ++seed);
}

TEST(DecodeLayerCuda, ActivationsLayoutsAndBiases) {
  MOEKIT_REQUIRE_GPU();
  expect_decode_within_tolerance(gpt_oss(16, 4, 5), 5);
  uint64_t seed = 5;
  for (const Case& c : every_activation_case(3)) expect_decode_within_tolerance(c, ++seed);
}

TEST(DecodeLayerCuda, ExpertParallelNoCombineAndPreRouted) {
  MOEKIT_REQUIRE_GPU();
  expect_decode_within_tolerance(expert_range_no_combine_case(9), 20);
  expect_decode_within_tolerance(expert_map_case(4), 21);
  expect_decode_within_tolerance(prerouted_f16_relu2_case(6), 22);
}

TEST(DecodeLayerCuda, EveryGemm2Split) {
  MOEKIT_REQUIRE_GPU();
  for (const char* split : {"1", "2", "4", "8"}) {  // I = 2048: 16 k tiles, every split legal
    Case c{std::string("decode.split ") + split + " biases E8 K2 I2048 T3", base_problem(8, 2, kH, 2048), 3, true};
    c.choice.knobs = {{"decode.split", split}};
    expect_decode_within_tolerance(c, 300);
  }
  Case odd = gpt_oss(8, 4, 2);  // I = 1408: 11 k tiles, split 4 = 3 + 3 + 3 + 2
  odd.name += " decode.split 4";
  odd.choice.knobs = {{"decode.split", "4"}};
  expect_decode_within_tolerance(odd, 301);
}

// At split 1 the decode layer computes exactly what the stage pipeline computes on the stream tiles
// without a K split, with the unfused (fixed-order) finalize: the same products in the same order.
TEST(DecodeLayerCuda, BitwiseEqualToTheStagePipelineOnStreamTiles) {
  MOEKIT_REQUIRE_GPU();
  std::vector<Case> cases;
  cases.push_back({"swiglu biases E8 K2 T3", base_problem(8, 2, kH, kI), 3, true});
  cases.push_back(gpt_oss(16, 4, 5));
  Case plain{"relu2 no_combine E4 K2 T5", base_problem(4, 2, kH, kI), 5};
  plain.problem.activation.kind = Activation::kReLU2;
  plain.problem.no_combine = true;
  cases.push_back(plain);
  Case map = expert_map_case(4);
  map.name += ", scale 2.5";
  map.problem.routing.routed_scaling_factor = 2.5f;
  cases.push_back(map);
  uint64_t seed = 310;
  for (Case c : cases) {
    ++seed;
    c.choice.knobs = {{"decode.split", "1"}};
    const Outcome fused = run_decode(c, seed);
    EXPECT_EQ(fused.steps, kDecode) << c.name;
    c.fusions.whole_layer = Switch::kOff;
    c.fusions.gemm1_activation = Switch::kOn;
    c.fusions.gemm2_finalize = Switch::kOff;
    c.choice.knobs = {{"gemm1.tile", "stream_n8k128"}, {"gemm2.tile", "stream_n8k128"}};
    if (hopper()) {
      c.choice.knobs["gemm1.split"] = "1";
      c.choice.knobs["gemm2.split"] = "1";
    }
    const Outcome staged = run_case(c, seed);
    EXPECT_NE(staged.steps.find("cuda.gemm2"), std::string::npos) << staged.steps;
    ASSERT_EQ(fused.out.size(), staged.out.size()) << c.name;
    EXPECT_EQ(std::memcmp(fused.out.data(), staged.out.data(), fused.out.size() * sizeof(double)), 0) << c.name;
  }
}

TEST(DecodeLayerCuda, BitwiseStableAcrossRuns) {
  MOEKIT_REQUIRE_GPU();
  Case c{"deterministic split 4 E64 K8 I2048 T13", base_problem(64, 8, kH, 2048), 13, true};
  c.problem.deterministic = true;
  c.choice.knobs = {{"decode.split", "4"}};
  const Outcome a = run_decode(c, 50), b = run_decode(c, 50);
  EXPECT_EQ(a.steps, kDecode);
  ASSERT_EQ(a.out.size(), b.out.size());
  EXPECT_EQ(std::memcmp(a.out.data(), b.out.data(), a.out.size() * sizeof(double)), 0);
  EXPECT_LE(a.errors.gpu, 2 * a.errors.naive + 1e-6);
}

// PreRouted ids, written by the test: every slot on a remote expert (the output is zeros), and one
// expert taking every slot of every token (80 rows: more than a CTA's 32, taken in turns).
TEST(DecodeLayerCuda, NoLocalExpertAndRepeatedExperts) {
  MOEKIT_REQUIRE_GPU();
  for (bool no_combine : {false, true}) {
    const Case none = only_remote_experts_case(3, no_combine);
    const Outcome o = run_decode(none, 400);
    EXPECT_EQ(o.steps, kDecode);
    ASSERT_FALSE(o.out.empty());
    for (double v : o.out) ASSERT_EQ(v, 0.0) << none.name << ": poison or garbage left in the output";
  }
  expect_decode_within_tolerance(one_expert_in_every_slot_case(20), 401);
}

// The workspace holds the decode layer's scratch only for a problem the layer takes: the CUDA
// backend sizes it by decode_layer_declines, which turns apply_router_weight_on_input away. Every
// other part of the two workspaces is the same, so they differ by the scratch (plus alignment).
TEST(DecodeLayerCuda, WorkspaceHoldsTheScratchOnlyWhereTheLayerRuns) {
  MOEKIT_REQUIRE_GPU();
  const int64_t T = 4;
  const int K = 1;  // apply_router_weight_on_input takes top_k = 1
  const MoeProblem taken = base_problem(64, K, kH, kI);
  MoeProblem declined = taken;
  declined.apply_router_weight_on_input = true;
  auto workspace_bytes = [&](const MoeProblem& p) -> size_t {
    auto layer = make_random_layer(p, {.num_tokens = T, .seed = 90});
    auto runner = MoeRunner::create(p, {.backend = BackendChoice::kCuda});
    if (!layer.ok() || !runner.ok()) {
      ADD_FAILURE() << (layer.ok() ? runner.status() : layer.status()).to_string();
      return 0;
    }
    auto bytes = runner->workspace_size(layer->inputs());
    if (!bytes.ok()) {
      ADD_FAILURE() << bytes.status().to_string();
      return 0;
    }
    return *bytes;
  };
  const size_t scratch = cuda::moe::decode_layer_scratch_bytes(T, K, kH, cuda::moe::kDecodeMaxSplit);
  const size_t with = workspace_bytes(taken), without = workspace_bytes(declined);
  ASSERT_GE(with, without);
  EXPECT_GE(with - without, scratch);
  EXPECT_LE(with - without, scratch + 512);
}

TEST(DecodeLayerCuda, GraphReplaysWithNewRouting) {
  MOEKIT_REQUIRE_GPU();
  MoeProblem p = base_problem(64, 6, kH, kI);
  p.routing.method = RoutingMethod::kDeepSeekV3;
  p.routing.n_group = 8;
  p.routing.topk_group = 4;
  FusionControls on;
  on.whole_layer = Switch::kOn;
  on.whole_layer_impl = kDecode;
  expect_graph_replays_with_new_routing({.problem = p, .tokens = 4, .layer_seed = 61, .logits_seed = 80, .replays = 4, .fusions = on, .first_step = kDecode});
}

}  // namespace
}  // namespace moekit
