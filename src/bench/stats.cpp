#include "bench/stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace moekit::bench {
namespace {
double sorted_percentile(const std::vector<double>& s, double q) {
  if (s.empty()) return 0.0;
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(s.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - static_cast<double>(lo));
}
}  // namespace

double percentile(std::span<const double> values, double q) {
  std::vector<double> s(values.begin(), values.end());
  std::sort(s.begin(), s.end());
  return sorted_percentile(s, q);
}

Summary summarize(std::span<const double> values) {
  Summary r;
  if (values.empty()) return r;
  std::vector<double> s(values.begin(), values.end());
  std::sort(s.begin(), s.end());
  r.count = static_cast<int>(s.size());
  r.median = sorted_percentile(s, 0.5);
  r.min = s.front();
  r.max = s.back();
  r.p10 = sorted_percentile(s, 0.1);
  r.p90 = sorted_percentile(s, 0.9);
  r.spread = r.median > 0 ? (r.p90 - r.p10) / r.median : 0.0;
  return r;
}

}  // namespace moekit::bench
