// The stages of one MoE layer, the data each stage hands to the next, and the registry through which
// backends plug in stage implementations and whole-layer fused implementations (seed 000's design:
// fused functions and per-stage functions registered per (input format, backend)).
//
//   route        router_logits [T,E]        -> topk_ids [T,K] i32, topk_weights [T,K] f32
//   build maps   topk_ids (or masked_m, or expert_offsets + gather_index)
//                                           -> expert_offsets, row_source, row_weight, dest CSR
//   expand       hidden + row_source        -> gemm1_in [R,H]   (+ weight on input, AWQ, act quant)
//   gemm1        gemm1_in x w13[e]^T (+bias)-> gemm1_out [R,N1]
//   activation   gemm1_out                  -> gemm2_in [R,I]   (+ gemm2 AWQ, act quant)
//   gemm2        gemm2_in x w2[e]^T (+bias) -> gemm2_out [R,H]
//   finalize     gemm2_out + dest CSR       -> out (combined, no_combine, or masked layout)
//
// R is the number of expanded rows actually routed to local experts (expert_offsets[E_local]); buffers
// are sized for the most R can be (T*K, E_local*max_m, or the Indexed row count).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "moekit/moe_problem.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit {

enum class Stage : uint8_t { kRoute, kBuildMaps, kExpand, kGemm1, kActivation, kGemm2, kFinalize };
inline constexpr int kNumStages = 7;
std::string_view stage_name(Stage s);

enum class BackendKind : uint8_t { kCpu, kCuda };
std::string_view backend_kind_name(BackendKind b);

// An opaque stream handle (a cudaStream_t for the CUDA backend; ignored by the CPU backend). Kept
// opaque so that the public headers need no CUDA include.
struct Stream {
  void* handle = nullptr;
};

// The data that flows between stages, carved from the caller's workspace. Each field's producer and
// consumers are fixed; a fused implementation may skip writing a buffer only if nothing after it
// reads that buffer.
struct StageBuffers {
  // route -> build maps (PreRouted: views of the caller's inputs).
  TensorView topk_ids;        // [T, K] i32, global expert ids
  TensorView topk_weights;    // [T, K] f32, without routed_scaling_factor
  // build maps -> expand, gemm1, gemm2, finalize.
  TensorView expert_offsets;  // [E_local + 1] i64: rows of local expert e are [off[e], off[e+1])
  TensorView row_source;      // [R_max] i64: the row of `hidden` (flattened) that row r reads
  TensorView row_weight;      // [R_max] f32: routing weight of row r (1 for Masked)
  TensorView dest_offsets;    // [out_rows + 1] i64: output row o sums rows dest_rows[off[o]..off[o+1])
  TensorView dest_rows;       // [R_max] i64, in (token, slot) order: the fixed summation order
  // expand -> gemm1 -> activation -> gemm2 -> finalize. The element type is the backend's choice
  // (the CPU backend keeps float64).
  TensorView gemm1_in;        // [R_max, H]
  TensorView gemm1_out;       // [R_max, gemm1_rows]
  TensorView gemm2_in;        // [R_max, I]
  TensorView gemm2_out;       // [R_max, H]
  // Backend-private bytes (BackendHooks::scratch_bytes): sort scratch, accumulators. Empty for the
  // CPU backend.
  TensorView scratch;
};

// One tunable choice's setting in a plan: e.g. {"gemm1.tile", "m64n128k64", "heuristic"}. `source` is
// "heuristic", "caller", or "tuned table <path> row <n> (bucket <b>)". `why`: the heuristic's reason
// (KnobSpec::why) where the value is the heuristic's; where a caller or a table set another value,
// what the heuristic would have taken and why. Empty where the backend gives no reason.
struct KnobSetting {
  std::string name;
  std::string value;
  std::string source;
  std::string why;
};

// Everything a stage implementation sees.
struct StageContext {
  const MoeProblem& problem;
  const MoeWeights& weights;  // prepared weights
  const MoeInputs& inputs;
  const MoeOutputs& outputs;
  const StageBuffers& buffers;
  Stream stream;
  std::span<const KnobSetting> knobs = {};  // the plan's knob settings (MoePlan::knobs)
};

// The value of knob `name` in the context's plan, or `fallback` when the plan has no such knob.
std::string_view knob_value(const StageContext& context, std::string_view name, std::string_view fallback);

using StageFn = Status (*)(const StageContext&);

// What a plan knows when it asks whether an implementation applies: the problem, the token count and
// what the weights provide (explain has no weights, only their traits).
struct WeightTraits {
  bool w13_bias = false;
  bool w2_bias = false;
  bool w13_input_scale = false;    // static activation scale before gemm1
  bool w2_input_scale = false;     // static activation scale before gemm2
  bool w13_pre_quant_scale = false;  // AWQ
  bool w2_pre_quant_scale = false;
  bool expert_map = false;
  static WeightTraits of(const MoeWeights& w);
};

