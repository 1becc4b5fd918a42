// The knob space (the fusion knobs from the plan rules, then the backend's knobs), the one validity
// check shared by make_plan and the tuner, and KernelChoice's text form.
#include <algorithm>

#include <fmt/format.h>

#include "knobs.h"
#include "moekit/tuning.h"
#include "plan_rules.h"

namespace moekit {

std::string fusion_knob_name(Fusion f) {
  switch (f) {
    case Fusion::kRoutingPrologue: return "fusion.routing_prologue";
    case Fusion::kGemm1Activation: return "fusion.gemm1_activation";
    case Fusion::kGemm2Finalize: return "fusion.gemm2_finalize";
    case Fusion::kWholeLayer: return "fusion.whole_layer";
  }
  return "fusion.unknown";
}

namespace {

// The legal values of a fusion knob: the rule's choice first, then the other where it may be taken.
KnobSpec fusion_knob(Fusion f, const Decision& d, Stage stage) {
  KnobSpec k{fusion_knob_name(f), {d.on ? "on" : "off"}, d.on ? "on" : "off", stage, d.reason};
  if (d.on) k.values.push_back("off");
  else if (d.forceable) k.values.push_back("on");
  return k;
}

}  // namespace

std::vector<KnobSpec> knob_space(const PlanQuery& query, const DeviceTarget& device, const Registry& registry) {
  const rules::RuleInput in{query.problem, query.num_tokens, device, query.weights};
  std::vector<KnobSpec> space;
  if (rules::stage_runs(in, Stage::kRoute).on)
    space.push_back(fusion_knob(Fusion::kRoutingPrologue, rules::routing_prologue_fusion(in), Stage::kBuildMaps));
  space.push_back(fusion_knob(Fusion::kGemm1Activation, rules::gemm1_activation_fusion(in), Stage::kActivation));
  space.push_back(fusion_knob(Fusion::kGemm2Finalize, rules::gemm2_finalize_fusion(in), Stage::kFinalize));
  // A whole-layer implementation: "off" is legal when one would be taken, "on" when one accepts the
  // problem but the stages are preferred for cost.
  const auto impls = registry.fused_layers(query.problem.input_format, device.backend);
  const bool accepted = std::any_of(impls.begin(), impls.end(), [&](const FusedLayerImpl* i) { return !i->declines(query); });
  const bool preferred = std::any_of(impls.begin(), impls.end(), [&](const FusedLayerImpl* i) {
    return !i->declines(query) && (!i->prefers_stages || !i->prefers_stages(query));
  });
  space.push_back(fusion_knob(Fusion::kWholeLayer, Decision{preferred, "whole_layer", "", accepted && !preferred}, Stage::kFinalize));
  if (KnobSpaceFn fn = registry.knob_space(device.backend)) {
    for (KnobSpec& k : fn(query, device)) space.push_back(std::move(k));
  }
  return space;
}

Status check_choice(const PlanQuery& query, const DeviceTarget& device, const KernelChoice& choice, const Registry& registry) {
  const auto space = knob_space(query, device, registry);
  for (const auto& [name, value] : choice.knobs) {
    auto spec = std::find_if(space.begin(), space.end(), [&](const KnobSpec& k) { return k.name == name; });
    if (spec == space.end())
      return Status::InvalidArgument(fmt::format("knob '{}' does not exist for this problem on {} (T={})", name, device.name, query.num_tokens));
    if (std::find(spec->values.begin(), spec->values.end(), value) == spec->values.end())
      return Status::InvalidArgument(fmt::format("knob {}={} is not legal here (T={}; legal: {})", name, value, query.num_tokens,
                                                 fmt::join(spec->values, ", ")));
  }
  return Status::Ok();
}

ResolvedKnobs resolve_knobs(const PlanQuery& query, const DeviceTarget& device, const PlanOptions& options,
                            const std::vector<KnobSpec>& space, const Registry& registry) {
  ResolvedKnobs r;
  for (const KnobSpec& k : space) {
    r.settings[k.name] = {k.name, k.heuristic, "heuristic", k.why};
    r.heuristic[k.name] = k.heuristic;
  }
  // A chosen value replaces the heuristic's setting; its reason stays, said as the heuristic's where
  // the value differs. (check_choice has made sure every chosen knob is in the space.)
  auto apply = [&](const KernelChoice& c, const std::string& source) {
    for (const auto& [name, value] : c.knobs) {
      KnobSetting& k = r.settings[name];
      if (value != k.value && !k.why.empty()) k.why = fmt::format("the heuristic would take {}: {}", k.value, k.why);
      k.name = name;
      k.value = value;
      k.source = source;
    }
  };
  if (!options.choice.knobs.empty()) {
    r.refused = check_choice(query, device, options.choice, registry);
    if (r.refused.ok()) apply(options.choice, "caller");
    r.tuning = r.refused.ok() ? "the caller's choice (no table consulted)" : "the caller's choice was refused";
    return r;
  }
  if (options.table == nullptr) {
    r.tuning = "no tuned table: the heuristic's values";
    return r;
  }
  const TuningTable& t = *options.table;
  const int64_t bucket = token_bucket(query.num_tokens);
  const TuningRow* row = t.find(DeviceFingerprint::of(device), problem_key(query.problem), query.num_tokens);
  if (row == nullptr) {
    r.tuning = fmt::format("tuned table {}: no row for this device, problem and bucket {}: the heuristic's values", t.path, bucket);
    if (device.real) log_table_miss_once(r.tuning + fmt::format(" (problem {})", problem_key(query.problem)));
    return r;
  }
  const std::string source = fmt::format("tuned table {} row {} (bucket {})", t.path, row->line, bucket);
  if (Status s = check_choice(query, device, row->choice, registry); !s.ok()) {
    r.tuning = fmt::format("{} is not valid here ({}): the heuristic's values", source, s.message());
    return r;
  }
  apply(row->choice, source);
  r.tuning = fmt::format("{}, tuned at T={} by moekit {} on {}: {:.1f} us vs the heuristic's {:.1f} us", source, row->tokens, row->version,
                         row->date, row->time_us, row->heuristic_us);
  return r;
}

std::string KernelChoice::to_string() const {
  std::string s;
  for (const auto& [name, value] : knobs) s += fmt::format("{}{}={}", s.empty() ? "" : ";", name, value);
  return s;
}

Result<KernelChoice> KernelChoice::parse(std::string_view text) {
  KernelChoice c;
  while (!text.empty()) {
    const size_t end = std::min(text.find(';'), text.size());
    const std::string_view item = text.substr(0, end);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size())
      return Status::InvalidArgument(fmt::format("choice item '{}' is not NAME=VALUE", item));
    // "a=x,b=y" or "a=x b=y" would otherwise reach the knob check as knob a's value "x,b=y".
    if (item.find('=', eq + 1) != std::string_view::npos)
      return Status::InvalidArgument(fmt::format("choice item '{}' holds two '=': separate knobs with ';' (NAME=VALUE;NAME=VALUE)", item));
    c.knobs[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return c;
}

}  // namespace moekit
