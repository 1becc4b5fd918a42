// The plan of one MoE layer call: which backend runs it, which stages run (and which implementation
// runs each), which fusions are on, and the named rule that decided each of these. Built by the code
// that runs the layer, so `moekit explain` can never drift from what actually happens.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "moekit/moe_problem.h"
#include "moekit/stages.h"
#include "moekit/status.h"

namespace moekit {

// The machine a plan is made for: the real one, or a named architecture for `explain --arch`.
struct DeviceTarget {
  BackendKind backend = BackendKind::kCpu;
  std::string name;             // "cpu (2 threads)", "NVIDIA H200", "sm90 (named)"
  int compute_capability = 0;   // 90 for sm_90; 0 for the CPU
  int num_sms = 0;              // CUDA: streaming multiprocessors
  int64_t smem_per_block = 0;   // CUDA: opt-in shared memory per block, bytes
  int threads = 0;              // CPU: worker threads
  bool real = false;            // a device of this process (not a named architecture)

  // "cpu", "sm80", "sm89", "sm90", "sm100": published figures for that architecture.
  static Result<DeviceTarget> named(std::string_view arch);
  // The CPU of this process.
  static DeviceTarget host_cpu();
};

// Which backend the caller asks for. kAuto takes the GPU when there is one and the build has the
// CUDA backend, else the CPU.
enum class BackendChoice : uint8_t { kAuto, kCpu, kCuda };
std::string_view backend_choice_name(BackendChoice b);
Result<BackendChoice> parse_backend_choice(std::string_view s);  // "auto", "cpu", "cuda"

enum class Fusion : uint8_t {
  kRoutingPrologue,  // route + build maps in one implementation
  kGemm1Activation,  // the activation (and gemm2's input quantization) in gemm1's epilogue
  kGemm2Finalize,    // finalize (weighting, combine, scatter) in gemm2's epilogue
  kWholeLayer,       // a fused whole-layer implementation instead of the stage pipeline
};
inline constexpr int kNumFusions = 4;
std::string_view fusion_name(Fusion f);

// How a caller (or the tuner) steers a fusion. kAuto follows the rule; kOff turns it off; kOn turns it
// on where the rule said off only for cost (Decision::forceable), never where it would be wrong.
enum class Switch : uint8_t { kAuto, kOn, kOff };
struct FusionControls {
  Switch routing_prologue = Switch::kAuto;
  Switch gemm1_activation = Switch::kAuto;
  Switch gemm2_finalize = Switch::kAuto;
  Switch whole_layer = Switch::kAuto;
  // When not empty, the one whole-layer implementation the plan may take (a registered name such as
  // "cuda.decode_layer"): the others are listed as declined. Where several take a problem the first
  // registered is tried first; this reaches a later one (tests, A/B measurements).
  std::string whole_layer_impl;
  Switch get(Fusion f) const;
};

// One decision and why: `rule` names the function in src/runner/plan_rules.cpp that made it.
struct Decision {
  bool on = false;
  std::string rule;
  std::string reason;
  bool forceable = false;  // off only because it would be slower: Switch::kOn may turn it on
};

// The device for `choice`, and why. kAuto takes GPU 0 when there is one and `registry` has the CUDA
// backend, else the CPU; kCuda without a usable GPU or CUDA backend is an error saying which.
struct DeviceSelection {
  DeviceTarget device;
  Decision decision;
};

struct FusionDecision {
  Fusion fusion;
  Decision decision;
};

// Where an option is applied (e.g. AWQ pre-quant scale -> expand), and the rule that placed it.
struct Placement {
  std::string what;
  Stage stage;
  std::string rule;
  std::string reason;
};

struct StageDecision {
  Stage stage;
  Decision decision;  // on = the stage runs
};

// One implementation call of the pipeline.
struct PlannedStep {
  std::string kernel;  // the registered implementation's name
  Stage first;
  Stage last;
  StageFn run = nullptr;  // the implementation's entry point
};

// Values for tunable choices, by knob name: a backend's knobs (KnobSpec) and the generic fusion knobs
// "fusion.routing_prologue", "fusion.gemm1_activation", "fusion.gemm2_finalize", "fusion.whole_layer"
// ("on" or "off"). A knob left out takes the heuristic's value.
struct KernelChoice {
  std::map<std::string, std::string> knobs;

