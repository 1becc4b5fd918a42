// The tuned table: the CSV schema round trip, the version line, token buckets, lookup by device,
// problem and bucket, and the plan's use of a row (or its fallback to the heuristic on a miss).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "moekit/presets.h"
#include "moekit/tuning.h"

namespace moekit {
namespace {

TuningRow sample_row(const MoeProblem& p, int64_t tokens, const DeviceTarget& d) {
  return {.device = DeviceFingerprint::of(d), .problem = problem_key(p), .bucket = token_bucket(tokens),
          .choice = {{{"gemm1.row_block", "16"}, {"fusion.gemm2_finalize", "on"}}}, .time_us = 12.5, .heuristic_us = 20.25,
          .noise_us = 0.5, .error = 0, .metric = "rel_err", .tokens = tokens, .date = "2026-11-21T00:00:00Z", .version = "0.1.0"};
}

TEST(TuningTable, BucketsArePowersOfTwo) {
  EXPECT_EQ(token_bucket(0), 1);
  EXPECT_EQ(token_bucket(1), 1);
  EXPECT_EQ(token_bucket(2), 2);
  EXPECT_EQ(token_bucket(3), 4);
  EXPECT_EQ(token_bucket(32), 32);
  EXPECT_EQ(token_bucket(33), 64);
  EXPECT_EQ(token_bucket(4096), 4096);
}

TEST(TuningTable, ProblemKeyRoundTripsEveryPreset) {
  for (const auto& preset : model_presets()) {
    MoeProblem p = preset.problem;
    auto back = parse_problem_key(problem_key(p));
    ASSERT_TRUE(back.ok()) << preset.name << ": " << back.status().to_string();
    EXPECT_EQ(problem_key(*back), problem_key(p)) << preset.name;
  }
  MoeProblem ep = model_presets()[0].problem;
  ep.num_local_experts = 2;
  ep.local_expert_begin = 4;
  ep.no_combine = true;
  EXPECT_EQ(problem_key(*parse_problem_key(problem_key(ep))), problem_key(ep));
  EXPECT_FALSE(parse_problem_key("E=8 K=2").ok());
}

TEST(TuningTable, CsvRoundTrip) {
  TuningTable t;
  const DeviceTarget cpu = DeviceTarget::host_cpu();
  const MoeProblem p = model_presets()[1].problem;
  t.rows.push_back(sample_row(p, 5, cpu));
  t.rows.push_back(sample_row(p, 300, *DeviceTarget::named("sm90")));
  const std::string csv = t.to_csv();
  EXPECT_TRUE(csv.starts_with("# moekit-tuning v1\n"));
  auto back = TuningTable::parse(csv, "t.csv");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  ASSERT_EQ(back->rows.size(), 2u);
  EXPECT_EQ(back->to_csv(), csv);
  EXPECT_EQ(back->rows[1].device.compute_capability, 90);
  EXPECT_EQ(back->rows[1].device.num_sms, 132);
  EXPECT_EQ(back->rows[1].bucket, 512);
  EXPECT_EQ(back->rows[0].choice, t.rows[0].choice);
  EXPECT_EQ(back->rows[0].line, 3);
  EXPECT_DOUBLE_EQ(back->rows[0].heuristic_us, 20.25);
}

TEST(TuningTable, RejectsAnotherVersionOrABadRow) {
  EXPECT_FALSE(TuningTable::parse("# moekit-tuning v2\n", "x").ok());
  TuningTable t;
  std::string csv = t.to_csv() + "cpu,0,0,E=8,1,,1,1,1,0,rel_err,1,d,v\n";
  auto bad = TuningTable::parse(csv, "x.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("x.csv:3"), std::string::npos) << bad.status().message();
}

TEST(TuningTable, LookupByDeviceProblemAndBucket) {
  TuningTable t;
  const DeviceTarget cpu = DeviceTarget::host_cpu();
  const MoeProblem p = model_presets()[1].problem;
  t.upsert(sample_row(p, 20, cpu));  // bucket 32
  const auto fp = DeviceFingerprint::of(cpu);
  EXPECT_NE(t.find(fp, problem_key(p), 17), nullptr);
  EXPECT_NE(t.find(fp, problem_key(p), 32), nullptr);
  EXPECT_EQ(t.find(fp, problem_key(p), 16), nullptr);
  EXPECT_EQ(t.find(fp, problem_key(p), 33), nullptr);
  EXPECT_EQ(t.find(DeviceFingerprint::of(*DeviceTarget::named("sm90")), problem_key(p), 20), nullptr);
  MoeProblem other = p;
  other.top_k = 4;
  EXPECT_EQ(t.find(fp, problem_key(other), 20), nullptr);
  TuningRow again = sample_row(p, 31, cpu);
  again.time_us = 1;
  t.upsert(again);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].time_us, 1);
  // erase removes the row of the same (device, problem, bucket), and only that one.
  t.upsert(sample_row(other, 20, cpu));
  EXPECT_FALSE(t.erase(sample_row(p, 64, cpu)));  // bucket 64: none
  EXPECT_TRUE(t.erase(sample_row(p, 17, cpu)));   // bucket 32
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.find(fp, problem_key(p), 20), nullptr);
  EXPECT_NE(t.find(fp, problem_key(other), 20), nullptr);
}

