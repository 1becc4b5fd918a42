// Renders a plan for people (a table) and for programs (JSON with a fixed key order, so golden files
// compare byte for byte).
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "moekit/plan.h"

namespace moekit {
namespace {

std::string yes_no(bool b) { return b ? "yes" : "no"; }

}  // namespace

std::string plan_kernels(const MoePlan& plan) {
  std::string s;
  for (const auto& step : plan.steps) s += (s.empty() ? "" : " -> ") + step.kernel;
  return s;
}

std::string plan_refusal(const MoePlan& plan) {
  std::string why = plan.backend.on ? "" : plan.backend.reason;
  for (const auto& n : plan.notes) why += (why.empty() ? "" : "; ") + n;
  return why;
}

std::string problem_summary(const MoeProblem& p, int64_t tokens) {
  const int local = p.local_experts();
  std::string experts = local == p.num_experts ? fmt::format("E={}", p.num_experts)
                                               : fmt::format("E={} (local {}..{})", p.num_experts, p.local_expert_begin,
                                                             p.local_expert_begin + local - 1);
  return fmt::format("{} K={} H={} I={} T={} format={} dtype={} quant={}", experts, p.top_k, p.hidden, p.intermediate, tokens,
                     input_format_name(p.input_format), dtype_name(p.activation_dtype), quant_scheme_name(p.quant));
}

namespace {

std::string options_line(const MoeProblem& p) {
  std::string routing = fmt::format("routing={} renormalize={}", routing_method_name(p.routing.method), yes_no(p.routing.renormalize));
  if (p.routing.method == RoutingMethod::kDeepSeekV3) routing += fmt::format(" n_group={} topk_group={}", p.routing.n_group, p.routing.topk_group);
  if (p.routing.routed_scaling_factor != 1.0f) routing += fmt::format(" routed_scaling_factor={}", p.routing.routed_scaling_factor);
  std::string act = fmt::format("activation={}", activation_name(p.activation.kind));
  if (p.activation.kind == Activation::kSwiGLUClamped) act += fmt::format(" alpha={} limit={}", p.activation.alpha, p.activation.limit);
  if (activation_is_gated(p.activation.kind)) act += fmt::format(" gate_up={}", gate_up_layout_name(p.gate_up_layout));
  return fmt::format("{} {} deterministic={} no_combine={} weight_on_input={}", routing, act, yes_no(p.deterministic),
                     yes_no(p.no_combine), yes_no(p.apply_router_weight_on_input));
}

std::string stage_range(Stage first, Stage last) {
  return first == last ? std::string(stage_name(first)) : fmt::format("{}..{}", stage_name(first), stage_name(last));
}

nlohmann::ordered_json decision_json(const Decision& d) {
  return {{"on", d.on}, {"rule", d.rule}, {"reason", d.reason}};
}

}  // namespace

std::string plan_to_text(const MoePlan& plan) {
  std::string s;
  s += fmt::format("problem    {}\n", problem_summary(plan.problem, plan.num_tokens));
  s += fmt::format("options    {}\n", options_line(plan.problem));
  s += fmt::format("device     {}\n", plan.device.name);
  s += fmt::format("backend    {} ({})  [{}] {}\n", backend_kind_name(plan.device.backend), plan.runnable ? "runnable" : "NOT runnable",
                   plan.backend.rule, plan.backend.reason);
  s += "\nstages\n";
  for (const auto& st : plan.stages)
    s += fmt::format("  {:<11} {:<5} [{}] {}\n", stage_name(st.stage), st.decision.on ? "runs" : "skip", st.decision.rule, st.decision.reason);
  s += "\nfusions\n";
  for (const auto& f : plan.fusions)
    s += fmt::format("  {:<17} {:<4} [{}] {}\n", fusion_name(f.fusion), f.decision.on ? "on" : "off", f.decision.rule, f.decision.reason);
  for (const auto& d : plan.declined) s += fmt::format("    declined: {}\n", d);
  if (!plan.placements.empty()) {
    s += "\nplacements\n";
    for (const auto& p : plan.placements)
      s += fmt::format("  {:<26} -> {:<10} [{}] {}\n", p.what, stage_name(p.stage), p.rule, p.reason);
  }
  s += "\nsteps\n";
  int i = 0;
  for (const auto& step : plan.steps) s += fmt::format("  {}. {:<28} {}\n", ++i, step.kernel, stage_range(step.first, step.last));
  if (!plan.knobs.empty()) {
    s += "\nknobs\n";
    for (const auto& k : plan.knobs) {
      s += fmt::format("  {:<20} {:<21} {}\n", k.name, k.value, k.source);
      if (!k.why.empty()) s += fmt::format("    why: {}\n", k.why);
    }
  }
  s += fmt::format("\ntuning     {}\n", plan.tuning);
  if (!plan.notes.empty()) {
    s += "\nnotes\n";
    for (const auto& n : plan.notes) s += fmt::format("  - {}\n", n);
  }
  return s;
}

std::string plan_to_json(const MoePlan& plan) {
  const MoeProblem& p = plan.problem;
  nlohmann::ordered_json j;
  j["problem"] = {{"num_experts", p.num_experts},
                  {"local_expert_begin", p.local_expert_begin},
                  {"num_local_experts", p.local_experts()},
                  {"top_k", p.top_k},
                  {"hidden", p.hidden},
                  {"intermediate", p.intermediate},
                  {"num_tokens", plan.num_tokens},
                  {"input_format", input_format_name(p.input_format)},
                  {"activation_dtype", dtype_name(p.activation_dtype)},
                  {"quant", quant_scheme_name(p.quant)},
                  {"routing", routing_method_name(p.routing.method)},
                  {"renormalize", p.routing.renormalize},
                  {"n_group", p.routing.n_group},
                  {"topk_group", p.routing.topk_group},
                  {"routed_scaling_factor", p.routing.routed_scaling_factor},
                  {"activation", activation_name(p.activation.kind)},
                  {"gate_up_layout", gate_up_layout_name(p.gate_up_layout)},
                  {"deterministic", p.deterministic},
                  {"no_combine", p.no_combine},
                  {"apply_router_weight_on_input", p.apply_router_weight_on_input}};
  j["device"] = {{"name", plan.device.name},
                 {"backend", backend_kind_name(plan.device.backend)},
                 {"compute_capability", plan.device.compute_capability},
                 {"num_sms", plan.device.num_sms},
                 {"real", plan.device.real}};
  j["runnable"] = plan.runnable;
  j["backend"] = decision_json(plan.backend);
  auto& stages = j["stages"] = nlohmann::ordered_json::array();
  for (const auto& st : plan.stages) {
    auto d = decision_json(st.decision);
    d["stage"] = stage_name(st.stage);
    stages.push_back(d);
  }
  auto& fusions = j["fusions"] = nlohmann::ordered_json::array();
  for (const auto& f : plan.fusions) {
    auto d = decision_json(f.decision);
    d["fusion"] = fusion_name(f.fusion);
    fusions.push_back(d);
  }
  j["declined"] = plan.declined;
  auto& placements = j["placements"] = nlohmann::ordered_json::array();
  for (const auto& pl : plan.placements)
    placements.push_back({{"what", pl.what}, {"stage", stage_name(pl.stage)}, {"rule", pl.rule}, {"reason", pl.reason}});
  auto& steps = j["steps"] = nlohmann::ordered_json::array();
  for (const auto& step : plan.steps)
    steps.push_back({{"kernel", step.kernel}, {"first", stage_name(step.first)}, {"last", stage_name(step.last)}});
  auto& knobs = j["knobs"] = nlohmann::ordered_json::array();
  for (const auto& k : plan.knobs) {
    nlohmann::ordered_json o = {{"name", k.name}, {"value", k.value}, {"source", k.source}};
    if (!k.why.empty()) o["why"] = k.why;
    knobs.push_back(std::move(o));
  }
  j["tuning"] = plan.tuning;
  j["notes"] = plan.notes;
  return j.dump(2) + "\n";
}

}  // namespace moekit
