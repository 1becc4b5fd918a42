// One candidate of one shape, in this process: what `moekit tune-worker` runs. A random layer (seed),
// the output NaN-poisoned, the layer run with the candidate's knob values (or with a tuned table, for
// --run-config), checked against cpu::run_reference (or that reference read from the reference cache,
// tune/reference_cache.h), then timed end to end and step by step (CUDA: graph replays over rotated
// weight copies, as `moekit bench` times).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "moekit/moe_problem.h"
#include "moekit/plan.h"
#include "moekit/random_layer.h"
#include "moekit/status.h"

namespace moekit::tune {

struct WorkerRequest {
  MoeProblem problem;
  int64_t tokens = 1;
  KernelChoice choice;     // empty: the table's row, else the heuristic
  std::string table;       // a tuned table for the runner ("" : none; MOEKIT_TUNING_TABLE is ignored)
  BackendChoice backend = BackendChoice::kAuto;
  uint64_t seed = 1;
  int warmup = 1;
  int iters = 5;
  bool per_step = true;    // also time each plan step alone
  std::string reference_cache;  // directory of cached reference outputs ("" : always compute it)
};

struct StepTiming {
  std::string kernel;
  std::string stages;      // "gemm1..activation"
  int first = 0, last = 0;  // Stage values
  double us = 0;
  double tflops = 0, gbps = 0;
};

struct WorkerResult {
  bool ok = false;          // ran and passed validation
  std::string failure;      // why not ("validation: ...", "run: ...")
  std::string metric;       // "rel_err" or "cosine"
  double error = 0;         // the metric's figure
  double median_us = 0, min_us = 0, max_us = 0;
  double tflops = 0, gbps = 0;  // end to end, from the active experts
  std::vector<StepTiming> steps;
  std::string tuning;       // the plan's tuning line (which table row, or the heuristic)
  std::string plan;         // the steps, "a -> b -> c"
  // Where the reference came from: "cache" (read; cpu::run_reference did not run) or "computed";
  // empty when the run failed before validation. The note names the cache file and, on a miss,
  // why the file was not used and whether the new one was stored.
  std::string reference, reference_note;
  std::string weights;      // where the weights were made: "host" or "device" (generated in GPU memory)
  std::string timing;       // how the times were taken (CUDA: graph replays, the weight copies rotated)
};

// The random layer every worker builds for (tokens, seed): one definition for the worker and for the
// tuner, which keys the reference cache by it.
RandomLayerOptions worker_layer_options(int64_t tokens, uint64_t seed);

// Fails only when the request itself is wrong (an invalid problem, a refused choice, no memory);
// a candidate that runs wrong gives ok = false with the reason.
Result<WorkerResult> run_candidate(const WorkerRequest& request);

std::string to_json_line(const WorkerResult& result);
Result<WorkerResult> parse_worker_json(const std::string& line);

// Test-only fault injection (documented in docs/tune.md): MOEKIT_TUNE_TEST_FAULT="crash:TEXT",
// "hang:TEXT" or "nan:TEXT" makes the worker crash (SIGSEGV), hang, or return a NaN output when its
// choice string contains TEXT. Called by the worker command before it runs the candidate.
void apply_test_fault(const std::string& choice, bool* poison_output);

}  // namespace moekit::tune
