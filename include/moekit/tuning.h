// The tuned table: for a device, a problem and a token bucket, the kernel choice `moekit tune` found
// fastest, with its provenance. `MoeRunner` reads one (RunnerOptions::tuning_table, or the file the
// MOEKIT_TUNING_TABLE environment variable names) and uses a row when device, problem and bucket
// match; on a miss the heuristic runs and the miss is said once on stderr. docs/tune.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "moekit/moe_problem.h"
#include "moekit/plan.h"
#include "moekit/status.h"

namespace moekit {

// The first line of every table file; a file with another first line is refused.
inline constexpr std::string_view kTuningTableHeader = "# moekit-tuning v1";

// Token buckets are powers of two: T in (b/2, b] belongs to bucket b (T <= 1: bucket 1). A row tuned
// at T serves every T of its bucket.
int64_t token_bucket(int64_t num_tokens);

// What identifies a device for a table: its name, SM count and compute capability (0 and 0 for the
// CPU, whose name carries the thread count).
struct DeviceFingerprint {
  std::string name;
  int num_sms = 0;
  int compute_capability = 0;
  static DeviceFingerprint of(const DeviceTarget& device);
  bool operator==(const DeviceFingerprint&) const = default;
};

// Every field of a problem that a plan depends on, as "E=128 EL=128 L0=0 K=8 H=2048 I=768 ...":
// one table column, and the way the tuner hands a shape to its worker processes (parse_problem_key
// gives the problem back exactly).
std::string problem_key(const MoeProblem& problem);
Result<MoeProblem> parse_problem_key(std::string_view key);

struct TuningRow {
  DeviceFingerprint device;
  std::string problem;       // problem_key
  int64_t bucket = 1;        // token_bucket of `tokens`
  KernelChoice choice;       // the winner; knobs left out take the heuristic's value
  double time_us = 0;        // the winner's median end-to-end time
  double heuristic_us = 0;   // the heuristic's, measured in the same run
  double noise_us = 0;       // spread (max - min) of the winner's repeated timings
  double error = 0;          // the winner's validation figure (see metric)
  std::string metric;        // "rel_err" (max|diff| / max|ref|) or "cosine" (1 - cosine similarity)
  int64_t tokens = 0;        // the token count it was tuned at
  std::string date;          // UTC, ISO 8601
  std::string version;       // the moekit version that tuned it
  int line = 0;              // its line in the file it was read from (0: not read from a file)
};

class TuningTable {
 public:
  // `path` only names the source in messages and plans.
  static Result<TuningTable> parse(std::string_view text, std::string path);
  static Result<TuningTable> load(const std::string& path);
  std::string to_csv() const;
  Status save(const std::string& path) const;  // writes a temporary file, then renames it

  // The row for (device, problem, token_bucket(num_tokens)), or nullptr.
  const TuningRow* find(const DeviceFingerprint& device, std::string_view problem, int64_t num_tokens) const;
  // Replaces the row with the same (device, problem, bucket), or appends it.
  void upsert(TuningRow row);
  // Removes the row with the same (device, problem, bucket) as `row`; false when there is none.
  bool erase(const TuningRow& row);

  std::string path;
  std::vector<TuningRow> rows;
};

// TuningTable::load, shared (for RunnerOptions::tuning_table).
Result<std::shared_ptr<const TuningTable>> load_shared_table(const std::string& path);

// The table MOEKIT_TUNING_TABLE names, loaded once per process; nullptr when the variable is unset
// or empty; an error naming the variable when the file cannot be read.
Result<std::shared_ptr<const TuningTable>> tuning_table_from_env();

}  // namespace moekit
