// The plan builder: asks the rules (plan_rules.cpp) what should happen and the registry what exists,
// and writes down both, so `moekit explain` shows exactly what `MoeRunner::run` will do.
#include "moekit/plan.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "knobs.h"
#include "plan_rules.h"

namespace moekit {
namespace {

// Who steers a fusion away from its rule: the caller's FusionControls, or a knob's source (the caller's
// KernelChoice or a tuned table row).
struct Steerer {
  Switch sw = Switch::kAuto;
  std::string rule = "FusionControls";
  std::string who = "the caller";
};

// The caller's switch wins; otherwise the fusion knob's value where it differs from the heuristic's.
Steerer steerer(const PlanOptions& options, const ResolvedKnobs& knobs, Fusion f) {
  if (options.fusions.get(f) != Switch::kAuto) return {options.fusions.get(f)};
  const std::string name = fusion_knob_name(f);
  auto it = knobs.settings.find(name);
  if (it == knobs.settings.end() || it->second.value == knobs.heuristic.at(name)) return {};
  const KnobSetting& k = it->second;
  const bool table = k.source.starts_with("tuned table");
  return {k.value == "on" ? Switch::kOn : Switch::kOff, table ? "tuned table" : "KernelChoice", table ? k.source : "the caller"};
}

// Applies a switch to a rule's decision.
Decision steer(Decision d, const Steerer& s) {
  if (s.sw == Switch::kOff && d.on) return {false, s.rule, fmt::format("turned off by {}", s.who), false};
  if (s.sw == Switch::kOn && !d.on) {
    if (d.forceable) return {true, s.rule, fmt::format("forced on by {} ({} said: {})", s.who, d.rule, d.reason), false};
    d.reason += " (a request to force it on was refused: it would be wrong, not only slower)";
  }
  return d;
}

struct PipelineBuilder {
  MoePlan& plan;
  const Registry& registry;

  // Adds the step for [first, last] if the fusion is on and implemented; otherwise turns the fusion
  // off (saying why) and returns false so the caller adds the stages one by one.
  bool add_fused(Fusion f, Stage first, Stage last) {
    FusionDecision& d = plan.fusion(f);
    if (!d.decision.on) return false;
    const StageImpl* impl = registry.find_stage(plan.problem.input_format, plan.device.backend, first, last);
    if (impl == nullptr) {
      // The rule allows it but nothing implements it: keep the rule's reason visible.
      d.decision.on = false;
      d.decision.reason = fmt::format("the rule allows it ({}), but the {} backend registers no fused {}..{} for format={}", d.decision.reason,
                                      backend_kind_name(plan.device.backend), stage_name(first), stage_name(last),
                                      input_format_name(plan.problem.input_format));
      return false;
    }
    plan.steps.push_back({std::string(impl->name), first, last, impl->run});
    return true;
  }

  void add_single(Stage s) {
    const StageImpl* impl = registry.find_stage(plan.problem.input_format, plan.device.backend, s, s);
    if (impl == nullptr) {
      plan.runnable = false;
      plan.notes.push_back(fmt::format("the {} backend has no implementation of stage {} for format={}",
                                       backend_kind_name(plan.device.backend), stage_name(s), input_format_name(plan.problem.input_format)));
      return;
    }
    plan.steps.push_back({std::string(impl->name), s, s, impl->run});
  }

  bool runs(Stage s) const { return plan.stages[static_cast<int>(s)].decision.on; }