TEST(TuningTable, ThePlanUsesARowOrSaysItFellBack) {
  const DeviceTarget cpu = *DeviceTarget::named("cpu");
  const MoeProblem p = model_presets()[1].problem;
  TuningTable t;
  t.path = "t.csv";
  TuningRow row = sample_row(p, 32, cpu);
  row.line = 7;
  t.rows.push_back(row);
  PlanOptions o;
  o.table = &t;
  const MoePlan hit = make_plan(p, 30, cpu, o);
  EXPECT_NE(hit.tuning.find("tuned table t.csv row 7 (bucket 32)"), std::string::npos) << hit.tuning;
  ASSERT_FALSE(hit.knobs.empty());
  EXPECT_EQ(hit.knobs[0].name, "gemm1.row_block");
  EXPECT_EQ(hit.knobs[0].value, "16");
  EXPECT_EQ(hit.knobs[0].source, "tuned table t.csv row 7 (bucket 32)");
  // gemm2+finalize is off for cost at T=30 (E_local=128): the row forces it on.
  EXPECT_TRUE(hit.fusion(Fusion::kGemm2Finalize).decision.on);
  EXPECT_EQ(hit.fusion(Fusion::kGemm2Finalize).decision.rule, "tuned table");

  const MoePlan miss = make_plan(p, 100, cpu, o);
  EXPECT_NE(miss.tuning.find("no row for this device, problem and bucket 128"), std::string::npos) << miss.tuning;
  EXPECT_EQ(miss.knobs[0].source, "heuristic");

  // A row that is not legal here (a value the backend does not offer) is never applied.
  t.rows[0].choice.knobs["gemm1.row_block"] = "3";
  const MoePlan invalid = make_plan(p, 30, cpu, o);
  EXPECT_NE(invalid.tuning.find("is not valid here"), std::string::npos) << invalid.tuning;
  EXPECT_EQ(invalid.knobs[0].value, "8");
  EXPECT_TRUE(invalid.runnable);
}

TEST(TuningTable, AMissIsSaidOncePerKey) {
  const DeviceTarget cpu = DeviceTarget::host_cpu();  // a real device: misses are logged
  MoeProblem p = model_presets()[0].problem;
  p.hidden = 96;  // a problem no other test plans for
  TuningTable t;
  t.path = "miss-once.csv";
  PlanOptions o;
  o.table = &t;
  testing::internal::CaptureStderr();
  make_plan(p, 3, cpu, o);
  make_plan(p, 4, cpu, o);  // the same bucket: not said again
  make_plan(p, 9, cpu, o);  // another bucket: said
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("bucket 4"), err.rfind("bucket 4")) << err;
  EXPECT_NE(err.find("moekit: tuned table miss-once.csv: no row for this device, problem and bucket 4"), std::string::npos) << err;
  EXPECT_NE(err.find("bucket 16"), std::string::npos) << err;
}

}  // namespace
}  // namespace moekit
