// Selection: the best value per knob from the stage-wise runs (failures never chosen), the
// end-to-end candidates, and the --update-improved rule.
#include <gtest/gtest.h>

#include "tune/tuner.h"

namespace moekit::tune {
namespace {

std::vector<KnobSpec> space() {
  return {{"gemm1.tile", {"a", "b", "c"}, "a", Stage::kGemm1},
          {"gemm2.split_k", {"1", "2"}, "1", Stage::kGemm2},
          {"fusion.gemm2_finalize", {"off", "on"}, "off", Stage::kFinalize}};
}

// A result whose gemm1 step takes g1 us and gemm2 step g2 us; end to end g1 + g2 + 10.
Measured run(KernelChoice c, double g1, double g2, bool ok = true) {
  WorkerResult r;
  r.ok = ok;
  r.median_us = g1 + g2 + 10;
  r.steps = {{"k.gemm1", "gemm1", int(Stage::kGemm1), int(Stage::kGemm1), g1}, {"k.gemm2", "gemm2", int(Stage::kGemm2), int(Stage::kGemm2), g2}};
  return {std::move(c), r};
}

TEST(TuneSelect, StagewiseCandidatesVaryOneKnobAtATime) {
  const auto c = stagewise_candidates(space());
  ASSERT_EQ(c.size(), 5u);  // heuristic + b, c + 2 + on
  EXPECT_TRUE(c[0].knobs.empty());
  for (size_t i = 1; i < c.size(); ++i) EXPECT_EQ(c[i].knobs.size(), 1u);
}

TEST(TuneSelect, BestPerKnobUsesItsStageAndNeverAFailure) {
  const std::vector<Measured> m = {
      run({}, 50, 40),
      run({{{"gemm1.tile", "b"}}}, 30, 45),  // gemm1 faster (its gemm2 noise does not matter)
      run({{{"gemm1.tile", "c"}}}, 10, 40, /*ok=*/false),  // fastest, but failed validation
      run({{{"gemm2.split_k", "2"}}}, 50, 41),  // gemm2 slower
      run({{{"fusion.gemm2_finalize", "on"}}}, 50, 30),  // end to end faster
  };
  const auto best = best_per_knob(space(), m);
  EXPECT_EQ(best.at("gemm1.tile"), "b");
  EXPECT_EQ(best.at("gemm2.split_k"), "1");
  EXPECT_EQ(best.at("fusion.gemm2_finalize"), "on");
}

TEST(TuneSelect, FinalCandidatesAreTheBestFew) {
  const auto f = final_candidates(space(), {{"gemm1.tile", "b"}, {"gemm2.split_k", "1"}, {"fusion.gemm2_finalize", "on"}}, 3);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_TRUE(f[0].knobs.empty());
  EXPECT_EQ(f[1].to_string(), "fusion.gemm2_finalize=on;gemm1.tile=b");
  EXPECT_EQ(f[2].to_string(), "gemm1.tile=b");
  EXPECT_EQ(f[3].to_string(), "fusion.gemm2_finalize=on");
  // Nothing beats the heuristic: only the heuristic runs end to end.
  EXPECT_EQ(final_candidates(space(), {{"gemm1.tile", "a"}}, 3).size(), 1u);
}

TEST(TuneSelect, UpdateImprovedNeedsMoreThanThresholdAndNoise) {
  TuningRow old_row;
  old_row.time_us = 100;
  old_row.noise_us = 1;
  TuningRow n;
  n.noise_us = 1;
  n.time_us = 98;  // 2% better: under 3%
  EXPECT_FALSE(update_improved(&old_row, n, 0.03).replace);
  n.time_us = 96;  // 4% better, above the noise
  EXPECT_TRUE(update_improved(&old_row, n, 0.03).replace);
  n.noise_us = 5;  // 4% better but the timings spread 5 us
  EXPECT_FALSE(update_improved(&old_row, n, 0.03).replace);
  EXPECT_NE(update_improved(&old_row, n, 0.03).why.find("noise 5.0 us"), std::string::npos);
  EXPECT_TRUE(update_improved(nullptr, n, 0.03).replace);
}

WorkerResult timed(double median, double min, double max, bool ok = true) {
  WorkerResult r;
  r.ok = ok;
  r.median_us = median;
  r.min_us = min;
  r.max_us = max;
  return r;
}

TEST(TuneSelect, ARowMustBeatTheHeuristicByMoreThanTheNoise) {
  const WorkerResult heuristic = timed(100, 99, 102);           // spread 3 us
  EXPECT_FALSE(tie_with_heuristic(timed(96, 95.5, 96.5), &heuristic).ties);  // 4 us better, spread 3
  const TieCheck close = tie_with_heuristic(timed(98, 97.5, 98.5), &heuristic);
  EXPECT_TRUE(close.ties);                                       // 2 us better, within 3
  EXPECT_EQ(close.why, "the heuristic ties the best: 100.0 us against 98.0 us, within the noise 3.0 us");
  EXPECT_TRUE(tie_with_heuristic(heuristic, &heuristic).ties);   // the heuristic's own choice won
  EXPECT_TRUE(tie_with_heuristic(timed(95, 90, 100), &heuristic).ties);  // the best's own spread counts too
  // Without a heuristic time (it failed, or did not run) the row is the only plan known to run.
  EXPECT_FALSE(tie_with_heuristic(timed(98, 97.5, 98.5), nullptr).ties);
  const WorkerResult failed = timed(0, 0, 0, false);
  EXPECT_FALSE(tie_with_heuristic(timed(98, 97.5, 98.5), &failed).ties);
}

}  // namespace
}  // namespace moekit::tune
