#include "bench/variants.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/stats.h"

namespace moekit::bench {

Result<std::vector<PlanVariant>> parse_plan_variants(std::string_view text, const KernelChoice& base) {
  std::vector<PlanVariant> out;
  size_t start = 0;
  while (true) {
    const size_t bar = std::min(text.find('|', start), text.size());
    const std::string_view item = text.substr(start, bar - start);
    auto parsed = KernelChoice::parse(item);
    if (!parsed.ok())
      return parsed.status().with_context(fmt::format("--ab: variant {} ('{}')", out.size(), item));
    PlanVariant v{std::string(item), base};
    for (const auto& [name, value] : parsed->knobs) v.choice.knobs[name] = value;
    out.push_back(std::move(v));
    if (bar == text.size()) break;
    start = bar + 1;
  }
  if (out.size() < 2)
    return Status::InvalidArgument(fmt::format("--ab '{}': {} variant; give two or more plans separated by '|' (an empty one is the heuristic's)",
                                               text, out.size()));
  if (out.size() > static_cast<size_t>(kMaxPlanVariants))
    return Status::InvalidArgument(fmt::format("--ab: {} variants, at most {} (on a GPU each holds its own copies of the weights)",
                                               out.size(), kMaxPlanVariants));
  return out;
}

std::vector<int> variant_order(int set, int variants) {
  std::vector<int> order;
  for (int v = 0; v < variants; ++v) order.push_back(set % 2 == 0 ? v : variants - 1 - v);
  return order;
}

PairedChange paired_change(const std::vector<double>& variant, const std::vector<double>& first) {
  std::vector<double> changes;
  for (size_t s = 0; s < std::min(variant.size(), first.size()); ++s)
    if (first[s] > 0) changes.push_back(variant[s] / first[s] - 1.0);
  PairedChange c;
  if (changes.empty()) return c;
  const Summary sum = summarize(changes);
  c.sets = sum.count;
  c.median = sum.median;
  c.min = sum.min;
  c.max = sum.max;
  for (double ch : changes) {
    if (ch > 0) ++c.slower;
    if (ch < 0) ++c.faster;
  }
  c.sign_p = sign_test_p(c.slower, c.slower + c.faster);
  return c;
}

double sign_test_p(int k, int n) {
  if (n <= 0) return 1;
  const int tail = std::min(k, n - k);
  // sum over i <= tail of C(n, i) / 2^n, in logs so that large n does not overflow.
  double p = 0;
  for (int i = 0; i <= tail; ++i)
    p += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) - n * std::log(2.0));
  return std::min(1.0, 2 * p);
}

std::string paired_change_note(const PairedChange& c) {
  const bool mostly_slower = c.slower >= c.faster;
  return fmt::format("{:+.1f}% against v0 (sets {:+.1f}..{:+.1f}%; {} in {} of {}, sign test p={:.2g})", 100 * c.median, 100 * c.min,
                     100 * c.max, mostly_slower ? "slower" : "faster", mostly_slower ? c.slower : c.faster, c.sets, c.sign_p);
}

}  // namespace moekit::bench
