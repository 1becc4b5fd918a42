// `moekit explain`: the plan for a problem on a device, as the runner would follow it.
#include <cstdio>

#include <fmt/format.h>

#include "commands.h"
#include "moekit/plan.h"
#include "moekit/presets.h"
#include "moekit/tuning.h"
#include "problem_options.h"

namespace moekit::cli {
namespace {

struct ExplainOptions {
  ProblemOptions problem;
  int64_t tokens = 1;
  std::string arch = "auto";
  bool json = false;
  bool list_presets = false;
  bool static_input_scales = false;
  bool awq = false;
  std::string tuning_table;  // a tuned table to consult (default: MOEKIT_TUNING_TABLE)
  std::string choice;        // knob values, "NAME=VALUE;..."
};

void print_presets() {
  for (const auto& p : model_presets()) {
    const MoeProblem& m = p.problem;
    std::printf("%-16s E=%-3d K=%d H=%-5d I=%-5d routing=%s activation=%s quant=%s  (%s)\n", std::string(p.name).c_str(), m.num_experts,
                m.top_k, m.hidden, m.intermediate, std::string(routing_method_name(m.routing.method)).c_str(),
                std::string(activation_name(m.activation.kind)).c_str(), std::string(quant_scheme_name(m.quant)).c_str(),
                std::string(p.model).c_str());
  }
}

int explain(const ExplainOptions& o) {
  if (o.list_presets) {
    print_presets();
    return 0;
  }
  auto problem = o.problem.resolve();
  if (!problem.ok()) return fail(problem.status());
  auto fusions = o.problem.fusion_controls();
  if (!fusions.ok()) return fail(fusions.status());
  if (o.tokens < 0) return fail(Status::InvalidArgument(fmt::format("--tokens={} must be >= 0", o.tokens)));
  DeviceTarget device;
  if (o.arch == "auto") {
    auto sel = select_device(BackendChoice::kAuto, default_registry());
    if (!sel.ok()) return fail(sel.status());
    device = sel->device;
  } else {
    auto named = DeviceTarget::named(o.arch);
    if (!named.ok()) return fail(named.status());
    device = *named;
  }
  PlanOptions po;
  po.fusions = *fusions;
  po.weights.w13_input_scale = po.weights.w2_input_scale = o.static_input_scales;
  po.weights.w13_pre_quant_scale = po.weights.w2_pre_quant_scale = o.awq;
  auto table = o.tuning_table.empty() ? tuning_table_from_env() : load_shared_table(o.tuning_table);
  if (!table.ok()) return fail(table.status());
  po.table = table->get();
  auto choice = KernelChoice::parse(o.choice);
  if (!choice.ok()) return fail(choice.status().with_context("--choice"));
  po.choice = *choice;
  const MoePlan plan = make_plan(*problem, o.tokens, device, po);
  const std::string text = o.json ? plan_to_json(plan) : plan_to_text(plan);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

CommandAction add_explain_command(CLI::App& app) {
  auto opts = std::make_shared<ExplainOptions>();
  CLI::App* cmd = app.add_subcommand("explain", "Print the plan (stages, fusions and the rules that decided them) for a problem");
  opts->problem.add_to(*cmd);
  cmd->add_option("--tokens,-T", opts->tokens, "token count T");
  cmd->add_option("--arch", opts->arch, "auto (this machine), cpu, sm80, sm89, sm90, sm100");
  cmd->add_flag("--json", opts->json, "print JSON");
  cmd->add_flag("--static-input-scales", opts->static_input_scales, "the weights carry static activation scales");
  cmd->add_flag("--awq", opts->awq, "the weights carry AWQ pre-quant scales");
  cmd->add_flag("--list-presets", opts->list_presets, "list the model presets");
  cmd->add_option("--tuning-table", opts->tuning_table, "a tuned table (moekit tune); default: the file MOEKIT_TUNING_TABLE names");
  cmd->add_option("--choice", opts->choice, "knob values NAME=VALUE;... (see the plan's knobs), checked like a tuned row");
  return [cmd, opts]() { return cmd->parsed() ? explain(*opts) : -1; };
}

}  // namespace moekit::cli
