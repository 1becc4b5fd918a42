#include "problem_options.h"

#include <fmt/format.h>

#include "moekit/presets.h"

namespace moekit::cli {

void ProblemOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--preset", preset, "Model preset (see `moekit explain --list-presets`)");
  cmd.add_option("--experts", experts, "num_experts (E)");
  cmd.add_option("--top-k", top_k, "top_k (K)");
  cmd.add_option("--hidden", hidden, "hidden size (H)");
  cmd.add_option("--intermediate", intermediate, "intermediate size per expert (I)");
  cmd.add_option("--local-experts", local_experts, "experts held by this rank (expert parallelism)");
  cmd.add_option("--local-begin", local_begin, "first global expert held by this rank");
  cmd.add_option("--activation", activation, "swiglu, geglu, geglu_tanh, swiglu_clamped, relu2, silu, gelu, relu, identity");
  cmd.add_option("--gate-up", gate_up, "W13's gate/up row layout: concatenated (gate rows, then up rows) or interleaved (gate i at row 2i, up i at 2i + 1)");
  cmd.add_option("--routing", routing, "softmax_topk, topk_softmax, deepseek_v3, llama4, topk");
  cmd.add_option("--renormalize", renormalize, "renormalize the top-k weights (true/false)");
  cmd.add_option("--n-group", n_group, "deepseek_v3: expert groups");
  cmd.add_option("--topk-group", topk_group, "deepseek_v3: groups kept per token");
  cmd.add_option("--scaling", scaling, "routed_scaling_factor");
  cmd.add_option("--quant", quant, "none, fp8_per_tensor, fp8_per_token, fp8_block, int8_per_token, w4a16, w8a16, mxfp4, mxfp4_mxfp8, nvfp4, w4a8");
  cmd.add_option("--group-size", group_size, "group size of w4a16/w8a16/w4a8 (32, 64, 128)");
  cmd.add_option("--format", format, "standard, pre_routed, masked, indexed");
  cmd.add_option("--dtype", dtype, "activation dtype: bf16, f16, f32");
  cmd.add_flag("--deterministic", deterministic, "bitwise-reproducible output (no atomics in reductions)");
  cmd.add_flag("--no-combine", no_combine, "output [T, K, H] instead of the combined [T, H]");
  cmd.add_flag("--weight-on-input", weight_on_input, "apply_router_weight_on_input (top_k must be 1)");
  cmd.add_option("--fusion", fusions, "NAME=on|off|auto for routing_prologue, gemm1_activation, gemm2_finalize, whole_layer; whole_layer=IMPL (e.g. cuda.decode_layer) forces that implementation (repeatable)");
}

Result<MoeProblem> ProblemOptions::resolve() const {
  MoeProblem p;
  if (!preset.empty()) {
    auto found = find_preset(preset);
    if (!found.ok()) return found.status();
    p = found->problem;
  } else if (!experts || !top_k || !hidden || !intermediate) {
    return Status::InvalidArgument("give --preset, or all of --experts, --top-k, --hidden and --intermediate");
  }
  if (experts) p.num_experts = *experts;
  if (top_k) p.top_k = *top_k;
  if (hidden) p.hidden = *hidden;
  if (intermediate) p.intermediate = *intermediate;
  if (local_experts) p.num_local_experts = *local_experts;
  if (local_begin) p.local_expert_begin = *local_begin;
  if (group_size) p.group_size = *group_size;
  if (n_group) p.routing.n_group = *n_group;
  if (topk_group) p.routing.topk_group = *topk_group;
  if (scaling) p.routing.routed_scaling_factor = *scaling;
  if (renormalize) p.routing.renormalize = *renormalize;
  auto apply = [](const std::optional<std::string>& text, auto parse, auto& field) -> Status {
    if (!text) return Status::Ok();
    auto v = parse(*text);
    if (!v.ok()) return v.status();
    field = *v;
    return Status::Ok();
  };
  MOEKIT_RETURN_IF_ERROR(apply(activation, parse_activation, p.activation.kind));
  MOEKIT_RETURN_IF_ERROR(apply(routing, parse_routing_method, p.routing.method));
  MOEKIT_RETURN_IF_ERROR(apply(quant, parse_quant_scheme, p.quant));
  MOEKIT_RETURN_IF_ERROR(apply(format, parse_input_format, p.input_format));
  MOEKIT_RETURN_IF_ERROR(apply(gate_up, parse_gate_up_layout, p.gate_up_layout));
  MOEKIT_RETURN_IF_ERROR(apply(dtype, parse_activation_dtype, p.activation_dtype));
  p.deterministic |= deterministic;
  p.no_combine |= no_combine;
  p.apply_router_weight_on_input |= weight_on_input;
  return p;
}

Result<FusionControls> ProblemOptions::fusion_controls() const {
  FusionControls f;
  for (const std::string& item : fusions) {
    const auto eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    Switch sw;
    if (value == "on") sw = Switch::kOn;
    else if (value == "off") sw = Switch::kOff;
    else if (value == "auto") sw = Switch::kAuto;
    else if (name == "whole_layer" && !value.empty()) {
      // whole_layer=NAME: that implementation only, forced on (cuda.decode_layer, cuda.decode_tokens, ...)
      f.whole_layer_impl = value;
      sw = Switch::kOn;
    } else return Status::InvalidArgument(fmt::format("--fusion {}: the value must be on, off or auto (whole_layer also takes an implementation's name)", item));
    if (name == "routing_prologue") f.routing_prologue = sw;
    else if (name == "gemm1_activation") f.gemm1_activation = sw;
    else if (name == "gemm2_finalize") f.gemm2_finalize = sw;
    else if (name == "whole_layer") f.whole_layer = sw;
    else return Status::InvalidArgument(fmt::format("--fusion {}: '{}' is not one of routing_prologue, gemm1_activation, gemm2_finalize, whole_layer", item, name));
  }
  return f;
}

std::string ProblemOptions::describe() const {
  std::string s;
  auto add = [&](const char* flag, const auto& v) {
    if (v) s += fmt::format(" {} {}", flag, *v);
  };
  if (!preset.empty()) s += " --preset " + preset;
  add("--experts", experts); add("--top-k", top_k); add("--hidden", hidden); add("--intermediate", intermediate);
  add("--local-experts", local_experts); add("--local-begin", local_begin); add("--activation", activation); add("--gate-up", gate_up);
  add("--routing", routing); add("--n-group", n_group); add("--topk-group", topk_group); add("--scaling", scaling);
  add("--quant", quant); add("--group-size", group_size); add("--format", format); add("--dtype", dtype);
  if (renormalize) s += fmt::format(" --renormalize {}", *renormalize ? "true" : "false");
  if (deterministic) s += " --deterministic";
  if (no_combine) s += " --no-combine";
  if (weight_on_input) s += " --weight-on-input";
  for (const auto& f : fusions) s += " --fusion " + f;
  return s;
}

}  // namespace moekit::cli