  // "fusion.gemm2_finalize=on;gemm1.row_block=16" (sorted by name; "" when empty) and back.
  std::string to_string() const;
  static Result<KernelChoice> parse(std::string_view text);
  bool operator==(const KernelChoice&) const = default;
};

class TuningTable;  // moekit/tuning.h

struct MoePlan {
  MoeProblem problem;
  int64_t num_tokens = 0;
  DeviceTarget device;
  Decision backend;                 // on = runnable; rule and reason for the backend chosen
  std::vector<StageDecision> stages;
  std::vector<FusionDecision> fusions;
  std::vector<Placement> placements;
  std::vector<std::string> declined;  // whole-layer implementations that declined: "name: why"
  std::vector<PlannedStep> steps;     // what runs, in order (one step when a whole layer runs)
  std::vector<std::string> notes;     // anything else a user should know (e.g. a missing kernel)
  std::vector<KnobSetting> knobs;     // the backend's knobs, each with where its value came from
  std::string tuning;                 // whether a tuned table row was used, or the heuristic and why
  bool runnable = false;

  const FusionDecision& fusion(Fusion f) const;
  FusionDecision& fusion(Fusion f);
};

struct PlanOptions {
  FusionControls fusions;
  WeightTraits weights;  // what the weights provide (static scales, AWQ, biases)
  KernelChoice choice;   // the caller's knob values; a fusion switch that is not kAuto wins over it
  const TuningTable* table = nullptr;  // consulted when the caller gives no choice (docs/tune.md)
};

// Every tunable choice for (query, device): the fusion knobs (generic code, from the plan rules:
// "off" is legal where the rule says on, "on" where it says off only for cost) and then the
// backend's knobs (Registry::knob_space). The tuner enumerates candidates from this list.
std::vector<KnobSpec> knob_space(const PlanQuery& query, const DeviceTarget& device, const Registry& registry = default_registry());

// The one validity check shared by make_plan (a caller's or a table row's choice) and the tuner
// (every candidate): each knob exists for (query, device) and its value is one of the legal ones.
Status check_choice(const PlanQuery& query, const DeviceTarget& device, const KernelChoice& choice,
                    const Registry& registry = default_registry());

// The plan for `problem` with `num_tokens` tokens on `device`, resolved against `registry`. The
// problem should already be valid (MoeRunner::create checks it); the plan itself never fails: a
// combination nothing implements gives runnable = false and a note saying why.
Result<DeviceSelection> select_device(BackendChoice choice, const Registry& registry);

MoePlan make_plan(const MoeProblem& problem, int64_t num_tokens, const DeviceTarget& device,
                  const PlanOptions& options, const Registry& registry = default_registry());

// "E=128 K=8 H=2048 I=768 T=32 format=standard dtype=bf16 quant=none": the first line of a plan.
std::string problem_summary(const MoeProblem& problem, int64_t num_tokens);

// "cuda.route -> cuda.build_maps -> ...": the plan's step kernels in order, for one-line reports.
std::string plan_kernels(const MoePlan& plan);

// Why a plan does not run: the backend's reason when none was chosen, then the plan's notes, "; "
// between them (the message of MoeRunner::run's "no runnable plan" error).
std::string plan_refusal(const MoePlan& plan);

// Renderings for `moekit explain`: a human table and a stable JSON document.
std::string plan_to_text(const MoePlan& plan);
std::string plan_to_json(const MoePlan& plan);

}  // namespace moekit
