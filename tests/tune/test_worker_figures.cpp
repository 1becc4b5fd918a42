// The worker's TFLOP/s and GB/s come from the rows actually routed to each local expert, read from the
// layer's own routing tensors: for an Indexed layer, the differences of expert_offsets (i32, as
// MoeInputs says; read as i64 they gave nonsense counts and read past the tensor).
#include <gtest/gtest.h>

#include <vector>

#include "moekit/random_layer.h"
#include "tune/metrics.h"
#include "tune/worker.h"

namespace moekit::tune {
namespace {

TEST(WorkerFigures, IndexedRowsComeFromTheOffsets) {
  MoeProblem p{.num_experts = 4, .top_k = 2, .hidden = 32, .intermediate = 16};
  p.input_format = InputFormat::kIndexed;
  const WorkerRequest rq{.problem = p, .tokens = 6, .backend = BackendChoice::kCpu, .seed = 3, .warmup = 0, .iters = 1, .per_step = false};
  auto r = run_candidate(rq);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(r->ok) << r->failure;

  RandomLayerOptions lo = worker_layer_options(rq.tokens, rq.seed);
  lo.inputs_only = true;
  auto layer = make_random_layer(p, lo);
  ASSERT_TRUE(layer.ok());
  std::vector<int64_t> counts;
  const int32_t* off = layer->expert_offsets.data_as<const int32_t>();
  for (int64_t e = 0; e < p.local_experts(); ++e) counts.push_back(off[e + 1] - off[e]);
  const RoutingStats stats = routing_stats_from_counts(p, rq.tokens, rq.tokens, counts);
  EXPECT_EQ(stats.rows, 12);  // every token to K=2 of the 4 local experts
  const Work w = step_work(p, Stage::kRoute, Stage::kFinalize, stats);
  EXPECT_DOUBLE_EQ(r->tflops, tflops(w, r->median_us));
  EXPECT_DOUBLE_EQ(r->gbps, gbps(w, r->median_us));
}

}  // namespace
}  // namespace moekit::tune
