// Worker processes: a crash and a hang are recorded and tuning goes on; a candidate that fails
// validation is never selected; a rerun resumes from the journal (not from results timed the old
// way); an end-to-end tune on the CPU backend writes a table the runtime then uses; with a reference
// cache, one worker per shape computes the reference and every other one reads it. Runs the real `moekit tune-worker` (MOEKIT_CLI_PATH).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "moekit/runner.h"
#include "tune/process.h"
#include "tune/tuner.h"

namespace moekit::tune {
namespace {

namespace fs = std::filesystem;

TEST(TuneProcess, CrashHangAndOutput) {
  auto ok = run_process({"/bin/sh", "-c", "echo hi; echo err >&2; exit 3"}, {}, 10);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->exit_code, 3);
  EXPECT_EQ(ok->out, "hi\n");
  EXPECT_EQ(ok->err, "err\n");
  auto crash = run_process({"/bin/sh", "-c", "kill -SEGV $$"}, {}, 10);
  ASSERT_TRUE(crash.ok());
  EXPECT_EQ(crash->signal, 11);
  EXPECT_FALSE(crash->timed_out);
  auto hang = run_process({"/bin/sh", "-c", "exec sleep 30"}, {}, 0.3);
  ASSERT_TRUE(hang.ok());
  EXPECT_TRUE(hang->timed_out);
  EXPECT_LT(hang->seconds, 5);
  auto env = run_process({"/bin/sh", "-c", "echo $MOEKIT_X"}, {"MOEKIT_X=7"}, 10);
  EXPECT_EQ(env->out, "7\n");
  EXPECT_FALSE(run_process({"/nonexistent/moekit"}, {}, 1).ok());
}

class TuneWorkers : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moekit_tune_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    o_.worker_program = MOEKIT_CLI_PATH;
    o_.output = (dir_ / "tuned.csv").string();
    o_.journal = (dir_ / "journal.jsonl").string();
    o_.backend = BackendChoice::kCpu;
    o_.iters = 2;
    o_.warmup = 0;
    o_.timeout_s = 20;
    o_.progress = false;
    // Rows even where the CPU's noisy timings tie the heuristic, so that each test below gets its
    // row; the tie rule has a test of its own (NoRowWhereTheHeuristicTiesTheBest).
    o_.keep_ties = true;
    shape_.problem = MoeProblem{.num_experts = 4, .top_k = 2, .hidden = 32, .intermediate = 16};
    shape_.tokens = 6;
  }
  void TearDown() override {
    ::unsetenv("MOEKIT_TUNE_TEST_FAULT");
    fs::remove_all(dir_);
  }
  fs::path dir_;
  TuneOptions o_;
  TuneShape shape_;
};

// Where each journaled worker's reference came from ("computed" or "cache"), in journal order.
std::vector<std::string> reference_sources(const std::string& journal) {
  std::vector<std::string> out;
  std::ifstream in(journal);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line).at("result").at("reference"));
  return out;
}

int count(const std::vector<std::string>& v, const std::string& what) { return static_cast<int>(std::count(v.begin(), v.end(), what)); }

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

bool failed_with(const ShapeReport& r, const std::string& choice, const std::string& why) {
  for (const auto& f : r.failures)
    if (f.starts_with(choice) && f.find(why) != std::string::npos) return true;
  return false;
}

