// `moekit bench --ab`: several plans of one layer timed side by side in one process, in turns, on
// the same weights, inputs and routing draws, each reported against the first (docs/bench.md).
// Separate processes differ by their own history (docs/perf-notes.md step 21 g measured the same
// kernels 7% apart between two), which an A/B in one process shares between its variants.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "moekit/plan.h"
#include "moekit/status.h"

namespace moekit::bench {

// At most this many variants: on a GPU each holds its own copies of the weights.
inline constexpr int kMaxPlanVariants = 8;

struct PlanVariant {
  std::string text;     // as given ("" for the heuristic's plan)
  KernelChoice choice;  // the base choice (--choice) with the variant's knobs on top
};

// "CHOICE|CHOICE|...": two to kMaxPlanVariants choices (NAME=VALUE;... each, as --choice; an empty
// one is the heuristic's plan), each merged over `base` (its own value wins for a knob in both).
Result<std::vector<PlanVariant>> parse_plan_variants(std::string_view text, const KernelChoice& base);

// The order the variants run in within measurement set `set`: first to last in even sets, last to
// first in odd ones, so that no variant always runs right after the same one.
std::vector<int> variant_order(int set, int variants);

// A variant against the first, paired by set: each set's median time over the first's, less one.
// The sign test asks how likely as lopsided a split of slower and faster sets would be if the two
// plans were the same (each set a fair coin): a median change means little where it is not small.
// Sets of the same time count on neither side.
struct PairedChange {
  int sets = 0;
  double median = 0, min = 0, max = 0;  // of the per-set changes (0.05: 5% slower)
  int slower = 0, faster = 0;           // sets in which the variant was slower / faster
  double sign_p = 1;                    // two-sided exact sign test over slower + faster sets
};
// `variant` and `first` hold one median a set, in set order; the shorter length counts.
PairedChange paired_change(const std::vector<double>& variant, const std::vector<double>& first);

// P(a split of n fair coins at least as uneven as k against n - k), both tails: the sign test's
// p-value (1 for n = 0).
double sign_test_p(int k, int n);

// The note of a vN row: "+2.2% against v0 (sets -1.6..+4.8%; slower in 10 of 12, sign test p=0.039)".
std::string paired_change_note(const PairedChange& c);

}  // namespace moekit::bench
