// MoeRunner: the one entry point for an MoE layer.
//
//   auto runner = MoeRunner::create(problem, {.backend = BackendChoice::kAuto}).value();
//   auto prepared = runner.prepare_weights(weights).value();       // once
//   size_t bytes = runner.workspace_size(inputs).value();          // per shape
//   runner.run(prepared, inputs, outputs, workspace, stream);      // per call
//
// `run` neither allocates device memory nor synchronizes with the host; the stream comes last. What
// `run` does for a given token count is `plan(T)`, the same object `moekit explain` prints.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "moekit/moe_problem.h"
#include "moekit/plan.h"
#include "moekit/stages.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit {

struct RunnerOptions {
  BackendChoice backend = BackendChoice::kAuto;
  FusionControls fusions{};
  // Knob values for every plan (checked by check_choice; a refused choice makes the plan not
  // runnable, saying why). Empty: the tuned table's row, else the heuristic.
  KernelChoice choice{};
  // A tuned table (moekit/tuning.h); null: the one MOEKIT_TUNING_TABLE names, if any (unless
  // read_env_table is false).
  std::shared_ptr<const TuningTable> tuning_table{};
  bool read_env_table = true;
};

// Weights in the form the chosen backend wants, made once by MoeRunner::prepare_weights. The CPU
// backend uses the caller's tensors as they are (they must outlive this object); a GPU backend may
// repack them into memory it owns.
class PreparedWeights {
 public:
  PreparedWeights(PreparedWeights&&) noexcept = default;
  PreparedWeights& operator=(PreparedWeights&&) noexcept = default;
  const MoeWeights& weights() const { return weights_; }
  BackendKind backend() const { return backend_; }

 private:
  friend class MoeRunner;
  PreparedWeights() = default;
  MoeWeights weights_;
  std::vector<Tensor> owned_;
  BackendKind backend_ = BackendKind::kCpu;
  MoeProblem problem_;
};

// Where each stage buffer lives in the workspace (offsets in bytes, 256-byte aligned).
struct WorkspaceLayout {
  struct Segment {
    std::string_view name;
    size_t offset = 0;
    size_t bytes = 0;
  };
  std::vector<Segment> segments;
  size_t total_bytes = 0;
  int64_t tokens = 0;    // T (Masked: E_local * max_m): what the plan is made for
  int64_t max_rows = 0;  // R_max: the most expanded rows this call can have
  int64_t out_rows = 0;
};

class MoeRunner {
 public:
  // Checks the problem (a message naming the field and value on error) and picks the device.
  static Result<MoeRunner> create(const MoeProblem& problem, const RunnerOptions& options = {});

  MoeRunner(MoeRunner&&) noexcept;
  MoeRunner& operator=(MoeRunner&&) noexcept;
  ~MoeRunner();

  const MoeProblem& problem() const { return problem_; }
  const DeviceTarget& device() const { return device_; }
  const Decision& device_decision() const { return device_decision_; }

  // Validates the weights against the problem (shapes, dtypes, scale layouts) and prepares them.
  Result<PreparedWeights> prepare_weights(const MoeWeights& weights) const;

  // The plan `run` follows for `num_tokens` tokens (Masked: E_local * max_m rows).
  MoePlan plan(int64_t num_tokens, const WeightTraits& weights) const;
  // The same for inputs of these shapes: hidden [T, H], or Masked [E_local, max_m, H].
  MoePlan plan(const MoeInputs& inputs, const WeightTraits& weights) const;

  // Workspace bytes `run` needs for inputs of these shapes, and how it is laid out.
  Result<size_t> workspace_size(const MoeInputs& inputs) const;
  Result<WorkspaceLayout> workspace_layout(const MoeInputs& inputs) const;

  // Runs the layer. Validates everything first; on error nothing is written.
  Status run(const PreparedWeights& weights, const MoeInputs& inputs, const MoeOutputs& outputs,
             std::span<std::byte> workspace, Stream stream = {}) const;

  // Runs only step `step_index` of the plan (MoePlan::steps), on a workspace a full `run` with the
  // same inputs filled before: how the tuner and the benchmark time each step on its own.
  Status run_step(const PreparedWeights& weights, const MoeInputs& inputs, const MoeOutputs& outputs,
                  std::span<std::byte> workspace, Stream stream, size_t step_index) const;

 private:
  MoeRunner() = default;
  const MoePlan& cached_plan(int64_t num_tokens, const WeightTraits& traits) const;
  // Runs steps [first, end) of the plan (clamped to its step count), after validating the call.
  Status run_steps(const PreparedWeights& weights, const MoeInputs& inputs, const MoeOutputs& outputs,
                   std::span<std::byte> workspace, Stream stream, size_t first, size_t end) const;

  MoeProblem problem_;
  RunnerOptions options_;
  DeviceTarget device_;
  Decision device_decision_;
  // Plans by token count: the first call with a new count builds one (and allocates), later calls
  // reuse it.
  struct PlanCache;
  std::unique_ptr<PlanCache> plans_;
};

}  // namespace moekit
