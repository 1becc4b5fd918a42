// `moekit bench`: MoE layers against their floor (docs/bench.md). For each preset and token count:
// the device's ceilings measured in the same run, the whole layer timed (GPU: CUDA-graph replay; CPU:
// host clock) over several measurement sets with fresh routing, the cuBLAS baseline (GPU), the plan's
// steps timed alone (--stages), the floor from the experts actually hit, and --refcheck against the
// CPU reference; with --ab, several plans in turns, each against the first. Prints a table; writes
// CSV, JSON and an SVG plot on request.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/cpu_ceilings.h"
#include "bench/floor.h"
#include "bench/layer_bench.h"
#include "bench/progress.h"
#include "bench/refcheck.h"
#include "bench/report.h"
#include "bench/routing_gen.h"
#include "bench/variants.h"
#include "cuda/bench_timing.h"
#include "commands.h"
#include "moekit/build_commit.h"
#include "moekit/random_layer.h"
#include "moekit/system_info.h"
#include "problem_options.h"

namespace moekit::cli {
namespace {

using namespace moekit::bench;

// The four public presets of shared/PERFORMANCE.md, run in bf16 (--quant none) unless told otherwise.
constexpr const char* kDefaultPresets = "mixtral-8x7b,qwen3-30b-a3b,deepseek-v3,gpt-oss-120b";

struct BenchOptions {
  ProblemOptions problem;  // --preset may list several, comma-separated
  std::vector<int64_t> tokens;
  std::string backend = "auto";
  std::string routing = "uniform";
  double zipf_s = 1.2;
  int iters = 0, reps = 0, sets = 0, warmup = -1;  // 0 / -1: the backend's default
  bool stages = false, baseline = true, refcheck = false;
  bool batched_reference = false;  // time the two GEMMs alone, evenly routed, through cuBLAS (GPU)
  bool biases = false;  // random gemm1/gemm2 biases in the weights (GPT-OSS's experts have them)
  int64_t refcheck_tokens = 64;
  std::string csv, json, plot;
  uint64_t seed = 1;
  std::string choice;  // knob values for every plan, "gemm1.tile=stream_n8k128;gemm2.split=2" (KernelChoice)
  std::string ab;      // plans timed side by side, "CHOICE|CHOICE|..." (bench/variants.h); "" for one plan
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string repro(const BenchOptions& o) {
  return fmt::format("moekit bench{} --tokens {} --backend {} --popularity {}{} --iters {} --reps {} --sets {} --warmup {} --seed {}{}{}{}{}{}{}",
                     o.problem.describe(), fmt::join(o.tokens, ","), o.backend, o.routing,
                     o.routing == "zipf" ? fmt::format(" --zipf-s {:g}", o.zipf_s) : std::string(), o.iters, o.reps, o.sets, o.warmup, o.seed,
                     o.stages ? " --stages" : "", o.baseline ? "" : " --no-baseline",
                     o.refcheck ? fmt::format(" --refcheck --refcheck-tokens {}", o.refcheck_tokens) : "",
                     o.csv.empty() ? "" : " --csv " + o.csv, o.json.empty() ? "" : " --json " + o.json,
                     o.plot.empty() ? "" : " --plot " + o.plot) +
         (o.biases ? " --biases" : "") + (o.batched_reference ? " --batched-reference" : "") +
         (o.choice.empty() ? "" : fmt::format(" --choice \"{}\"", o.choice)) + (o.ab.empty() ? "" : fmt::format(" --ab \"{}\"", o.ab));
}

std::string today_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

std::string shape_text(const MoeProblem& p) {
  return fmt::format("E={} K={} H={} I={} {}{}", p.num_experts, p.top_k, p.hidden, p.intermediate, dtype_name(p.activation_dtype),
                     p.quant == QuantScheme::kNone ? "" : fmt::format(" {}", quant_scheme_name(p.quant)));
}

// Schemes whose GEMMs run on fp8 (or narrower) tensor cores: their floor uses the fp8 peak.
bool fp8_math(QuantScheme q) {
  return q == QuantScheme::kFp8PerTensor || q == QuantScheme::kFp8PerToken || q == QuantScheme::kFp8Block ||
         q == QuantScheme::kMxfp4Mxfp8 || q == QuantScheme::kW4A8 || q == QuantScheme::kNvfp4;
}

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  return f.good() ? Status::Ok() : Status::InvalidArgument(fmt::format("cannot write {}", path));
}

// How many weight copies the GPU run rotates through (cuda::rotated_weight_copies): the smallest call
// reads K experts' weights.
int weight_copies(const MoeProblem& p, const WeightBytes& w) {
  const auto [per_call, per_copy] = rotation_bytes(p, w);
  auto n = cuda::rotated_weight_copies(per_call, per_copy);
  return n.ok() ? *n : 1;
}

struct Accumulated {
  std::vector<double> layer, baseline, batched;
  int64_t batched_rows_per_expert = 0;  // the last set's (they differ by a row at most between sets)
  std::vector<std::string> step_names;
  std::vector<std::vector<double>> steps;
  LayerTraffic traffic;  // summed over sets
  double experts_hit = 0, max_expert_rows = 0;
};

void accumulate(Accumulated& a, const SetTiming& s, const LayerTraffic& t) {
  a.layer.insert(a.layer.end(), s.layer_us.begin(), s.layer_us.end());
  a.baseline.insert(a.baseline.end(), s.baseline_us.begin(), s.baseline_us.end());
  a.batched.insert(a.batched.end(), s.batched_us.begin(), s.batched_us.end());
  if (s.batched_rows_per_expert > 0) a.batched_rows_per_expert = s.batched_rows_per_expert;
  if (a.steps.empty()) {
    a.step_names = s.step_names;
    a.steps.resize(s.step_us.size());
  }
  for (size_t k = 0; k < std::min(a.steps.size(), s.step_us.size()); ++k) a.steps[k].insert(a.steps[k].end(), s.step_us[k].begin(), s.step_us[k].end());
  a.experts_hit += static_cast<double>(t.experts_hit);
  a.max_expert_rows += static_cast<double>(t.max_expert_rows);
  a.traffic.routed_rows += t.routed_rows;
  a.traffic.weight_bytes += t.weight_bytes;
  a.traffic.activation_bytes += t.activation_bytes;
  a.traffic.flops += t.flops;
}

struct Machine {
  bool gpu = false;
  double bandwidth = 0, peak = 0, peak_fp8 = 0;
};

// The ceilings of the machine the layers run on, measured now.
Result<Machine> measure_ceilings(bool gpu, BenchReport& report) {
  Machine m{.gpu = gpu};
  if (gpu) {
    auto c = measure_cuda_ceilings();
    if (!c.ok()) return c.status();
    report.ceilings = *c;
    for (const Ceiling& x : *c) {
      if (x.name == "read bandwidth") m.bandwidth = x.value;
      if (x.name == "bf16 dense GEMM") m.peak = x.value;
      if (x.name == "fp8 dense GEMM") m.peak_fp8 = x.value;
    }
    return m;
  }
  const size_t bytes = cpu_bandwidth_bytes();
  m.bandwidth = cpu_read_bandwidth(bytes, 3);
  m.peak = cpu_flop_rate_f64(3);
  report.ceilings = {{"read bandwidth", m.bandwidth, "GB/s", fmt::format("sum of {} MiB of host memory, all threads, best of 3", bytes >> 20)},
                     {"fp64 mul+add", m.peak, "GFLOP/s", "16 chains per thread, all threads, best of 3; the CPU backend's dense peak"},
                     {"fp32 mul+add", cpu_flop_rate_f32(3), "GFLOP/s", "same loop in float"}};
  return m;
}

BenchRow row_head(const std::string& preset, const MoeProblem& p, int64_t T, const std::string& routing, std::string method,
                  std::string kind) {
  BenchRow r;
  r.preset = preset;
  r.shape = shape_text(p);
  r.tokens = T;
  r.routing = routing;
  r.method = std::move(method);
  r.kind = std::move(kind);
  return r;
}

BenchRow layer_row(const std::string& preset, const MoeProblem& p, int64_t T, const std::string& routing, std::string method,
                   const std::vector<double>& us, const Accumulated& a, int sets, const Machine& m) {
  BenchRow r = row_head(preset, p, T, routing, std::move(method), "layer");
  r.us = summarize(us);
  r.experts_hit = a.experts_hit / sets;
  r.max_expert_rows = a.max_expert_rows / sets;
  r.routed_rows = static_cast<double>(a.traffic.routed_rows) / sets;
  LayerTraffic mean = a.traffic;
  mean.weight_bytes /= sets;
  mean.activation_bytes /= sets;
  mean.flops /= sets;
  r.bytes = mean.bytes();
  r.flops = mean.flops;
  const double peak = m.gpu && fp8_math(p.quant) && m.peak_fp8 > 0 ? m.peak_fp8 : m.peak;
  const Floor f = layer_floor(mean, m.bandwidth, peak);
  r.floor_us = f.seconds * 1e6;
  r.bound = std::string(f.bound);
  return r;
}

int run(BenchOptions o) {
  auto choice = parse_backend_choice(o.backend);
  if (!choice.ok()) return fail(choice.status());
  auto selection = select_device(*choice, default_registry());
  if (!selection.ok()) return fail(selection.status());
  const bool gpu = selection->device.backend == BackendKind::kCuda;
  if (o.routing != "uniform" && o.routing != "zipf" && o.routing != "balanced")
    return fail(Status::InvalidArgument(fmt::format("--popularity={} is not one of uniform, zipf, balanced", o.routing)));
  if (o.problem.preset.empty() && !o.problem.experts) {
    o.problem.preset = kDefaultPresets;
    if (!o.problem.quant) o.problem.quant = "none";  // PERFORMANCE.md's table is bf16
  }
  if (o.tokens.empty()) o.tokens = gpu ? std::vector<int64_t>{1, 8, 64, 256, 1024, 4096, 16384} : std::vector<int64_t>{1, 8};
  if (o.iters <= 0) o.iters = gpu ? 20 : 1;
  if (o.reps <= 0) o.reps = gpu ? 10 : 3;
  if (o.sets <= 0) o.sets = gpu ? 3 : 1;
  if (o.warmup < 0) o.warmup = gpu ? 3 : 1;
  for (int64_t t : o.tokens)
    if (t < 1) return fail(Status::InvalidArgument(fmt::format("--tokens: {} must be >= 1", t)));

  // The problems: one per preset (or the explicit shape), each with the given fields on top.
  std::vector<std::pair<std::string, MoeProblem>> problems;
  for (const std::string& name : o.problem.preset.empty() ? std::vector<std::string>{""} : split(o.problem.preset)) {
    ProblemOptions one = o.problem;
    one.preset = name;
    auto p = one.resolve();
    if (!p.ok()) return fail(p.status());
    if (p->input_format != InputFormat::kStandard)
      return fail(Status::InvalidArgument("moekit bench times the standard format (router logits in); --format must be standard"));
    problems.emplace_back(name.empty() ? "custom" : name, *p);
  }
  auto fusions = o.problem.fusion_controls();
  if (!fusions.ok()) return fail(fusions.status());
  auto knobs = KernelChoice::parse(o.choice);
  if (!knobs.ok()) return fail(knobs.status().with_context("--choice"));
  // The plans to time: one (--choice), or --ab's, each on top of --choice.
  std::vector<PlanVariant> variants{{"", *knobs}};
  if (!o.ab.empty()) {
    auto parsed = parse_plan_variants(o.ab, *knobs);
    if (!parsed.ok()) return fail(parsed.status());
    variants = std::move(parsed).value();
  }
  const int nv = static_cast<int>(variants.size());

  BenchReport report;
  report.command = repro(o);
  report.commit = MOEKIT_GIT_DESCRIBE_STRING;
  report.date = today_utc();
  report.backend = std::string(backend_kind_name(selection->device.backend));
  const SystemInfo sys = query_system();
  report.device = gpu ? fmt::format("{} ({} SMs, {:.0f} MiB L2), driver {}, runtime {}", sys.devices.front().name, sys.devices.front().sm_count,
                                    sys.devices.front().l2_cache_bytes / 1048576.0, sys.cuda_driver_version, sys.cuda_runtime_version)
                      : fmt::format("{}; {}", selection->device.name, selection->decision.reason);
  report.timing = gpu ? fmt::format("CUDA-graph replay: median over {} sets x {} samples, each the mean of {} replays between two events "
                                    "(after {} warm-up replays), weights rotated among copies so a call's bytes exceed the L2",
                                    o.sets, o.reps, o.iters, o.warmup)
                      : fmt::format("host steady clock: {} sets x {} samples, each the mean of {} calls (after {} warm-up calls)", o.sets,
                                    o.reps, o.iters, o.warmup);
  auto machine = measure_ceilings(gpu, report);
  if (!machine.ok()) return fail(machine.status());
  // Balanced routing takes each problem's own top-k (below).
  const RoutingSkew random_skew{.zipf_s = o.routing == "zipf" ? o.zipf_s : 0.0, .seed = o.seed};
  const std::string routing = o.routing == "zipf" ? fmt::format("zipf s={:g}", o.zipf_s) : o.routing;
  const TimingOptions topts{.warmup = o.warmup, .iters = o.iters, .reps = o.reps, .stages = o.stages, .baseline = o.baseline && gpu,
                            .batched_reference = o.batched_reference && gpu};
  // The cuBLAS references are the same for every variant: the first's bench times them.
  TimingOptions later_topts = topts;
  later_topts.baseline = later_topts.batched_reference = false;
  if (nv > 1) {
    for (int v = 0; v < nv; ++v)
      report.notes.push_back(fmt::format("moekit v{}: {}", v, variants[v].choice.knobs.empty() ? "the heuristic's plan" : variants[v].choice.to_string()));
    report.notes.push_back(fmt::format("--ab: the {} plans run in turns within each set (forward in even sets, backward in odd), on the same "
                                       "weights, inputs and routing; vN's change is the median over sets of its set median over v0's",
                                       nv));
  }

  bool refcheck_ok = true;
  Progress progress(static_cast<int>(problems.size() * o.tokens.size()), stderr);
  for (const auto& [name, p] : problems) {
    RoutingSkew skew = random_skew;
    if (o.routing == "balanced") skew.balanced_top_k = p.top_k;
    // One runner and one bench (on a GPU: its own weight copies) a variant; the runners must outlive
    // their benches.
    std::vector<std::unique_ptr<MoeRunner>> runners;
    for (const PlanVariant& v : variants) {
      auto runner = MoeRunner::create(p, {.backend = *choice, .fusions = *fusions, .choice = v.choice});
      if (!runner.ok()) return fail(runner.status().with_context(nv > 1 ? fmt::format("{}, --ab variant '{}'", name, v.text) : name));
      runners.push_back(std::make_unique<MoeRunner>(std::move(runner).value()));
    }
    progress.status(fmt::format("{}: random weights{}", name, gpu ? " and their upload" : ""));
    auto layer = make_random_layer(p, {.seed = o.seed, .biases = o.biases, .weights_only = true});
    if (!layer.ok()) return fail(layer.status().with_context(name));
    const WeightBytes wb = weight_bytes(layer->weights, p.local_experts());
    // --ab: every variant's plan at every T first, so that a value one of them refuses stops the run
    // before anything is timed or uploaded (each variant's weight copies), naming the variant.
    const WeightTraits traits = WeightTraits::of(layer->weights);
    if (nv > 1)
      for (int64_t T : o.tokens)
        for (int v = 0; v < nv; ++v) {
          const MoePlan plan = runners[v]->plan(T, traits);
          if (!plan.runnable)
            return fail(Status::Unsupported(
                fmt::format("{} T={}, --ab variant {} ('{}'): no runnable plan: {}", name, T, v, variants[v].text, plan_refusal(plan))));
        }
    std::vector<std::unique_ptr<LayerBench>> benches;
    for (const auto& runner : runners) {
      // Only the first variant times the cuBLAS references (later_topts), so only it holds them.
      const bool with_baseline = (topts.baseline || topts.batched_reference) && benches.empty();
      auto bench = gpu ? make_cuda_layer_bench(*runner, layer->weights, {.weight_copies = weight_copies(p, wb), .baseline = with_baseline})
                       : make_cpu_layer_bench(*runner, layer->weights);
      if (!bench.ok()) return fail(bench.status().with_context(name));
      benches.push_back(std::move(bench).value());
    }
    report.notes.push_back(name + ": " + benches.front()->baseline_note());
    for (int64_t T : o.tokens) {
      progress.step(fmt::format("{} T={}", name, T));
      std::vector<Accumulated> accs(nv);
      std::vector<std::vector<double>> set_medians(nv);  // [variant][set]: --ab's pairing
      std::optional<RandomLayer> inputs;
      for (int set = 0; set < o.sets; ++set) {
        auto in = bench_set_inputs(p, T, o.seed, set, skew);  // fresh hidden states and routing per set
        if (!in.ok()) return fail(in.status());
        // Activations in (hidden, router logits) and out (the combined output, the size of hidden).
        const double act = static_cast<double>(2 * in->hidden.storage_bytes() + in->router_logits.storage_bytes());
        for (int v : variant_order(set, nv)) {
          auto timing = benches[v]->measure(in->inputs(), v == 0 ? topts : later_topts);
          if (!timing.ok()) return fail(timing.status().with_context(fmt::format("{} T={}{}", name, T, nv > 1 ? fmt::format(" v{}", v) : "")));
          accumulate(accs[v], *timing, layer_traffic(p, timing->topk_ids, wb, act));
          set_medians[v].push_back(summarize(timing->layer_us).median);
        }
        inputs = std::move(in).value();
      }
      // --refcheck: each method's output of the last set against the reference on its first tokens.
      auto check = [&](BenchRow& row, Result<Tensor> out) -> Status {
        if (!o.refcheck) return Status::Ok();
        if (!out.ok()) return out.status();
        auto err = refcheck_first_tokens(p, layer->weights, inputs->inputs(), out->view(), o.refcheck_tokens);
        if (!err.ok()) return err.status();
        row.refcheck = *err;
        if (!(*err <= refcheck_limit(p.activation_dtype))) {
          refcheck_ok = false;
          row.note = "REFCHECK FAILED";
        }
        return Status::Ok();
      };
      for (int v = 0; v < nv; ++v) {
        BenchRow row = layer_row(name, p, T, routing, nv > 1 ? fmt::format("moekit v{}", v) : "moekit", accs[v].layer, accs[v], o.sets, *machine);
        if (Status s = check(row, benches[v]->last_output()); !s.ok()) return fail(s);
        if (v > 0) {
          const PairedChange c = paired_change(set_medians[v], set_medians[0]);
          row.note += (row.note.empty() ? "" : "; ") + paired_change_note(c);
          row.against_v0 = c;
        }
        report.rows.push_back(row);
      }
      const Accumulated& acc = accs.front();
      if (!acc.baseline.empty()) {
        BenchRow base = layer_row(name, p, T, routing, "cublas", acc.baseline, acc, o.sets, *machine);
        if (Status s = check(base, benches.front()->last_baseline_output()); !s.ok()) return fail(s);
        report.rows.push_back(base);
      }
      if (!acc.batched.empty()) {
        // Against the layer's floor (its bytes and flops), so that the two % columns compare; no
        // refcheck: it computes the GEMMs of other rows.
        BenchRow ref = layer_row(name, p, T, routing, "cublas.batched", acc.batched, acc, o.sets, *machine);
        ref.note = fmt::format("GEMMs only, {} rows x {} experts", acc.batched_rows_per_expert, p.local_experts());
        report.rows.push_back(ref);
      }
      for (int v = 0; v < nv; ++v)
        for (size_t k = 0; k < accs[v].steps.size(); ++k) {
          BenchRow st = row_head(name, p, T, routing, accs[v].step_names[k], "stage");
          st.us = summarize(accs[v].steps[k]);
          if (nv > 1) st.note = fmt::format("v{}", v);
          report.rows.push_back(st);
        }
    }
  }
  progress.finish();
  if (o.refcheck)
    report.notes.push_back(fmt::format("refcheck: relative L2 error of the first {} tokens of the last set against cpu::run_reference (limit {:g} for bf16)",
                                       o.refcheck_tokens, refcheck_limit(DType::kBF16)));

  fmt::print("{}", report_table(report));
  for (auto [path, text] : {std::pair{o.csv, &report_csv}, {o.json, &report_json}, {o.plot, &report_svg}}) {
    if (path.empty()) continue;
    if (Status s = write_file(path, text(report)); !s.ok()) return fail(s);
  }
  if (!refcheck_ok) {
    fmt::print(stderr, "moekit bench: an output differs from the CPU reference beyond the limit\n");
    return 3;
  }
  return 0;
}

}  // namespace

CommandAction add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Benchmark MoE layers against the floor (`bench attention`: shared-context attention)");
  cmd->require_subcommand(0, 1);
  auto o = std::make_shared<BenchOptions>();
  o->problem.add_to(*cmd);
  cmd->get_option("--preset")->description(fmt::format("Model presets, comma-separated (default: {} with --quant none)", kDefaultPresets));
  cmd->add_option("--tokens,-T", o->tokens, "Token counts, comma-separated (default: 1,8,...,16384 on a GPU, 1,8 on the CPU)")->delimiter(',');
  cmd->add_option("--backend", o->backend, "auto, cpu or cuda")->capture_default_str();
  // Not --routing: that option (ProblemOptions) names the routing method.
  cmd->add_option("--popularity", o->routing,
                  "Expert popularity of the routing: uniform or zipf (~ rank^-s), random; or balanced (token t to experts t*k .. t*k+k-1 mod E: "
                  "every expert T*k/E rows)")
      ->capture_default_str();
  cmd->add_option("--zipf-s", o->zipf_s, "The Zipf exponent s of --popularity zipf")->capture_default_str();
  cmd->add_option("--iters", o->iters, "Calls (graph replays) per timed sample (0: 20 on a GPU, 1 on the CPU)");
  cmd->add_option("--reps", o->reps, "Timed samples per measurement set (0: 10 on a GPU, 3 on the CPU)");
  cmd->add_option("--sets", o->sets, "Measurement sets, each with fresh inputs and routing (0: 3 on a GPU, 1 on the CPU)");
  cmd->add_option("--warmup", o->warmup, "Untimed calls per set (-1: 3 on a GPU, 1 on the CPU)");
  cmd->add_flag("--stages", o->stages, "Also time each step of the plan on its own");
  cmd->add_flag("--baseline,!--no-baseline", o->baseline, "Time the cuBLAS baseline (one GEMM per expert) too (GPU; default on)");
  cmd->add_flag("--batched-reference", o->batched_reference,
                "Also time the layer's two GEMMs alone as cuBLAS strided-batched GEMMs, the routed rows spread evenly over the "
                "experts (GPU, unquantized): the part of the gap a dense GEMM library closes");
  cmd->add_flag("--biases", o->biases, "Give the experts random gemm1 and gemm2 biases (counted in the floor's bytes)");
  cmd->add_flag("--refcheck", o->refcheck, "Check the output against the CPU reference (exit code 3 beyond the limit)");
  cmd->add_option("--refcheck-tokens", o->refcheck_tokens, "Tokens checked by --refcheck")->capture_default_str();
  cmd->add_option("--csv", o->csv, "Write the rows as CSV to this file");
  cmd->add_option("--json", o->json, "Write the report as JSON to this file");
  cmd->add_option("--plot", o->plot, "Write an SVG plot (time versus tokens per preset, floor and methods) to this file");
  cmd->add_option("--seed", o->seed, "Random data seed")->capture_default_str();
  cmd->add_option("--choice", o->choice,
                  "Knob values for every plan, NAME=VALUE;... (`moekit explain` lists the knobs; a refused value stops the run)");
  cmd->add_option("--ab", o->ab,
                  "Plans to time side by side in this process, CHOICE|CHOICE|... (2 to 8; each as --choice, on top of it; an empty one is "
                  "the heuristic's): in turns within each set on the same weights, inputs and routing, each reported against the first "
                  "(on a GPU each holds its own weight copies)");
  return [cmd, o]() {
    if (!cmd->parsed() || !cmd->get_subcommands().empty()) return -1;
    return run(*o);
  };
}

}  // namespace moekit::cli