TEST_F(TuneWorkers, EndToEndOnTheCpuWithACrashAHangAndANan) {
  // Test-only faults: the worker crashes, hangs or poisons its output for these candidates.
  ::setenv("MOEKIT_TUNE_TEST_FAULT", "crash:gemm1.row_block=4", 1);
  o_.timeout_s = 20;
  auto first = tune_shapes({shape_}, o_);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const ShapeReport& r = first->front();
  EXPECT_TRUE(r.tuned);
  EXPECT_TRUE(failed_with(r, "gemm1.row_block=4 [stage]", "crash: signal 11")) << testing::PrintToString(r.failures);
  EXPECT_NE(r.row.choice.knobs.at("gemm1.row_block"), "4");

  ::setenv("MOEKIT_TUNE_TEST_FAULT", "hang:gemm2.row_block=16", 1);
  o_.timeout_s = 3;
  o_.journal = (dir_ / "journal2.jsonl").string();
  auto second = tune_shapes({shape_}, o_);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_TRUE(failed_with(second->front(), "gemm2.row_block=16 [stage]", "hang: killed after 3 s")) << testing::PrintToString(second->front().failures);
  EXPECT_NE(second->front().row.choice.knobs.at("gemm2.row_block"), "16");

  ::setenv("MOEKIT_TUNE_TEST_FAULT", "nan:fusion.gemm1_activation=off", 1);
  o_.timeout_s = 20;
  o_.journal = (dir_ / "journal3.jsonl").string();
  auto third = tune_shapes({shape_}, o_);
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(failed_with(third->front(), "fusion.gemm1_activation=off [stage]", "validation: ")) << testing::PrintToString(third->front().failures);
  EXPECT_EQ(third->front().row.choice.knobs.at("fusion.gemm1_activation"), "on");

  // The table has the shape's row, with provenance; the runtime uses it.
  auto table = TuningTable::load(o_.output);
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  ASSERT_EQ(table->rows.size(), 1u);
  const TuningRow& row = table->rows[0];
  EXPECT_EQ(row.bucket, 8);
  EXPECT_EQ(row.metric, "rel_err");
  EXPECT_EQ(row.error, 0);  // the CPU backend is bitwise the reference
  EXPECT_GT(row.time_us, 0);
  EXPECT_GT(row.heuristic_us, 0);
  EXPECT_FALSE(row.date.empty());
  auto shared = load_shared_table(o_.output);
  auto runner = MoeRunner::create(shape_.problem, {.backend = BackendChoice::kCpu, .tuning_table = *shared});
  ASSERT_TRUE(runner.ok());
  const MoePlan plan = runner->plan(7, {});
  EXPECT_NE(plan.tuning.find("row 3 (bucket 8)"), std::string::npos) << plan.tuning;
}

TEST_F(TuneWorkers, ResumesFromTheJournal) {
  auto first = tune_shapes({shape_}, o_);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  ASSERT_TRUE(first->front().tuned);
  // Every worker would now crash (an empty pattern matches every candidate): a rerun that resumes
  // runs none of them and selects the same row from the journal.
  ::setenv("MOEKIT_TUNE_TEST_FAULT", "crash:", 1);
  auto again = tune_shapes({shape_}, o_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->front().failed, 0);
  EXPECT_EQ(again->front().row.choice, first->front().row.choice);
  EXPECT_EQ(again->front().row.time_us, first->front().row.time_us);
  // Without the journal, the same rerun fails every candidate and writes no row.
  o_.journal = (dir_ / "fresh.jsonl").string();
  auto fresh = tune_shapes({shape_}, o_);
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(fresh->front().tuned);
  EXPECT_EQ(fresh->front().failed, fresh->front().candidates);
}

TEST_F(TuneWorkers, RunsAgainTheCandidatesOfAJournalTimedTheOldWay) {
  auto first = tune_shapes({shape_}, o_);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  ASSERT_TRUE(first->front().tuned);
  // The journal as a worker before 2026-11-29 wrote it: results without "timing" (L2-flushed single
  // runs on the GPU). Resuming from it must not reuse them: with every worker crashing now, no
  // candidate is found in the journal and none passes.
  std::vector<std::string> lines;
  {
    std::ifstream in(o_.journal);
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      EXPECT_EQ(j.at("result").at("timing"), "host clock, one run a sample; the inputs of 4 sets of `moekit bench --seed 1`");
      j["result"].erase("timing");
      lines.push_back(j.dump());
    }
  }
  ASSERT_FALSE(lines.empty());
  {
    std::ofstream out(o_.journal, std::ios::trunc);
    for (const auto& l : lines) out << l << "\n";
  }
  ::setenv("MOEKIT_TUNE_TEST_FAULT", "crash:", 1);
  auto again = tune_shapes({shape_}, o_);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->front().tuned);
  EXPECT_EQ(again->front().failed, again->front().candidates);
}