struct PlanQuery {
  const MoeProblem& problem;
  int64_t num_tokens;  // T (Masked: E_local * max_m)
  WeightTraits weights;
};

// Why an implementation declines, or nullopt when it accepts.
using DeclineFn = std::optional<std::string> (*)(const PlanQuery&);

// Implements the contiguous stages [first, last] for the listed input formats. first < last is a
// fused stage (e.g. gemm1 + activation).
struct StageImpl {
  std::string_view name;  // e.g. "cpu.gemm1_activation"
  BackendKind backend;
  Stage first;
  Stage last;
  std::vector<InputFormat> formats;
  StageFn run;
};

// Runs the whole layer in one implementation (seed 000's "fused func"). Tried before the stage
// pipeline; `declines` says, at plan time, why it does not apply, and then the stages run.
struct FusedLayerImpl {
  std::string_view name;
  BackendKind backend;
  std::vector<InputFormat> formats;
  DeclineFn declines;
  StageFn run;
  // Optional: why the stage pipeline is expected to be faster where the implementation does accept
  // (nullopt or unset: take the whole layer). A cost preference, not a limit: the caller's
  // FusionControls::whole_layer = kOn or a tuned table's fusion.whole_layer=on still takes it.
  DeclineFn prefers_stages = nullptr;
};

// What a backend provides beyond its implementations: its checks of the caller's tensors (the
// runner calls them before anything runs), its element types for the row buffers, and its private
// scratch. Unset functions mean "nothing to check" / "no scratch".
struct BackendHooks {
  Status (*validate_weights)(const MoeProblem&, const MoeWeights&) = nullptr;  // in prepare_weights
  Status (*validate_io)(const MoeProblem&, const MoeInputs&, const MoeOutputs&) = nullptr;  // in run
  // StageBuffers::scratch bytes for a call with these row counts (tokens as in PlanQuery).
  Result<size_t> (*scratch_bytes)(const MoeProblem&, int64_t tokens, int64_t max_rows, int64_t out_rows) = nullptr;
  DType rows_dtype = DType::kF64;            // gemm1_out and gemm2_out
  bool operands_in_activation_dtype = false;  // gemm1_in and gemm2_in: the activation dtype, else rows_dtype
};

// A backend's tunable choice for one plan query (docs/tune.md): its legal values only (for this
// problem, token count and device), the one the runtime heuristic picks, and the stage it affects
// (the tuner searches stage by stage). E.g. {"gemm1.tile", {"m16n64k64", "m64n128k64"}, "m64n128k64",
// Stage::kGemm1}. Names are "<stage>.<what>"; values are short words without ',', ';', '=' or spaces.
struct KnobSpec {
  std::string name;
  std::vector<std::string> values;
  std::string heuristic;
  Stage stage = Stage::kGemm1;
  // Why the heuristic takes its value here: the rule and the numbers it read (`moekit explain` prints
  // it under the knob). Empty where the backend gives no reason.
  std::string why;
};

struct DeviceTarget;
// A backend's knob space: every tunable choice it has for (query, device). Called by make_plan (for
// the heuristic values and to check a caller's or a table's choice) and by the tuner (candidates).
using KnobSpaceFn = std::vector<KnobSpec> (*)(const PlanQuery& query, const DeviceTarget& device);

class Registry {
 public:
  // Hooks of a backend (defaults until set).
  void set_hooks(BackendKind backend, const BackendHooks& hooks) { hooks_[static_cast<int>(backend)] = hooks; }
  const BackendHooks& hooks(BackendKind backend) const { return hooks_[static_cast<int>(backend)]; }

  // Rejects a duplicate name, first > last, or an empty format list.
  Status add_stage(StageImpl impl);
  Status add_fused_layer(FusedLayerImpl impl);

  // The implementation of exactly [first, last] for (format, backend), or nullptr.
  const StageImpl* find_stage(InputFormat format, BackendKind backend, Stage first, Stage last) const;
  // Whole-layer implementations for (format, backend), in registration order.
  std::vector<const FusedLayerImpl*> fused_layers(InputFormat format, BackendKind backend) const;
  bool has_backend(BackendKind backend) const;

  // The backend's knob space (at most one function per backend; a later call replaces it), or
  // nullptr when the backend has no tunable choices.
  void set_knob_space(BackendKind backend, KnobSpaceFn fn);
  KnobSpaceFn knob_space(BackendKind backend) const;

  std::span<const StageImpl> stages() const { return stages_; }
  std::span<const FusedLayerImpl> fused() const { return fused_; }

 private:
  std::vector<StageImpl> stages_;
  std::vector<FusedLayerImpl> fused_;
  BackendHooks hooks_[2];
  KnobSpaceFn knob_spaces_[2] = {nullptr, nullptr};  // by BackendKind
};

// The registry with every backend this build has (CPU always; CUDA when built).
const Registry& default_registry();

}  // namespace moekit
