// `moekit run`: one MoE layer from a preset or explicit shape, on random inputs, on the chosen
// backend; prints the plan, the time, a checksum and (with --refcheck) the error against the CPU
// reference.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "layer_run.h"
#include "moekit/checkpoint.h"
#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"
#include "moekit/random_layer.h"
#include "moekit/runner.h"
#include "moekit/tensor_file.h"
#include "problem_options.h"
#include "tune/output_check.h"

namespace moekit::cli {
namespace {

struct RunOptions {
  ProblemOptions problem;
  std::string checkpoint;   // a Hugging Face model directory or .safetensors file
  int layer = -1;
  std::string model_type;   // for a lone .safetensors file
  std::string input;        // hidden states [T, H]: .npy, or the tensor `input_name` of a .safetensors
  std::string input_name = "hidden";
  std::string output;       // .npy or .safetensors
  int64_t tokens = 32;
  uint64_t seed = 1;
  std::string backend = "auto";
  std::string choice;       // knob values, "NAME=VALUE;..." (KernelChoice), as `moekit explain --choice` shows them
  int iters = 1;
  bool refcheck = false;
  bool biases = false;
  bool json = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Checksum {
  double sum = 0, abs_sum = 0;
  int64_t non_finite = 0;
};
Checksum checksum(const TensorView& t) {
  Checksum c;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = load_element(t.data(), t.dtype(), i);
    if (!std::isfinite(v)) {
      ++c.non_finite;
      continue;
    }
    c.sum += v;
    c.abs_sum += std::abs(v);
  }
  return c;
}

// Rows routed to this rank's experts: what the GEMMs actually compute (for GFLOP/s).
int64_t routed_rows(const MoeProblem& p, const RandomLayer& L, const TensorView& topk_ids) {
  switch (p.input_format) {
    case InputFormat::kMasked: {
      int64_t r = 0;
      for (int64_t e = 0; e < L.masked_m.numel(); ++e) r += L.masked_m.data_as<const int32_t>()[e];
      return r;
    }
    case InputFormat::kIndexed: return L.gather_index.numel();
    default: {
      int64_t r = 0;
      const int64_t end = p.local_expert_begin + p.local_experts();
      for (int64_t i = 0; i < topk_ids.numel(); ++i) {
        const int32_t id = topk_ids.data_as<const int32_t>()[i];
        r += id >= p.local_expert_begin && id < end ? 1 : 0;
      }
      return r;
    }
  }
}

// The hidden states from --input, converted to the activation dtype.
Result<Tensor> read_hidden(const RunOptions& o, DType act, int64_t hidden) {
  const bool st = o.input.ends_with(".safetensors");
  auto t = read_tensor_file(o.input, st ? o.input_name : std::string_view{});
  if (!t.ok()) return t.status().with_context("--input");
  if (t->view().ndim() != 2 || t->view().size(1) != hidden)
    return Status::InvalidArgument(fmt::format("--input {}: hidden states must be [T, H={}], got {}", o.input, hidden, t->view().describe()));
  if (t->dtype() == act) return std::move(t).value();
  auto c = Tensor::empty(act, t->shape());
  if (!c.ok()) return c.status();
  for (int64_t i = 0; i < t->numel(); ++i) store_element(c->data(), act, i, load_element(t->data(), t->dtype(), i));
  return std::move(c).value();
}

int run(const RunOptions& o) {
  auto backend = parse_backend_choice(o.backend);
  if (!backend.ok()) return fail(backend.status());
  auto fusions = o.problem.fusion_controls();
  if (!fusions.ok()) return fail(fusions.status());
  if (o.iters < 1) return fail(Status::InvalidArgument(fmt::format("--iters={} must be >= 1", o.iters)));
  auto knobs = KernelChoice::parse(o.choice);
  if (!knobs.ok()) return fail(knobs.status().with_context("--choice"));

  // The layer: a checkpoint's, or a preset / explicit shape with random weights.
  auto t0 = std::chrono::steady_clock::now();
  std::optional<MoeLayerCheckpoint> ckpt;
  MoeProblem p;
  if (!o.checkpoint.empty()) {
    if (o.layer < 0) return fail(Status::InvalidArgument("--checkpoint needs --layer N (the MoE layer index)"));
    if (!o.problem.preset.empty()) return fail(Status::InvalidArgument("give --checkpoint or --preset, not both"));
    CheckpointOptions co;
    co.model_type = o.model_type;
    if (o.problem.gate_up) {  // --gate-up chooses how the loader stacks W13 (the other fields come from its config)
      auto layout = parse_gate_up_layout(*o.problem.gate_up);
      if (!layout.ok()) return fail(layout.status());
      co.gate_up = *layout;
    }
    auto loaded = load_moe_layer(o.checkpoint, o.layer, co);
    if (!loaded.ok()) return fail(loaded.status());
    ckpt = std::move(loaded).value();
    p = ckpt->problem;
    p.deterministic |= o.problem.deterministic;
  } else {
    auto problem = o.problem.resolve();
    if (!problem.ok()) return fail(problem.status());
    p = *problem;
  }

  Tensor file_hidden;
  int64_t tokens = o.tokens;
  if (!o.input.empty()) {
    if (p.input_format != InputFormat::kStandard && p.input_format != InputFormat::kPreRouted)
      return fail(Status::InvalidArgument(fmt::format("--input: format={} takes its own layout; use standard or pre_routed", input_format_name(p.input_format))));
    auto h = read_hidden(o, p.activation_dtype, p.hidden);
    if (!h.ok()) return fail(h.status());
    file_hidden = std::move(h).value();
    tokens = file_hidden.view().size(0);
  }
  if (tokens < 0) return fail(Status::InvalidArgument(fmt::format("--tokens={} must be >= 0", tokens)));

  auto runner = MoeRunner::create(p, {.backend = *backend, .fusions = *fusions, .choice = *knobs});
  if (!runner.ok()) return fail(runner.status());

  auto layer = make_random_layer(p, {.num_tokens = tokens, .seed = o.seed, .biases = o.biases && !ckpt, .inputs_only = ckpt.has_value()});
  if (!layer.ok()) return fail(layer.status());
  if (file_hidden.data() != nullptr) std::copy_n(static_cast<const uint8_t*>(file_hidden.data()), file_hidden.storage_bytes(), static_cast<uint8_t*>(layer->hidden.data()));
  MoeWeights weights = layer->weights;
  MoeInputs in = layer->inputs();
  int64_t weight_bytes = 0;
  for (const auto& t : layer->storage) weight_bytes += t.storage_bytes();
  if (ckpt) {
    // The checkpoint's router turns the hidden states into logits; DeepSeek-V3's correction bias too.
    weights = ckpt->weights;
    in.e_score_correction_bias = ckpt->e_score_correction_bias;
    const Status s = compute_router_logits(*ckpt, in.hidden, in.router_logits);
    if (!s.ok()) return fail(s.with_context("router logits"));
    for (const TensorView* v : {&weights.w13, &weights.w2, &weights.w13_scale, &weights.w2_scale, &weights.w13_bias, &weights.w2_bias})
      weight_bytes += v->defined() ? v->storage_bytes() : 0;
  }
  const double gen_s = seconds_since(t0);

  // Masked rows at or beyond masked_m stay untouched: start from zeros so checksums are defined.
  std::fill_n(static_cast<uint8_t*>(layer->out.data()), layer->out.storage_bytes(), 0);
  // The routing decision, to count the rows the GEMMs compute (Standard routes inside the layer).
  Tensor ids;
  MoeOutputs outputs = layer->outputs();
  if (p.input_format == InputFormat::kStandard) {
    auto t = Tensor::empty(DType::kI32, {in.hidden.size(0), int64_t{p.top_k}});
    if (!t.ok()) return fail(t.status());
    ids = std::move(t).value();
    outputs.topk_ids = ids.view();
  }
  // The GPU backend runs on device copies; the output comes back for the checksum and --refcheck.
  // Each run is timed to its completion (the device is synchronized); `moekit bench` times graphs.
  auto ran = run_layer_on_host_tensors(*runner, weights, in, outputs, o.iters);
  if (!ran.ok()) return fail(ran.status());
  const std::vector<double>& times = ran->seconds;
  const size_t ws_bytes = ran->workspace_bytes;
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const int64_t rows = routed_rows(p, *layer, p.input_format == InputFormat::kStandard ? ids.view() : in.topk_ids);
  const double flops = 2.0 * static_cast<double>(rows) * (static_cast<double>(p.gemm1_rows()) * p.hidden + static_cast<double>(p.hidden) * p.intermediate);
  const Checksum cs = checksum(layer->out);
  const MoePlan plan = runner->plan(in, WeightTraits::of(weights));

  std::optional<tune::OutputError> err;
  if (o.refcheck) {
    auto ref = Tensor::empty(layer->out.dtype(), layer->out.shape());
    if (!ref.ok()) return fail(ref.status());
    std::fill_n(static_cast<uint8_t*>(ref->data()), ref->storage_bytes(), 0);
    MoeOutputs ro;
    ro.out = ref->view();
    const Status s = cpu::run_reference(p, weights, in, ro);
    if (!s.ok()) return fail(s.with_context("reference"));
    err = tune::compare_outputs(layer->out, ref->view());
  }
  if (!o.output.empty()) {
    const Status s = write_tensor_file(o.output, layer->out.view());
    if (!s.ok()) return fail(s.with_context("--output"));
  }
  const double tol = tune::refcheck_tolerance(p.activation_dtype);
  const bool ref_ok = !err || (err->non_finite == 0 && err->normalized <= tol);
  const std::string steps = plan_kernels(plan);
  std::string source = o.problem.describe();
  if (ckpt) source = fmt::format(" --checkpoint {} --layer {}{}", o.checkpoint, o.layer, o.model_type.empty() ? "" : " --model-type " + o.model_type);
  if (!o.input.empty()) source += " --input " + o.input;
  if (!o.output.empty()) source += " --output " + o.output;
  const std::string repro = fmt::format("moekit run{} --tokens {} --seed {} --backend {} --iters {}{}{}{}", source, tokens, o.seed, o.backend,
                                        o.iters, o.refcheck ? " --refcheck" : "", o.biases ? " --biases" : "",
                                        o.choice.empty() ? "" : fmt::format(" --choice \"{}\"", o.choice));

  if (o.json) {
    nlohmann::ordered_json j;
    j["problem"] = nlohmann::ordered_json::parse(plan_to_json(plan))["problem"];
    j["device"] = runner->device().name;
    j["steps"] = steps;
    j["time_s"] = {{"median", median}, {"min", sorted.front()}, {"max", sorted.back()}, {"runs", o.iters}};
    j["gflops"] = median > 0 ? flops / median / 1e9 : 0.0;
    j["checksum"] = {{"sum", cs.sum}, {"abs_sum", cs.abs_sum}, {"non_finite", cs.non_finite}};
    if (err)
      j["refcheck"] = {{"max_abs", err->max_abs}, {"normalized", err->normalized}, {"tolerance", tol}, {"bitwise_identical", err->bitwise},
                       {"mismatched", err->mismatched}, {"passed", ref_ok}};
    j["repro"] = repro;
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("problem   {}\n", problem_summary(p, plan.num_tokens));
    fmt::print("device    {}  [{}] {}\n", runner->device().name, runner->device_decision().rule, runner->device_decision().reason);
    fmt::print("plan      {}\n", steps);
    if (ckpt) {
      fmt::print("weights   {:.3f} GB from {} layer {} ({}) in {:.2f} s; workspace {:.1f} MB\n", weight_bytes / 1e9, o.checkpoint, o.layer,
                 model_family_name(ckpt->family), gen_s, ws_bytes / 1e6);
      for (const auto& n : ckpt->notes) fmt::print("          note: {}\n", n);
    } else {
      fmt::print("weights   {:.3f} GB random (seed {}) in {:.2f} s; workspace {:.1f} MB\n", weight_bytes / 1e9, o.seed, gen_s, ws_bytes / 1e6);
    }
    fmt::print("inputs    {}\n", o.input.empty() ? fmt::format("random (seed {})", o.seed) : o.input);
    fmt::print("time      median {:.3f} ms over {} run{} (min {:.3f}, max {:.3f}); {:.2f} GFLOP/s ({} routed rows)\n", median * 1e3, o.iters,
               o.iters > 1 ? "s" : "", sorted.front() * 1e3, sorted.back() * 1e3, median > 0 ? flops / median / 1e9 : 0.0, rows);
    fmt::print("checksum  sum {:.6e}  sum|x| {:.6e}  non-finite {}  (out {} [{}])\n", cs.sum, cs.abs_sum, cs.non_finite,
               dtype_name(layer->out.dtype()), fmt::join(layer->out.shape(), ", "));
    if (err)
      fmt::print("refcheck  vs cpu::run_reference: max|diff| {:.3e} = {:.3e} of max|ref| (tolerance {:.1e}); {} of {} elements differ{}: {}\n",
                 err->max_abs, err->normalized, tol, err->mismatched, layer->out.numel(), err->bitwise ? " (bitwise identical)" : "",
                 ref_ok ? "PASSED" : "FAILED");
    fmt::print("repro     {}\n", repro);
  }
  return ref_ok ? 0 : 3;
}

}  // namespace

CommandAction add_run_command(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run one MoE layer (random inputs) and print time, checksum and, with --refcheck, the error");
  opts->problem.add_to(*cmd);
  cmd->add_option("--tokens,-T", opts->tokens, "token count T (Masked: max_m per expert); --input sets it");
  cmd->add_option("--checkpoint", opts->checkpoint, "Hugging Face model directory or .safetensors file (docs/checkpoints.md)");
  cmd->add_option("--layer", opts->layer, "with --checkpoint: the MoE layer index");
  cmd->add_option("--model-type", opts->model_type, "with a lone .safetensors: mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3, gpt_oss");
  cmd->add_option("--input", opts->input, "hidden states [T, H] from a .npy file or a .safetensors file (tensor --input-name)");
  cmd->add_option("--input-name", opts->input_name, "tensor name inside a .safetensors --input");
  cmd->add_option("--output", opts->output, "write the output to a .npy or .safetensors file");
  cmd->add_option("--seed", opts->seed, "seed of the random weights and inputs");
  cmd->add_option("--backend", opts->backend, "auto (the GPU when present), cpu, cuda");
  cmd->add_option("--iters", opts->iters, "timed runs (the median is reported)");
  cmd->add_option("--choice", opts->choice, "knob values NAME=VALUE;... for the plan (moekit explain lists the knobs), checked like a tuned row");
  cmd->add_flag("--refcheck", opts->refcheck, "compare with the CPU reference (exit code 3 when over tolerance)");
  cmd->add_flag("--biases", opts->biases, "random gemm1/gemm2 biases");
  cmd->add_flag("--json", opts->json, "print JSON");
  return [cmd, opts]() { return cmd->parsed() ? run(*opts) : -1; };
}

}  // namespace moekit::cli
