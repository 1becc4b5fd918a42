// The statistics `moekit bench` reports: hand-computed percentiles, median, spread.
#include <gtest/gtest.h>

#include <vector>

#include "bench/stats.h"

namespace moekit::bench {
namespace {

TEST(BenchStats, EmptyIsAllZero) {
  const Summary s = summarize({});
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.median, 0);
  EXPECT_EQ(s.spread, 0);
}

TEST(BenchStats, OneValue) {
  const std::vector<double> v{7.5};
  const Summary s = summarize(v);
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.median, 7.5);
  EXPECT_EQ(s.min, 7.5);
  EXPECT_EQ(s.p10, 7.5);
  EXPECT_EQ(s.p90, 7.5);
  EXPECT_EQ(s.spread, 0);
}

TEST(BenchStats, OddAndEvenMedianInAnyOrder) {
  const std::vector<double> odd{5, 1, 3}, even{4, 1, 3, 2};
  EXPECT_EQ(summarize(odd).median, 3);
  EXPECT_EQ(summarize(even).median, 2.5);  // mean of the middle two
}

TEST(BenchStats, PercentilesInterpolateBetweenOrderStatistics) {
  // 11 values 0..10 (shuffled): the q-percentile is 10 q exactly.
  const std::vector<double> v{3, 9, 0, 10, 1, 7, 5, 2, 8, 6, 4};
  const Summary s = summarize(v);
  EXPECT_DOUBLE_EQ(s.p10, 1.0);
  EXPECT_DOUBLE_EQ(s.p90, 9.0);
  EXPECT_DOUBLE_EQ(s.median, 5.0);
  EXPECT_DOUBLE_EQ(s.spread, 8.0 / 5.0);
  EXPECT_EQ(s.min, 0);
  EXPECT_EQ(s.max, 10);
  // Between order statistics: 4 values 10, 20, 30, 40; q = 0.1 lies at position 0.3.
  const std::vector<double> w{40, 10, 30, 20};
  EXPECT_DOUBLE_EQ(percentile(w, 0.1), 13.0);
  EXPECT_DOUBLE_EQ(percentile(w, 0.9), 37.0);
  EXPECT_DOUBLE_EQ(percentile(w, 0.0), 10.0);
  EXPECT_DOUBLE_EQ(percentile(w, 1.0), 40.0);
}

}  // namespace
}  // namespace moekit::bench
