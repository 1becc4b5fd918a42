// cuda::GraphReplays, the timing `moekit bench` and the tuner's worker share: each copy's graph is
// replayed in turn (counted by a kernel per copy), samples come back positive, and bad arguments
// and a failing enqueue are refused with their reason.
#include <string>
#include <vector>

#include "cuda/bench_timing.h"
#include "gpu_test_util.h"

namespace moekit::cuda {
namespace {

__global__ void count_replay(unsigned* counters, int copy) { atomicAdd(&counters[copy], 1u); }

std::vector<unsigned> read_counters(const DeviceBuffer<unsigned>& d) {
  std::vector<unsigned> h(d.count);
  cudaMemcpy(h.data(), d.p, d.bytes(), cudaMemcpyDeviceToHost);
  return h;
}

TEST(GraphReplays, EachCopyReplaysInTurn) {
  MOEKIT_REQUIRE_GPU();
  DeviceBuffer<unsigned> counters(3);
  ASSERT_NE(counters.p, nullptr);
  MOEKIT_ASSERT_CUDA(cudaMemset(counters.p, 0, counters.bytes()));
  auto g = GraphReplays::capture(3, [&](int copy, void* stream) {
    count_replay<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(counters.p, copy);
    return cudaGetLastError() == cudaSuccess ? Status::Ok() : Status::Internal("count_replay launch");
  });
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->copies(), 3);
  EXPECT_EQ(read_counters(counters), (std::vector<unsigned>{0, 0, 0})) << "capture must not run anything";

  // One warm-up round (one replay of each copy), then two samples of five replays: copies
  // 0, 1, 2, 0, 1 each time.
  auto us = g->time(1, 5, 2);
  ASSERT_TRUE(us.ok()) << us.status().to_string();
  ASSERT_EQ(us->size(), 2u);
  for (double t : *us) EXPECT_GT(t, 0.0);
  EXPECT_EQ(read_counters(counters), (std::vector<unsigned>{5, 5, 3}));

  ASSERT_TRUE(g->replay(2).ok());
  EXPECT_EQ(read_counters(counters), (std::vector<unsigned>{5, 5, 4}));
}

TEST(GraphReplays, RefusesBadArgumentsAndReportsAFailedEnqueue) {
  MOEKIT_REQUIRE_GPU();
  auto none = GraphReplays::capture(0, [](int, void*) { return Status::Ok(); });
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("copies must be at least 1, got 0"), std::string::npos) << none.status().to_string();

  auto failing = GraphReplays::capture(2, [](int copy, void*) {
    return copy == 1 ? Status::InvalidArgument("copy 1 has no weights") : Status::Ok();
  });
  ASSERT_FALSE(failing.ok());
  EXPECT_EQ(failing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(failing.status().to_string().find("copy 1 has no weights"), std::string::npos) << failing.status().to_string();
  EXPECT_NE(failing.status().to_string().find("during graph capture"), std::string::npos) << failing.status().to_string();

  auto g = GraphReplays::capture(1, [](int, void*) { return Status::Ok(); });  // an empty graph
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_FALSE(g->time(0, 0, 1).ok());
  EXPECT_FALSE(g->time(0, 1, 0).ok());
  EXPECT_FALSE(g->time(-1, 1, 1).ok());
  auto out_of_range = g->replay(1);
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.message().find("copy 1 is not in [0, 1)"), std::string::npos) << out_of_range.to_string();
  EXPECT_TRUE(g->replay(0).ok());
}

TEST(GraphReplays, RotatedCopiesCoverTwiceTheL2WithinFreeMemory) {
  MOEKIT_REQUIRE_GPU();
  const int64_t l2 = query_system().devices.front().l2_cache_bytes;
  auto small = rotated_weight_copies(static_cast<double>(l2) / 4, 1e6);  // 8 calls cover twice the L2
  ASSERT_TRUE(small.ok()) << small.status().to_string();
  EXPECT_EQ(*small, 8);
  auto large = rotated_weight_copies(4.0 * static_cast<double>(l2), 1e9);  // one call already does
  ASSERT_TRUE(large.ok());
  EXPECT_EQ(*large, 1);
  auto tiny = rotated_weight_copies(1.0, 1.0);  // at most 16
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(*tiny, 16);
  auto huge = rotated_weight_copies(1.0, 1e18);  // none fits: still one, the weights the caller has
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(*huge, 1);
}

}  // namespace
}  // namespace moekit::cuda
