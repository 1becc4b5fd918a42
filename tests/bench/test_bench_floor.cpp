// The floor arithmetic of `moekit bench` (shared/PERFORMANCE.md), on hand-computed cases: weight
// bytes per expert for several schemes, distinct experts hit, expert-parallel ranges, the bound.
#include <gtest/gtest.h>

#include <vector>

#include "bench/floor.h"
#include "moekit/random_layer.h"

namespace moekit::bench {
namespace {

MoeProblem problem(int E, int K, int H, int I) {
  return {.num_experts = E, .top_k = K, .hidden = H, .intermediate = I,
          .routing = {.method = RoutingMethod::kSoftmaxTopK, .renormalize = true}};
}

WeightBytes bytes_of(const MoeProblem& p) {
  auto layer = make_random_layer(p, {.weights_only = true});
  EXPECT_TRUE(layer.ok()) << layer.status().to_string();
  return weight_bytes(layer->weights, p.local_experts());
}

TEST(BenchFloor, Bf16ExpertIsThreeMatricesOfTwoBytes) {
  const MoeProblem p = problem(8, 2, 256, 128);  // SwiGLU: gemm1_rows = 2I
  const WeightBytes w = bytes_of(p);
  EXPECT_DOUBLE_EQ(w.per_expert, (2.0 * 128 * 256 + 256.0 * 128) * 2);
  EXPECT_DOUBLE_EQ(w.shared, 0);
}

TEST(BenchFloor, QuantizedSchemesCountWhatTheyStore) {
  MoeProblem p = problem(4, 2, 256, 128);
  p.quant = QuantScheme::kFp8Block;  // 1 byte per weight + one f32 scale per 128x128 block
  const double fp8 = 3.0 * 256 * 128 + 4.0 * ((256 / 128) * (256 / 128) + (256 / 128) * (128 / 128));
  EXPECT_DOUBLE_EQ(bytes_of(p).per_expert, fp8);
  p.quant = QuantScheme::kMxfp4;  // half a byte per weight + one e8m0 byte per 32 along K
  const double mx = 3.0 * 256 * 128 / 2 + (256.0 * 256 / 32 + 256.0 * 128 / 32);
  EXPECT_DOUBLE_EQ(bytes_of(p).per_expert, mx);
}

TEST(BenchFloor, CountsDistinctExpertsHitAndRoutedRows) {
  const MoeProblem p = problem(8, 2, 64, 32);
  const WeightBytes w{.per_expert = 1000, .shared = 0};
  // T = 3: experts 1 and 5 twice each, 7 once, 2 once: 4 distinct, 6 rows.
  const std::vector<int32_t> ids{1, 5, 5, 7, 1, 2};
  const LayerTraffic t = layer_traffic(p, ids, w, 500);
  EXPECT_EQ(t.experts_hit, 4);
  EXPECT_EQ(t.routed_rows, 6);
  EXPECT_EQ(t.max_expert_rows, 2);  // experts 1 and 5
  EXPECT_DOUBLE_EQ(t.weight_bytes, 4000);
  EXPECT_DOUBLE_EQ(t.bytes(), 4500);
  EXPECT_DOUBLE_EQ(t.flops, 2.0 * 6 * (64 + 32) * 64);
}

TEST(BenchFloor, ExpertParallelCountsOnlyLocalExperts) {
  MoeProblem p = problem(16, 2, 64, 32);
  p.local_expert_begin = 4;
  p.num_local_experts = 4;  // experts 4..7
  const WeightBytes w{.per_expert = 10, .shared = 3};
  const std::vector<int32_t> ids{3, 4, 7, 8, 4, 15, 0, 1};
  const LayerTraffic t = layer_traffic(p, ids, w, 0);
  EXPECT_EQ(t.experts_hit, 2);   // 4 and 7
  EXPECT_EQ(t.routed_rows, 3);   // 4, 7, 4
  EXPECT_EQ(t.max_expert_rows, 2);  // expert 4 (ids outside 4..7 are another rank's)
  EXPECT_DOUBLE_EQ(t.weight_bytes, 2 * 10 + 3);
  const LayerTraffic none = layer_traffic(p, std::vector<int32_t>{0, 1, 2, 3}, w, 0);
  EXPECT_EQ(none.experts_hit, 0);
  EXPECT_EQ(none.max_expert_rows, 0);
  EXPECT_DOUBLE_EQ(none.weight_bytes, 0);  // nothing local: not even the shared weights are read
  EXPECT_DOUBLE_EQ(none.flops, 0);
}

TEST(BenchFloor, FloorIsTheLargerBound) {
  LayerTraffic t;
  t.weight_bytes = 4e9;
  t.activation_bytes = 0;
  t.flops = 1e12;
  const Floor tie = layer_floor(t, 4e12, 1e15);  // 1 ms either way: memory, the decode-side name
  EXPECT_DOUBLE_EQ(tie.memory_seconds, 1e-3);
  EXPECT_DOUBLE_EQ(tie.compute_seconds, 1e-3);
  EXPECT_EQ(tie.bound, "memory");
  const Floor compute = layer_floor(t, 8e12, 1e15);
  EXPECT_EQ(compute.bound, "compute");
  EXPECT_DOUBLE_EQ(compute.seconds, 1e-3);
  const Floor memory = layer_floor(t, 2e12, 1e15);
  EXPECT_EQ(memory.bound, "memory");
  EXPECT_DOUBLE_EQ(memory.seconds, 2e-3);
  const Floor no_peak = layer_floor(t, 2e12, 0);  // an unmeasured ceiling gives no bound
  EXPECT_EQ(no_peak.bound, "memory");
  EXPECT_DOUBLE_EQ(no_peak.compute_seconds, 0);
}

// PERFORMANCE.md's Mixtral T=1 row: 2 experts of 3 x 4096 x 14336 bf16 over 4.40 TB/s = 0.160 ms.
TEST(BenchFloor, MatchesPerformanceTableMixtralDecode) {
  const MoeProblem p = problem(8, 2, 4096, 14336);
  const WeightBytes w{.per_expert = 3.0 * 4096 * 14336 * 2, .shared = 0};
  const LayerTraffic t = layer_traffic(p, std::vector<int32_t>{3, 6}, w, 0);
  const Floor f = layer_floor(t, 4.40e12, 770e12);
  EXPECT_EQ(f.bound, "memory");
  EXPECT_NEAR(f.seconds * 1e3, 0.160, 0.001);
}

}  // namespace
}  // namespace moekit::bench
