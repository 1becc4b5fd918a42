// The results of a `moekit bench` run and their renderings: a terminal table, CSV, JSON and an SVG
// plot (report_svg.cpp). Plain data in, text out: the writers neither measure nor print.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/stats.h"
#include "bench/variants.h"

namespace moekit::bench {

// One measured ceiling of the machine. value 0 means not measured; `how` then says why.
struct Ceiling {
  std::string name;  // "read bandwidth", "bf16 dense GEMM", ...
  double value = 0;  // bytes/s or FLOP/s
  std::string unit;  // "GB/s" or "TFLOP/s": how the renderings scale `value`
  std::string how;
};

// One method at one (preset, T): the whole layer ("moekit"), the cuBLAS baseline, or one step of
// the plan timed alone (kind "stage").
struct BenchRow {
  std::string preset;
  std::string shape;     // "E=128 K=8 H=2048 I=768 bf16"
  int64_t tokens = 0;
  std::string routing;   // "uniform", "zipf s=1.2" or "balanced"
  std::string method;    // "moekit", "cublas", or the step's kernel name
  std::string kind = "layer";  // "layer" or "stage"
  Summary us;
  // Averaged over the measurement sets (each has its own routing).
  double experts_hit = 0, routed_rows = 0, bytes = 0, flops = 0;
  double max_expert_rows = 0;  // the most rows one local expert got (LayerTraffic)
  double floor_us = 0;
  std::string bound;     // "memory" or "compute"
  double refcheck = -1;  // relative error against the CPU reference; < 0: not checked
  std::string note;
  std::optional<PairedChange> against_v0;  // --ab's vN rows (N > 0): the change paired by set

  double tflops() const { return us.median > 0 ? flops / us.median * 1e-6 : 0.0; }
  double gbps() const { return us.median > 0 ? bytes / us.median * 1e-3 : 0.0; }
  double percent_of_floor() const { return us.median > 0 ? 100.0 * floor_us / us.median : 0.0; }
};

struct BenchReport {
  std::string device, backend, command, commit, date, timing;
  std::vector<Ceiling> ceilings;
  std::vector<std::string> notes;
  std::vector<BenchRow> rows;
};

std::string report_table(const BenchReport& r);
// Header: preset,shape,tokens,routing,method,kind,median_us,min_us,max_us,p10_us,p90_us,spread,runs,
// experts_hit,routed_rows,max_expert_rows,bytes,flops,floor_us,bound,percent_of_floor,tflops,gbps,refcheck,note
std::string report_csv(const BenchReport& r);
std::string report_json(const BenchReport& r);
// Log-log time versus tokens, one panel per preset: a polyline per layer method and the floor
// (dashed). Stage rows are not drawn.
std::string report_svg(const BenchReport& r);

}  // namespace moekit::bench
