// The report formats of `moekit bench`: the table, CSV (header, one line per row, quoting), JSON
// (parsed back), SVG (well-formed enough: one panel per preset, one polyline per method + floor).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "bench/report.h"

namespace moekit::bench {
namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

BenchRow row(std::string preset, int64_t T, std::string method, double us, std::string kind = "layer") {
  BenchRow r;
  r.preset = std::move(preset);
  r.shape = "E=8 K=2 H=64 I=32 bf16";
  r.tokens = T;
  r.routing = "zipf s=1.2";
  r.method = std::move(method);
  r.kind = std::move(kind);
  r.us = {.count = 3, .median = us, .min = us - 1, .max = us + 1, .p10 = us - 0.5, .p90 = us + 0.5, .spread = 1.0 / us};
  r.experts_hit = 2;
  r.routed_rows = 2.0 * T;
  r.bytes = 1e6;
  r.flops = 2e9;
  r.floor_us = us / 2;
  r.bound = "memory";
  return r;
}

BenchReport sample() {
  BenchReport r;
  r.device = "test device <1>";
  r.backend = "cpu";
  r.command = "moekit bench --preset a,b --tokens 1,8";
  r.commit = "abc1234";
  r.date = "2026-11-21 12:00 UTC";
  r.timing = "host clock";
  r.ceilings = {{"read bandwidth", 5e9, "GB/s", "sum"}, {"fp8 dense GEMM", 0, "TFLOP/s", "unsupported: no fp8"}};
  for (const char* preset : {"a", "b"})
    for (int64_t T : {1, 8}) {
      r.rows.push_back(row(preset, T, "moekit", 10.0 * T));
      r.rows.push_back(row(preset, T, "cublas", 20.0 * T));
      r.rows.push_back(row(preset, T, "cpu.route", 1.0, "stage"));
    }
  r.rows[0].refcheck = 1.5e-3;
  r.rows[0].note = "has, a comma";
  return r;
}

TEST(BenchReport, CsvHasHeaderAndOneLinePerRow) {
  const std::string csv = report_csv(sample());
  std::istringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("preset,shape,tokens,routing,method,kind,median_us,", 0), 0u);
  int lines = 0;
  while (std::getline(in, line)) ++lines;
  EXPECT_EQ(lines, 12);
  EXPECT_NE(csv.find("\"has, a comma\""), std::string::npos);  // quoted
  EXPECT_NE(csv.find("a,E=8 K=2 H=64 I=32 bf16,1,zipf s=1.2,moekit,layer,10.000,"), std::string::npos);
}

TEST(BenchReport, JsonParsesBackWithMetadataAndDerivedColumns) {
  const auto j = nlohmann::json::parse(report_json(sample()));
  EXPECT_EQ(j["command"], "moekit bench --preset a,b --tokens 1,8");
  EXPECT_EQ(j["commit"], "abc1234");
  EXPECT_EQ(j["device"], "test device <1>");
  ASSERT_EQ(j["ceilings"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["ceilings"][0]["value"].get<double>(), 5.0);  // in its unit, GB/s
  EXPECT_TRUE(j["ceilings"][1]["value"].is_null());                // not measured
  ASSERT_EQ(j["rows"].size(), 12u);
  const auto& first = j["rows"][0];
  EXPECT_EQ(first["tokens"], 1);
  EXPECT_DOUBLE_EQ(first["median_us"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(first["percent_of_floor"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(first["tflops"].get<double>(), 2e9 / 10.0 * 1e-6);
  EXPECT_DOUBLE_EQ(first["refcheck_rel_l2"].get<double>(), 1.5e-3);
  EXPECT_FALSE(j["rows"][2].contains("floor_us"));  // a stage has no floor of its own
}

TEST(BenchReport, SvgHasAPanelPerPresetAndAPolylinePerMethodAndFloor) {
  const std::string svg = report_svg(sample());
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(count(svg, "<svg"), 1);
  EXPECT_EQ(count(svg, "</svg>"), 1);
  EXPECT_EQ(count(svg, "<g class=\"panel\">"), 2);
  EXPECT_EQ(count(svg, "<polyline class=\"method\""), 4);  // moekit and cublas, per preset; stages not drawn
  EXPECT_EQ(count(svg, "<polyline class=\"floor\""), 2);
  EXPECT_EQ(count(svg, "<g"), count(svg, "</g>"));
  EXPECT_NE(svg.find("test device &lt;1&gt;"), std::string::npos);  // escaped
}

TEST(BenchReport, TableShowsCeilingsReproduceAndEveryRow) {
  const std::string t = report_table(sample());
  EXPECT_NE(t.find("reproduce : moekit bench --preset a,b --tokens 1,8"), std::string::npos);
  EXPECT_NE(t.find("read bandwidth         5.0 GB/s"), std::string::npos);
  EXPECT_NE(t.find("n/a (unsupported: no fp8)"), std::string::npos);
  EXPECT_EQ(count(t, "  moekit "), 4);  // the rows, not the reproduce line
  EXPECT_EQ(count(t, " cublas "), 4);
  EXPECT_EQ(count(t, "cpu.route"), 4);
}

}  // namespace
}  // namespace moekit::bench