// --update-improved weighs the new row against the old row's choice timed in the same run, not
// against the time stored with the row (which another protocol, commit or machine may have taken).
TEST_F(TuneWorkers, UpdateImprovedReMeasuresTheOldRow) {
  auto first = tune_shapes({shape_}, o_);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  ASSERT_TRUE(first->front().tuned);
  auto table = TuningTable::load(o_.output);
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  ASSERT_EQ(table->rows.size(), 1u);
  TuningRow stale = table->rows[0];
  stale.time_us = 1e9;  // a stored time no run here can reproduce
  stale.noise_us = 0;
  table->upsert(stale);
  ASSERT_TRUE(table->save(o_.output).ok());

  o_.update_improved = true;
  o_.min_improvement = 0.03;
  auto again = tune_shapes({shape_}, o_);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  const std::string& why = again->front().update;
  // Measured against the stored 1e9 us, any new row would have "replaced" it by 100%.
  EXPECT_EQ(why.find("1000000000.0 us ->"), std::string::npos) << why;
  EXPECT_NE(why.find("[the old row re-measured in this run; 1000000000.0 us stored with it]"), std::string::npos) << why;

  // An old row the dispatcher refuses now (a value the knob does not have) is replaced, saying why.
  auto t2 = TuningTable::load(o_.output);
  ASSERT_TRUE(t2.ok());
  TuningRow refused = t2->rows[0];
  refused.choice.knobs["gemm1.row_block"] = "7";
  t2->upsert(refused);
  ASSERT_TRUE(t2->save(o_.output).ok());
  auto third = tune_shapes({shape_}, o_);
  ASSERT_TRUE(third.ok()) << third.status().to_string();
  EXPECT_EQ(third->front().update.rfind("replaced: the old row's choice does not run here now", 0), 0u) << third->front().update;
  auto t3 = TuningTable::load(o_.output);
  ASSERT_TRUE(t3.ok());
  EXPECT_NE(t3->rows[0].choice.knobs.at("gemm1.row_block"), "7");
}

// Every candidate but the heuristic crashes (each names a knob value, "K=V"; the heuristic's choice
// is empty), so the heuristic wins: no row, and a rerun removes an old row, with and without
// --update-improved (whose re-measured old row crashes too).
TEST_F(TuneWorkers, NoRowWhereTheHeuristicTiesTheBest) {
  o_.keep_ties = false;
  ::setenv("MOEKIT_TUNE_TEST_FAULT", "crash:=", 1);
  auto none = tune_shapes({shape_}, o_);
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_TRUE(none->front().tuned);
  EXPECT_EQ(none->front().row.time_us, none->front().row.heuristic_us);  // the heuristic won
  EXPECT_EQ(none->front().update.rfind("no row: the heuristic ties the best: ", 0), 0u) << none->front().update;
  auto empty = TuningTable::load(o_.output);
  ASSERT_TRUE(empty.ok()) << empty.status().to_string();
  EXPECT_TRUE(empty->rows.empty());

  for (bool update_improved : {false, true}) {
    SCOPED_TRACE(update_improved ? "--update-improved" : "replace");
    ::unsetenv("MOEKIT_TUNE_TEST_FAULT");
    o_.keep_ties = true;
    o_.update_improved = false;
    o_.journal = (dir_ / ("with-row-" + std::to_string(update_improved) + ".jsonl")).string();
    ASSERT_TRUE(tune_shapes({shape_}, o_).ok());
    auto with_row = TuningTable::load(o_.output);
    ASSERT_TRUE(with_row.ok());
    ASSERT_EQ(with_row->rows.size(), 1u);

    ::setenv("MOEKIT_TUNE_TEST_FAULT", "crash:=", 1);
    o_.keep_ties = false;
    o_.update_improved = update_improved;
    o_.journal = (dir_ / ("ties-" + std::to_string(update_improved) + ".jsonl")).string();
    auto again = tune_shapes({shape_}, o_);
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    EXPECT_EQ(again->front().update.rfind("removed the old row: the heuristic ties the best: ", 0), 0u) << again->front().update;
    auto after = TuningTable::load(o_.output);
    ASSERT_TRUE(after.ok());
    EXPECT_TRUE(after->rows.empty());
  }
}

