// Terminal table, CSV and JSON renderings of a bench report.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "bench/report.h"

namespace moekit::bench {
namespace {

double scaled(const Ceiling& c) {
  if (c.unit == "GB/s" || c.unit == "GFLOP/s") return c.value * 1e-9;
  return c.unit == "TFLOP/s" ? c.value * 1e-12 : c.value;
}

std::string ceiling_text(const Ceiling& c) {
  if (c.value <= 0) return fmt::format("{:<22} n/a ({})", c.name, c.how);
  return fmt::format("{:<22} {:.1f} {} ({})", c.name, scaled(c), c.unit, c.how);
}

// CSV fields: quoted when they hold a comma, a quote or a newline.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string report_table(const BenchReport& r) {
  std::string s = "moekit bench: MoE layer against the floor\n";
  s += fmt::format("  device    : {}\n  backend   : {}\n  commit    : {}\n  date      : {}\n  timing    : {}\n", r.device, r.backend,
                   r.commit, r.date, r.timing);
  for (const Ceiling& c : r.ceilings) s += "  ceiling   : " + ceiling_text(c) + "\n";
  s += "  floor     : max(bytes / read bandwidth, flops / dense peak); bytes = experts hit x expert weight bytes + "
       "activations in and out; flops = 2 x routed rows x (gemm1_rows + I) x H\n";
  for (const std::string& n : r.notes) s += "  note      : " + n + "\n";
  s += "  reproduce : " + r.command + "\n";
  std::string preset;
  for (const BenchRow& row : r.rows) {
    if (row.preset != preset) {
      preset = row.preset;
      s += fmt::format("\n{} ({}), routing {}\n", row.preset, row.shape, row.routing);
      s += fmt::format("{:>6}  {:<28} {:>11} {:>19} {:>7} {:>6} {:>11} {:>8} {:>9} {:>8} {:>8}  {}\n", "T", "method", "median us",
                       "p10-p90 us", "spread", "hit", "floor us", "bound", "% floor", "TFLOP/s", "GB/s", "refcheck");
    }
    const bool stage = row.kind == "stage";
    const std::string method = stage ? "  " + row.method : row.method;
    if (row.us.count == 0) {
      s += fmt::format("{:>6}  {:<28} {}\n", row.tokens, method, row.note);
      continue;
    }
    const std::string check = row.refcheck < 0 ? "" : fmt::format("{:.2e}", row.refcheck);
    if (stage) {
      s += fmt::format("{:>6}  {:<28} {:>11.2f} {:>19} {:>6.1f}%  {}\n", row.tokens, method, row.us.median,
                       fmt::format("{:.2f}-{:.2f}", row.us.p10, row.us.p90), 100 * row.us.spread, row.note);
      continue;
    }
    s += fmt::format("{:>6}  {:<28} {:>11.2f} {:>19} {:>6.1f}% {:>6.1f} {:>11.2f} {:>8} {:>8.1f}% {:>8.3g} {:>8.3g}  {}{}\n", row.tokens,
                     method, row.us.median, fmt::format("{:.2f}-{:.2f}", row.us.p10, row.us.p90), 100 * row.us.spread,
                     row.experts_hit, row.floor_us, row.bound, row.percent_of_floor(), row.tflops(), row.gbps(), check,
                     row.note.empty() ? "" : "  " + row.note);
  }
  return s;
}

std::string report_csv(const BenchReport& r) {
  std::string s =
      "preset,shape,tokens,routing,method,kind,median_us,min_us,max_us,p10_us,p90_us,spread,runs,experts_hit,routed_rows,"
      "max_expert_rows,bytes,flops,floor_us,bound,percent_of_floor,tflops,gbps,refcheck,note\n";
  for (const BenchRow& row : r.rows) {
    s += fmt::format("{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.4f},{},{:.2f},{:.1f},{:.1f},{:.0f},{:.0f},{:.3f},{},{:.2f},{:.4f},{:.2f},{},{}\n",
                     csv_field(row.preset), csv_field(row.shape), row.tokens, csv_field(row.routing), csv_field(row.method), row.kind,
                     row.us.median, row.us.min, row.us.max, row.us.p10, row.us.p90, row.us.spread, row.us.count, row.experts_hit,
                     row.routed_rows, row.max_expert_rows, row.bytes, row.flops, row.floor_us, row.bound, row.percent_of_floor(), row.tflops(), row.gbps(),
                     row.refcheck < 0 ? std::string() : fmt::format("{:.3e}", row.refcheck), csv_field(row.note));
  }
  return s;
}

std::string report_json(const BenchReport& r) {
  nlohmann::ordered_json j{{"command", r.command}, {"commit", r.commit}, {"date", r.date}, {"device", r.device},
                           {"backend", r.backend}, {"timing", r.timing}};
  nlohmann::ordered_json ceilings = nlohmann::ordered_json::array();
  for (const Ceiling& c : r.ceilings)
    ceilings.push_back({{"name", c.name}, {"value", c.value > 0 ? nlohmann::ordered_json(scaled(c)) : nlohmann::ordered_json()},
                        {"unit", c.unit}, {"how", c.how}});
  j["ceilings"] = ceilings;
  j["notes"] = r.notes;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const BenchRow& row : r.rows) {
    nlohmann::ordered_json x{{"preset", row.preset}, {"shape", row.shape}, {"tokens", row.tokens}, {"routing", row.routing},
                             {"method", row.method}, {"kind", row.kind}, {"note", row.note}};
    if (row.us.count > 0) {
      x.update({{"median_us", row.us.median}, {"min_us", row.us.min}, {"max_us", row.us.max}, {"p10_us", row.us.p10},
                {"p90_us", row.us.p90}, {"spread", row.us.spread}, {"runs", row.us.count}});
      if (row.kind == "layer")
        x.update({{"experts_hit", row.experts_hit}, {"routed_rows", row.routed_rows}, {"max_expert_rows", row.max_expert_rows},
                  {"bytes", row.bytes}, {"flops", row.flops},
                  {"floor_us", row.floor_us}, {"bound", row.bound}, {"percent_of_floor", row.percent_of_floor()},
                  {"tflops", row.tflops()}, {"gbps", row.gbps()}});
    }
    if (row.refcheck >= 0) x["refcheck_rel_l2"] = row.refcheck;
    if (const auto& c = row.against_v0)
      x["against_v0"] = {{"sets", c->sets}, {"median", c->median}, {"min", c->min}, {"max", c->max},
                         {"slower_sets", c->slower}, {"faster_sets", c->faster}, {"sign_test_p", c->sign_p}};
    rows.push_back(x);
  }
  j["rows"] = rows;
  return j.dump(2) + "\n";
}

}  // namespace moekit::bench