  void build() {
    if (runs(Stage::kRoute) && add_fused(Fusion::kRoutingPrologue, Stage::kRoute, Stage::kBuildMaps)) {
    } else {
      if (runs(Stage::kRoute)) add_single(Stage::kRoute);
      add_single(Stage::kBuildMaps);
    }
    add_single(Stage::kExpand);
    if (!add_fused(Fusion::kGemm1Activation, Stage::kGemm1, Stage::kActivation)) {
      add_single(Stage::kGemm1);
      add_single(Stage::kActivation);
    }
    if (!add_fused(Fusion::kGemm2Finalize, Stage::kGemm2, Stage::kFinalize)) {
      add_single(Stage::kGemm2);
      add_single(Stage::kFinalize);
    }
  }
};

}  // namespace

std::string_view stage_name(Stage s) {
  switch (s) {
    case Stage::kRoute: return "route";
    case Stage::kBuildMaps: return "build_maps";
    case Stage::kExpand: return "expand";
    case Stage::kGemm1: return "gemm1";
    case Stage::kActivation: return "activation";
    case Stage::kGemm2: return "gemm2";
    case Stage::kFinalize: return "finalize";
  }
  return "unknown";
}

std::string_view backend_kind_name(BackendKind b) { return b == BackendKind::kCpu ? "cpu" : "cuda"; }

std::string_view fusion_name(Fusion f) {
  switch (f) {
    case Fusion::kRoutingPrologue: return "routing+prologue";
    case Fusion::kGemm1Activation: return "gemm1+activation";
    case Fusion::kGemm2Finalize: return "gemm2+finalize";
    case Fusion::kWholeLayer: return "whole_layer";
  }
  return "unknown";
}

Switch FusionControls::get(Fusion f) const {
  switch (f) {
    case Fusion::kRoutingPrologue: return routing_prologue;
    case Fusion::kGemm1Activation: return gemm1_activation;
    case Fusion::kGemm2Finalize: return gemm2_finalize;
    case Fusion::kWholeLayer: return whole_layer;
  }
  return Switch::kAuto;
}

// make_plan decides every fusion, so the lookup always finds one.
const FusionDecision& MoePlan::fusion(Fusion f) const {
  for (const auto& d : fusions)
    if (d.fusion == f) return d;
  return fusions.front();
}
FusionDecision& MoePlan::fusion(Fusion f) { return const_cast<FusionDecision&>(std::as_const(*this).fusion(f)); }

WeightTraits WeightTraits::of(const MoeWeights& w) {
  return {.w13_bias = w.w13_bias.defined(),
          .w2_bias = w.w2_bias.defined(),
          .w13_input_scale = w.w13_input_scale.defined(),
          .w2_input_scale = w.w2_input_scale.defined(),
          .w13_pre_quant_scale = w.w13_pre_quant_scale.defined(),
          .w2_pre_quant_scale = w.w2_pre_quant_scale.defined(),
          .expert_map = w.expert_map.defined()};
}

MoePlan make_plan(const MoeProblem& problem, int64_t num_tokens, const DeviceTarget& device, const PlanOptions& options,
                  const Registry& registry) {
  MoePlan plan;
  plan.problem = problem;
  plan.num_tokens = num_tokens;
  plan.device = device;
  const rules::RuleInput in{problem, num_tokens, device, options.weights};

  plan.backend = rules::backend_supports_scheme(in);
  if (plan.backend.on && !registry.has_backend(device.backend))
    plan.backend = {false, "registry", fmt::format("this build has no {} backend (it registers no implementation)", backend_kind_name(device.backend))};
  plan.runnable = plan.backend.on;

  const PlanQuery query{problem, num_tokens, options.weights};
  const std::vector<KnobSpec> space = knob_space(query, device, registry);
  const ResolvedKnobs knobs = resolve_knobs(query, device, options, space, registry);
  plan.tuning = knobs.tuning;
  if (!knobs.refused.ok()) {
    plan.runnable = false;
    plan.notes.push_back(fmt::format("the caller's knob choice is refused: {}", knobs.refused.message()));
  }
  for (const auto& [name, setting] : knobs.settings)
    if (!name.starts_with("fusion.")) plan.knobs.push_back(setting);

  for (int s = 0; s < kNumStages; ++s) plan.stages.push_back({Stage(s), rules::stage_runs(in, Stage(s))});
  for (auto [f, rule] : {std::pair{Fusion::kRoutingPrologue, &rules::routing_prologue_fusion}, std::pair{Fusion::kGemm1Activation, &rules::gemm1_activation_fusion},
                         std::pair{Fusion::kGemm2Finalize, &rules::gemm2_finalize_fusion}})
    plan.fusions.push_back({f, steer(rule(in), steerer(options, knobs, f))});

  // A whole-layer implementation is tried first; each may decline (seed 000's fused function).
  Decision whole{false, "whole_layer", ""};
  const FusedLayerImpl* chosen = nullptr;
  const auto candidates = registry.fused_layers(problem.input_format, device.backend);
  const Steerer whole_steer = steerer(options, knobs, Fusion::kWholeLayer);
  if (whole_steer.sw == Switch::kOff) {
    whole = {false, whole_steer.rule, fmt::format("turned off by {}", whole_steer.who)};
  } else if (candidates.empty()) {
    whole.reason = fmt::format("the {} backend registers no whole-layer implementation for format={}", backend_kind_name(device.backend),
                               input_format_name(problem.input_format));
  } else {
    std::string preference;  // an accepting implementation the stages are preferred to, and why
    for (const FusedLayerImpl* impl : candidates) {
      if (!options.fusions.whole_layer_impl.empty() && impl->name != options.fusions.whole_layer_impl) {
        plan.declined.push_back(fmt::format("{}: not the caller's whole-layer implementation ({})", impl->name, options.fusions.whole_layer_impl));
        continue;
      }
      if (auto why = impl->declines(query)) {
        plan.declined.push_back(fmt::format("{}: {}", impl->name, *why));
        continue;
      }
      if (whole_steer.sw != Switch::kOn && impl->prefers_stages) {
        if (auto why = impl->prefers_stages(query)) {
          if (preference.empty()) preference = fmt::format("{} accepts this problem, but the stages are preferred: {}", impl->name, *why);
          continue;
        }
      }
      chosen = impl;
      break;
    }
    const std::string& named = options.fusions.whole_layer_impl;
    if (!named.empty() && std::ranges::none_of(candidates, [&](const FusedLayerImpl* impl) { return impl->name == named; })) {
      std::string names;
      for (const FusedLayerImpl* impl : candidates) names += fmt::format("{}{}", names.empty() ? "" : ", ", impl->name);
      plan.notes.push_back(fmt::format("whole_layer_impl={} names no whole-layer implementation of the {} backend for format={} (registered: {})", named,
                                       backend_kind_name(device.backend), input_format_name(problem.input_format), names));
    }
    if (chosen && whole_steer.sw == Switch::kOn)
      whole = {true, whole_steer.rule, fmt::format("{} forced on by {}", chosen->name, whole_steer.who)};
    else if (chosen)
      whole = {true, "whole_layer", fmt::format("{} accepts this problem", chosen->name)};
    else if (!preference.empty())
      whole = {false, "whole_layer", preference, true};
    else
      whole = {false, "whole_layer", "every whole-layer implementation declined (see declined)"};
  }
  plan.fusions.push_back({Fusion::kWholeLayer, whole});

  if (!registry.has_backend(device.backend)) {
    plan.notes.push_back(fmt::format("this build registers no {} implementations: the decisions above are the policy its kernels follow; "
                                     "nothing would run",
                                     backend_kind_name(device.backend)));
  } else if (chosen != nullptr) {
    const Stage first = plan.stages[0].decision.on ? Stage::kRoute : Stage::kBuildMaps;
    plan.steps.push_back({std::string(chosen->name), first, Stage::kFinalize, chosen->run});
    plan.notes.push_back("the whole-layer implementation covers every stage; the stage fusions apply when it declines");
  } else {
    PipelineBuilder{plan, registry}.build();
  }

  const bool act_fused = plan.fusion(Fusion::kGemm1Activation).decision.on;
  for (auto p : {rules::router_weight_placement(in), rules::routed_scaling_placement(in), rules::gemm1_awq_placement(in),
                 rules::gemm1_input_quant_placement(in), rules::gemm2_awq_placement(in, act_fused),
                 rules::gemm2_input_quant_placement(in, act_fused)})
    if (p) plan.placements.push_back(*p);
  return plan;
}

}  // namespace moekit