TEST_F(TuneWorkers, OneWorkerComputesTheReferenceTheOthersReadIt) {
  o_.reference_cache = (dir_ / "refs").string();
  auto first = tune_shapes({shape_}, o_);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_TRUE(first->front().tuned);
  EXPECT_EQ(first->front().failed, 0) << testing::PrintToString(first->front().failures);
  const auto sources = reference_sources(o_.journal);
  EXPECT_EQ(sources.front(), "computed");  // the first worker of the shape
  EXPECT_EQ(count(sources, "computed"), 1);
  EXPECT_EQ(count(sources, "cache"), static_cast<int>(sources.size()) - 1);
  EXPECT_GT(sources.size(), 2u);
  EXPECT_EQ(files_in(o_.reference_cache).size(), 1u);  // one file per shape, no temporary left

  // A second run over the same shapes (a fresh journal, so that every candidate runs again) reads
  // every reference from the cache.
  o_.journal = (dir_ / "second.jsonl").string();
  auto second = tune_shapes({shape_}, o_);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_TRUE(second->front().tuned);
  EXPECT_EQ(second->front().failed, 0) << testing::PrintToString(second->front().failures);
  const auto again = reference_sources(o_.journal);
  EXPECT_EQ(count(again, "cache"), static_cast<int>(again.size()));
  EXPECT_GT(again.size(), 2u);  // (the end-to-end candidates depend on the timings: not a fixed count)
  EXPECT_EQ(second->front().winner.reference, "cache");
}

TEST_F(TuneWorkers, SeveralWorkersAtATimeLetOneComputeTheReferenceFirst) {
  // Workers that all started at once would all miss the cache and compute the reference (with three
  // GPUs, three float64 references on the shared cores). The tuner runs one first, alone. A layer
  // whose worker takes far longer than starting a process, so that without that order the others
  // would start before the first has stored its reference.
  o_.jobs = 3;
  o_.reference_cache = (dir_ / "refs").string();
  shape_.problem = MoeProblem{.num_experts = 8, .top_k = 2, .hidden = 256, .intermediate = 128};
  shape_.tokens = 16;
  auto r = tune_shapes({shape_}, o_);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->front().failed, 0) << testing::PrintToString(r->front().failures);
  const auto sources = reference_sources(o_.journal);
  EXPECT_EQ(count(sources, "computed"), 1) << testing::PrintToString(sources);
}

TEST_F(TuneWorkers, SeveralWorkersAtATime) {
  // As with several GPUs: workers run concurrently, results keep their candidates, the journal
  // takes every line; with a reference cache, one worker per shape computes the reference (before
  // the shape's others start) and the others read it.
  o_.jobs = 3;
  o_.reference_cache = (dir_ / "refs").string();
  TuneShape other = shape_;
  other.tokens = 2;
  auto r = tune_shapes({shape_, other}, o_);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  int lines = 0, candidates = 0;
  for (const auto& rep : *r) {
    EXPECT_TRUE(rep.tuned);
    EXPECT_EQ(rep.failed, 0) << testing::PrintToString(rep.failures);
    candidates += rep.candidates;
  }
  std::ifstream journal(o_.journal);
  for (std::string line; std::getline(journal, line);) ++lines;
  EXPECT_EQ(lines, candidates);
  const auto sources = reference_sources(o_.journal);
  EXPECT_EQ(count(sources, "computed"), 2) << testing::PrintToString(sources);
  EXPECT_EQ(count(sources, "cache"), candidates - 2);
  EXPECT_EQ(files_in(o_.reference_cache).size(), 2u);
  auto table = TuningTable::load(o_.output);
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->rows.size(), 2u);
}

}  // namespace
}  // namespace moekit::tune
