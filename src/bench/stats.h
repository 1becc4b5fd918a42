// Summary statistics of repeated timings: what `moekit bench` reports for every measurement.
#pragma once

#include <span>

namespace moekit::bench {

struct Summary {
  int count = 0;
  double median = 0, min = 0, max = 0;
  double p10 = 0, p90 = 0;  // percentiles by linear interpolation between order statistics
  double spread = 0;        // (p90 - p10) / median: the relative width of the middle 80%
};

// Percentile q in [0, 1] of `values` (any order), interpolated linearly between neighbouring order
// statistics (q = 0.5 of an even count is the mean of the middle two). 0 for an empty span.
double percentile(std::span<const double> values, double q);

// Every field of Summary; all zero for an empty span.
Summary summarize(std::span<const double> values);

}  // namespace moekit::bench
