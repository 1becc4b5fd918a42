// `moekit bench --backend cpu` end to end on a tiny shape: the files it writes parse and agree with
// each other. No timing is asserted.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(BenchCli, CpuRunWritesCsvJsonAndSvg) {
  const auto dir = std::filesystem::temp_directory_path() / ("moekit_bench_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string args = "bench --backend cpu --experts 8 --top-k 2 --hidden 64 --intermediate 32 --tokens 1,5 --reps 2 --sets 2 "
                           "--popularity zipf --zipf-s 1.1 --stages --refcheck --csv " + (dir / "r.csv").string() + " --json " +
                           (dir / "r.json").string() + " --plot " + (dir / "r.svg").string();
  const std::string cmd = std::string(MOEKIT_CLI_PATH) + " " + args + " > " + (dir / "stdout.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir / "stdout.txt");

  const auto j = nlohmann::json::parse(slurp(dir / "r.json"));
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_NE(j["command"].get<std::string>().find("--experts 8 --top-k 2 --hidden 64 --intermediate 32 --tokens 1,5"), std::string::npos);
  int layers = 0;
  for (const auto& r : j["rows"]) {
    if (r["kind"] != "layer") continue;
    ++layers;
    EXPECT_EQ(r["method"], "moekit");
    EXPECT_EQ(r["runs"], 4);  // 2 sets x 2 samples
    EXPECT_EQ(r["refcheck_rel_l2"], 0.0);  // the CPU backend is bitwise the reference
    EXPECT_GT(r["floor_us"].get<double>(), 0.0);
    EXPECT_LE(r["experts_hit"].get<double>(), 2.0 * r["tokens"].get<double>());
    // The most loaded expert holds at least the mean and at most every token once.
    EXPECT_GE(r["max_expert_rows"].get<double>() * r["experts_hit"].get<double>(), r["routed_rows"].get<double>() - 1e-9);
    EXPECT_LE(r["max_expert_rows"].get<double>(), r["tokens"].get<double>());
  }
  EXPECT_EQ(layers, 2);
  const std::string csv = slurp(dir / "r.csv");
  EXPECT_EQ(csv.rfind("preset,shape,tokens,", 0), 0u);
  EXPECT_NE(csv.find("custom,E=8 K=2 H=64 I=32 bf16,5,zipf s=1.1,moekit,layer,"), std::string::npos);
  const std::string svg = slurp(dir / "r.svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("<polyline class=\"floor\""), std::string::npos);
  const std::string out = slurp(dir / "stdout.txt");
  EXPECT_NE(out.find("reproduce : moekit bench"), std::string::npos);
  EXPECT_NE(out.find("ceiling   : read bandwidth"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// --ab: two plans of one layer in turns, in one process, each row labelled, the second against the
// first; both checked against the reference; a refused knob value names its variant.
TEST(BenchCli, AbTimesEachPlanAndReportsItAgainstTheFirst) {
  const auto dir = std::filesystem::temp_directory_path() / ("moekit_bench_ab_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string base = std::string(MOEKIT_CLI_PATH) + " bench --backend cpu --experts 8 --top-k 2 --hidden 64 --intermediate 32 "
                                                          "--tokens 5 --reps 2 --sets 3 --refcheck --stages --json " +
                           (dir / "r.json").string();
  const std::string cmd = base + " --choice \"gemm2.row_block=4\" --ab \"|gemm1.row_block=16\" > " + (dir / "stdout.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir / "stdout.txt");
  const auto j = nlohmann::json::parse(slurp(dir / "r.json"));
  EXPECT_NE(j["command"].get<std::string>().find("--choice \"gemm2.row_block=4\" --ab \"|gemm1.row_block=16\""), std::string::npos)
      << j["command"];
  std::vector<std::string> methods;
  int v0_stages = 0, v1_stages = 0;
  for (const auto& r : j["rows"]) {
    if (r["kind"] == "stage") {
      v0_stages += r["note"] == "v0";
      v1_stages += r["note"] == "v1";
      continue;
    }
    methods.push_back(r["method"]);
    EXPECT_EQ(r["runs"], 6);  // 3 sets x 2 samples
    // v1's change against v0 as numbers too (v0 has none): the sets split into slower, faster, level.
    if (r["method"] == "moekit v1") {
      const auto& c = r.at("against_v0");
      EXPECT_EQ(c.at("sets"), 3);
      EXPECT_LE(c.at("slower_sets").get<int>() + c.at("faster_sets").get<int>(), 3);
      EXPECT_GT(c.at("sign_test_p").get<double>(), 0.0);
      EXPECT_LE(c.at("min").get<double>(), c.at("median").get<double>());
    } else {
      EXPECT_FALSE(r.contains("against_v0"));
    }
    EXPECT_EQ(r["refcheck_rel_l2"], 0.0);
  }
  EXPECT_EQ(methods, (std::vector<std::string>{"moekit v0", "moekit v1"}));
  EXPECT_GT(v0_stages, 0);
  EXPECT_EQ(v0_stages, v1_stages);
  const std::string out = slurp(dir / "stdout.txt");
  EXPECT_NE(out.find("note      : moekit v0: gemm2.row_block=4"), std::string::npos) << out;
  EXPECT_NE(out.find("note      : moekit v1: gemm1.row_block=16;gemm2.row_block=4"), std::string::npos) << out;
  EXPECT_NE(out.find("% against v0 (sets "), std::string::npos) << out;
  EXPECT_NE(out.find(" of 3, sign test p="), std::string::npos) << out;  // three sets, each slower or faster or level

  // A refused value stops the run before anything is timed or written.
  std::filesystem::remove(dir / "r.json");
  const std::string bad = base + " --ab \"|gemm1.row_block=7\" > " + (dir / "bad.txt").string() + " 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0);
  const std::string bad_out = slurp(dir / "bad.txt");
  EXPECT_NE(bad_out.find("T=5, --ab variant 1 ('gemm1.row_block=7'): no runnable plan"), std::string::npos) << bad_out;
  EXPECT_NE(bad_out.find("gemm1.row_block=7 is not legal"), std::string::npos) << bad_out;
  EXPECT_FALSE(std::filesystem::exists(dir / "r.json"));
  std::filesystem::remove_all(dir);
}

}  // namespace
