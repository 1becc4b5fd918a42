// The tuned tables committed under bench/tune/ (what a user points MOEKIT_TUNING_TABLE at): each loads,
// and every row's choice is legal for its problem and tuned token count on its architecture, so a
// row that names a removed or renamed knob value fails here instead of being ignored at run time.
#include <gtest/gtest.h>

#include <string>

#include "moekit/plan.h"
#include "moekit/tuning.h"
#include "sm90_tiles_built.h"

namespace moekit {
namespace {

TEST(CommittedTables, EveryRowIsLegalForItsProblem) {
  if (!sm90_tiles_built()) GTEST_SKIP() << "this build has no sm_90a tiles, which the tables name";
  const DeviceTarget sm90 = *DeviceTarget::named("sm90");
  for (const char* name : {"h200.csv", "h100.csv"}) {
    const std::string path = std::string(MOEKIT_SOURCE_DIR) + "/bench/tune/" + name;
    auto table = TuningTable::load(path);
    ASSERT_TRUE(table.ok()) << table.status().to_string();
    EXPECT_FALSE(table->rows.empty()) << path;
    for (const TuningRow& row : table->rows) {
      SCOPED_TRACE(path + " line " + std::to_string(row.line));
      EXPECT_EQ(row.device.compute_capability, 90);
      EXPECT_EQ(row.bucket, token_bucket(row.tokens));
      auto problem = parse_problem_key(row.problem);
      ASSERT_TRUE(problem.ok()) << problem.status().to_string();
      const Status st = check_choice(PlanQuery{*problem, row.tokens, {}}, sm90, row.choice);
      EXPECT_TRUE(st.ok()) << st.to_string();
    }
  }
}

}  // namespace
}  // namespace moekit
