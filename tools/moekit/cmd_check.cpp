// `moekit check`: one configuration against the CPU reference at several token counts (by default the
// odd ones that catch edge cases: 0, 1, 3, 77), each output poisoned with NaN before the run so that
// an element the layer forgets to write fails the check. Exit code 3 when any token count fails.
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "layer_run.h"
#include "moekit/cpu_reference.h"
#include "moekit/random_layer.h"
#include "moekit/runner.h"
#include "problem_options.h"
#include "tune/output_check.h"

namespace moekit::cli {
namespace {

struct CheckOptions {
  ProblemOptions problem;
  std::vector<int64_t> tokens = {0, 1, 3, 77};
  uint64_t seed = 1;
  std::string backend = "auto";
  std::string choice;  // knob values, "NAME=VALUE;..."
  bool biases = false;
};

// The output before a run: NaN, except in the Masked layout, whose rows past masked_m stay untouched
// by contract (zeros, in the layer's output and the reference's alike).
void fill_before_run(const MoeProblem& p, const TensorView& out) {
  if (p.input_format == InputFormat::kMasked)
    std::fill_n(static_cast<uint8_t*>(out.data()), out.storage_bytes(), 0);
  else
    tune::poison_nan(out);
}

int check(const CheckOptions& o) {
  auto backend = parse_backend_choice(o.backend);
  if (!backend.ok()) return fail(backend.status());
  auto fusions = o.problem.fusion_controls();
  if (!fusions.ok()) return fail(fusions.status());
  auto knobs = KernelChoice::parse(o.choice);
  if (!knobs.ok()) return fail(knobs.status().with_context("--choice"));
  for (const int64_t t : o.tokens)
    if (t < 0) return fail(Status::InvalidArgument(fmt::format("--tokens: {} must be >= 0", t)));
  auto problem = o.problem.resolve();
  if (!problem.ok()) return fail(problem.status());
  const MoeProblem& p = *problem;
  auto runner = MoeRunner::create(p, {.backend = *backend, .fusions = *fusions, .choice = *knobs});
  if (!runner.ok()) return fail(runner.status());
  // The weights once; the inputs for each token count.
  auto weights = make_random_layer(p, {.seed = o.seed, .biases = o.biases, .weights_only = true});
  if (!weights.ok()) return fail(weights.status());

  // The summary without its token count, which varies here.
  std::string summary = problem_summary(p, 0);
  if (const size_t at = summary.find(" T=0"); at != std::string::npos) summary.erase(at, 4);
  fmt::print("problem   {} at T = {}\n", summary, fmt::join(o.tokens, ", "));
  fmt::print("device    {}  [{}] {}\n", runner->device().name, runner->device_decision().rule, runner->device_decision().reason);
  int failed = 0;
  for (const int64_t t : o.tokens) {
    auto layer = make_random_layer(p, {.num_tokens = t, .seed = o.seed + static_cast<uint64_t>(t), .inputs_only = true});
    if (!layer.ok()) return fail(layer.status().with_context(fmt::format("T={}", t)));
    const MoeInputs in = layer->inputs();
    fill_before_run(p, layer->out.view());
    auto ran = run_layer_on_host_tensors(*runner, weights->weights, in, layer->outputs(), 1);
    if (!ran.ok()) return fail(ran.status().with_context(fmt::format("T={}", t)));

    auto ref = Tensor::empty(layer->out.dtype(), layer->out.shape());
    if (!ref.ok()) return fail(ref.status());
    fill_before_run(p, ref->view());
    MoeOutputs ro;
    ro.out = ref->view();
    const Status s = cpu::run_reference(p, weights->weights, in, ro);
    if (!s.ok()) return fail(s.with_context(fmt::format("T={}: reference", t)));
    const tune::OutputError err = tune::compare_outputs(layer->out, ref->view());
    const tune::Acceptance acc = tune::accept_output(p, err);
    failed += acc.passed ? 0 : 1;
    const std::string steps = plan_kernels(runner->plan(in, WeightTraits::of(weights->weights)));
    fmt::print("T={:<6} {}: max|diff| {:.3e} = {:.3e} of max|ref|; {} of {} elements differ{}, {} not finite; {} {:.2e} (limit {:.1e}): {}{}\n",
               t, steps, err.max_abs, err.normalized, err.mismatched, layer->out.numel(), err.bitwise ? " (bitwise identical)" : "",
               err.non_finite, acc.metric, acc.value, acc.limit, acc.passed ? "PASSED" : "FAILED", acc.passed ? "" : " (" + acc.why + ")");
  }
  const std::string tokens = fmt::format("{}", fmt::join(o.tokens, ","));
  fmt::print("result    {} of {} token counts passed\n", o.tokens.size() - static_cast<size_t>(failed), o.tokens.size());
  fmt::print("repro     moekit check{} --tokens {} --seed {} --backend {}{}{}\n", o.problem.describe(), tokens, o.seed, o.backend,
             o.biases ? " --biases" : "", o.choice.empty() ? "" : fmt::format(" --choice \"{}\"", o.choice));
  return failed == 0 ? 0 : 3;
}

}  // namespace

CommandAction add_check_command(CLI::App& app) {
  auto opts = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand("check", "Check a configuration against the CPU reference at several token counts (outputs poisoned first)");
  opts->problem.add_to(*cmd);
  cmd->add_option("--tokens,-T", opts->tokens, "token counts, comma-separated (default 0,1,3,77; Masked: max_m per expert)")->delimiter(',');
  cmd->add_option("--seed", opts->seed, "seed of the random weights and inputs");
  cmd->add_option("--backend", opts->backend, "auto (the GPU when present), cpu, cuda");
  cmd->add_option("--choice", opts->choice, "knob values NAME=VALUE;... for the plan (moekit explain lists the knobs), checked like a tuned row");
  cmd->add_flag("--biases", opts->biases, "random gemm1/gemm2 biases");
  return [cmd, opts]() { return cmd->parsed() ? check(*opts) : -1; };
}

}  // namespace moekit::cli
