// Per-stage work, number by number, from the experts actually active: each stage has its own FLOPs
// and bytes (seed 003's tuner printed the combined figure for every stage because a `stage` variable
// was reset before the per-stage branches; here the stages must differ and match the formulas).
#include <gtest/gtest.h>

#include "tune/metrics.h"
#include "tune/output_check.h"

namespace moekit::tune {
namespace {

// E=8 (local 2..5), K=2, H=64, I=32, bf16, SwiGLU (N1 = 64), T=4.
MoeProblem problem() {
  MoeProblem p{.num_experts = 8, .top_k = 2, .hidden = 64, .intermediate = 32};
  p.local_expert_begin = 2;
  p.num_local_experts = 4;
  return p;
}

TEST(TuneMetrics, ActiveExpertsAreTheDistinctLocalOnes) {
  // Rows to experts 2,2,3,7 | 0,5,5,1: local rows 2,2,3,5,5 -> R = 5 over 3 distinct experts.
  const int32_t ids[] = {2, 2, 3, 7, 0, 5, 5, 1};
  const RoutingStats r = routing_stats(problem(), 4, ids);
  EXPECT_EQ(r.rows, 5);
  EXPECT_EQ(r.active_experts, 3);
  EXPECT_EQ(r.tokens, 4);
  EXPECT_EQ(r.out_rows, 4);
}

TEST(TuneMetrics, EachStageHasItsOwnWork) {
  const MoeProblem p = problem();
  const RoutingStats r{.tokens = 4, .rows = 5, .active_experts = 3, .out_rows = 4};
  // gemm1: 2*R*H*N1 = 2*5*64*64; bytes = 3 experts * 64*64 * 2 + R*H*2 + R*N1*2.
  const Work g1 = stage_work(p, Stage::kGemm1, r);
  EXPECT_DOUBLE_EQ(g1.flops, 2.0 * 5 * 64 * 64);
  EXPECT_DOUBLE_EQ(g1.bytes, 3.0 * 64 * 64 * 2 + 5 * 64 * 2 + 5 * 64 * 2);
  // gemm2: 2*R*I*H; bytes = 3 * H*I * 2 + R*I*2 + R*H*2.
  const Work g2 = stage_work(p, Stage::kGemm2, r);
  EXPECT_DOUBLE_EQ(g2.flops, 2.0 * 5 * 32 * 64);
  EXPECT_DOUBLE_EQ(g2.bytes, 3.0 * 64 * 32 * 2 + 5 * 32 * 2 + 5 * 64 * 2);
  EXPECT_DOUBLE_EQ(stage_work(p, Stage::kRoute, r).bytes, 4.0 * 8 * 4 + 4 * 2 * 8);
  EXPECT_DOUBLE_EQ(stage_work(p, Stage::kBuildMaps, r).bytes, 4.0 * 2 * 4 + 5 * 20 + 5 * 8 + 5 * 8);
  EXPECT_DOUBLE_EQ(stage_work(p, Stage::kExpand, r).bytes, 2.0 * 5 * 64 * 2);
  EXPECT_DOUBLE_EQ(stage_work(p, Stage::kActivation, r).bytes, 5.0 * 64 * 2 + 5 * 32 * 2);
  EXPECT_DOUBLE_EQ(stage_work(p, Stage::kFinalize, r).bytes, 5.0 * 64 * 2 + 4 * 64 * 2);
  for (Stage s : {Stage::kRoute, Stage::kBuildMaps, Stage::kExpand, Stage::kActivation, Stage::kFinalize})
    EXPECT_EQ(stage_work(p, s, r).flops, 0) << stage_name(s);
  // Not the whole layer's figure: the per-stage numbers differ from each other and from the total.
  const Work all = step_work(p, Stage::kRoute, Stage::kFinalize, r);
  EXPECT_DOUBLE_EQ(all.flops, g1.flops + g2.flops);
  EXPECT_LT(g1.bytes, all.bytes);
  EXPECT_NE(g1.bytes, g2.bytes);
  // A fused step counts the work of the stages it replaces.
  const Work fused = step_work(p, Stage::kGemm1, Stage::kActivation, r);
  EXPECT_DOUBLE_EQ(fused.bytes, g1.bytes + stage_work(p, Stage::kActivation, r).bytes);
  // Rates: 1 us for 2e6 FLOPs = 2 TFLOP/s... per microsecond: flops / us / 1e6.
  EXPECT_DOUBLE_EQ(tflops({2e6, 0}, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(gbps({0, 5e3}, 1.0), 5.0);
  EXPECT_EQ(tflops(g1, 0), 0);
}

TEST(TuneMetrics, QuantizedWeightsCountTheirStorage) {
  MoeProblem p = problem();
  p.quant = QuantScheme::kMxfp4;
  EXPECT_DOUBLE_EQ(weight_element_bytes(p), 0.5);
  p.quant = QuantScheme::kFp8Block;
  EXPECT_DOUBLE_EQ(weight_element_bytes(p), 1.0);
  p.quant = QuantScheme::kNone;
  EXPECT_DOUBLE_EQ(weight_element_bytes(p), 2.0);
}

TEST(TuneMetrics, AcceptanceMetricPerScheme) {
  MoeProblem p = problem();
  OutputError e;
  e.normalized = 1e-3;
  e.cosine = 0.9999;
  EXPECT_EQ(accept_output(p, e).metric, "rel_err");
  EXPECT_TRUE(accept_output(p, e).passed);
  e.normalized = 0.1;
  EXPECT_FALSE(accept_output(p, e).passed);
  p.quant = QuantScheme::kFp8Block;
  EXPECT_EQ(accept_output(p, e).metric, "cosine");
  EXPECT_TRUE(accept_output(p, e).passed);
  e.non_finite = 1;
  EXPECT_FALSE(accept_output(p, e).passed);
}

}  // namespace
}  // namespace moekit::tune
