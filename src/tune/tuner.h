// `moekit tune`: candidates from the knob space (the same list make_plan checks against), each run in
// an isolated worker process with a timeout, a journal to resume from, stage-wise search then
// end-to-end timing of the best few, and the tuned table. docs/tune.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "moekit/plan.h"
#include "moekit/tuning.h"
#include "tune/worker.h"

namespace moekit::tune {

struct TuneShape {
  MoeProblem problem;
  int64_t tokens = 1;
};

// ---- candidates and selection (pure) ----------------------------------------------------------------
// The stage-wise candidates: the heuristic (an empty choice) first, then each knob's other legal
// values, one knob at a time, the others at the heuristic.
std::vector<KernelChoice> stagewise_candidates(const std::vector<KnobSpec>& space);

struct Measured {
  KernelChoice choice;
  WorkerResult result;
};

// For each knob, the value whose candidate was fastest: by the time of the plan steps that cover the
// knob's stage (a backend knob), or end to end (a fusion knob, which changes the steps). Failed
// candidates are never chosen; the heuristic value wins ties.
std::map<std::string, std::string> best_per_knob(const std::vector<KnobSpec>& space, const std::vector<Measured>& stagewise);

// The end-to-end candidates: the heuristic, all knobs at their best, and that combination with one
// improved knob back at the heuristic (for knobs that interact), at most `top` besides the heuristic.
std::vector<KernelChoice> final_candidates(const std::vector<KnobSpec>& space, const std::map<std::string, std::string>& best, int top);

// --update-improved: a new row replaces the old one only when it is faster by more than
// `min_improvement` (a fraction) of the old time and by more than the measured noise (the larger of
// the two rows' spreads). Without an old row it is added.
struct UpdateDecision {
  bool replace = false;
  std::string why;
};
UpdateDecision update_improved(const TuningRow* old_row, const TuningRow& new_row, double min_improvement);

// A row must beat the heuristic by more than the noise (the larger max - min spread of the two timed
// runs) to be written: a row that ties it (the heuristic's own choice among them) has no measured
// gain and pins the plan of its day, keeping later improvements of the heuristic out of that shape
// (docs/tune.md: bench/tune/h200.csv's 26 ties). `ties` is false when the heuristic did not run.
struct TieCheck {
  bool ties = false;
  std::string why;  // "the heuristic ties the best: X us against Y us, within the noise Z us"
};
TieCheck tie_with_heuristic(const WorkerResult& best, const WorkerResult* heuristic);

// ---- execution ----------------------------------------------------------------------------------------
struct TuneOptions {
  std::string worker_program;  // the moekit binary (its tune-worker command)
  std::string output;          // the tuned table (read first when it exists; rows are replaced)
  std::string journal;         // JSON lines; a rerun skips what it lists
  BackendChoice backend = BackendChoice::kAuto;
  double timeout_s = 120;      // per worker
  int iters = 5;
  int warmup = 1;
  int top = 3;
  uint64_t seed = 1;
  bool update_improved = false;
  double min_improvement = 0.03;
  bool keep_ties = false;      // write a row even where it ties the heuristic (tie_with_heuristic)
  bool progress = true;        // the progress bar on stderr
  // Workers at a time: 0 = one per GPU with the CUDA backend (each sees its own GPU through
  // CUDA_VISIBLE_DEVICES), one on the CPU (a second would share its cores and spoil the timings).
  int jobs = 0;
  // The workers' reference cache (tune/reference_cache.h; "" : every worker computes its reference).
  // With one, the first worker of each shape whose reference is not there yet runs before the
  // shape's others, so that they read it instead of all computing it at once.
  std::string reference_cache;
};

struct ShapeReport {
  TuneShape shape;
  bool tuned = false;          // a winner was found
  TuningRow row;               // the winner's row
  std::string update;          // what happened to the table's row
  WorkerResult winner;
  int candidates = 0, failed = 0;
  std::vector<std::string> failures;  // "choice: why"
};

// Tunes every shape and writes options.output; the report says per shape what won and what failed.
Result<std::vector<ShapeReport>> tune_shapes(const std::vector<TuneShape>& shapes, const TuneOptions& options);

// Runs each shape once through the production path: with the tuned table `table` ("" : the
// heuristic, no table). For --run-config and --compare.
Result<std::vector<Measured>> run_production(const std::vector<TuneShape>& shapes, const std::string& table, const TuneOptions& options);

}  // namespace moekit::tune
