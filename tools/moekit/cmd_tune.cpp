// `moekit tune` (and the hidden `moekit tune-worker` it runs for each candidate): docs/tune.md.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "commands.h"
#include "moekit/tuning.h"
#include "problem_options.h"
#include "tune/tuner.h"

namespace moekit::cli {
namespace {

struct TuneCliOptions {
  std::string input, output, journal, run_config, reference_cache, min_improvement = "3%", backend = "auto";
  bool compare = false, update_improved = false, keep_ties = false, no_progress = false;
  double timeout_s = 120;
  int iters = 5, warmup = 1, top = 3, jobs = 0;
  uint64_t seed = 1;
};

struct WorkerCliOptions {
  std::string problem, choice, table, reference_cache, backend = "auto";
  int64_t tokens = 1;
  uint64_t seed = 1;
  int iters = 5, warmup = 1;
  bool no_steps = false;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

// The shapes CSV: a header naming columns (tokens, and preset and/or experts, top_k, hidden,
// intermediate; optional activation, dtype, quant, routing, format, gate_up, local_experts, local_begin,
// group_size, n_group, topk_group, renormalize, scaling), then one shape per line; `tokens` may list
// several counts separated by ';'. Lines starting with '#' are comments.
Result<std::vector<tune::TuneShape>> read_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(fmt::format("{}: cannot open it", path));
  std::string line;
  std::vector<std::string> cols;
  std::vector<tune::TuneShape> shapes;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    const auto f = split(line, ',');
    if (cols.empty()) {
      cols = f;
      continue;
    }
    auto bad = [&](const std::string& why) { return Status::InvalidArgument(fmt::format("{}:{}: {}", path, n, why)); };
    if (f.size() > cols.size()) return bad(fmt::format("{} fields, the header has {}", f.size(), cols.size()));
    ProblemOptions po;
    std::vector<int64_t> tokens;
    try {
      for (size_t i = 0; i < f.size(); ++i) {
        const std::string& c = cols[i];
        const std::string& v = f[i];
        if (v.empty()) continue;
        if (c == "tokens") for (const auto& t : split(v, ';')) tokens.push_back(std::stoll(t));
        else if (c == "preset") po.preset = v;
        else if (c == "experts") po.experts = std::stoi(v);
        else if (c == "top_k") po.top_k = std::stoi(v);
        else if (c == "hidden") po.hidden = std::stoi(v);
        else if (c == "intermediate") po.intermediate = std::stoi(v);
        else if (c == "local_experts") po.local_experts = std::stoi(v);
        else if (c == "local_begin") po.local_begin = std::stoi(v);
        else if (c == "group_size") po.group_size = std::stoi(v);
        else if (c == "n_group") po.n_group = std::stoi(v);
        else if (c == "topk_group") po.topk_group = std::stoi(v);
        else if (c == "scaling") po.scaling = std::stof(v);
        else if (c == "renormalize") po.renormalize = v == "true" || v == "1";
        else if (c == "activation") po.activation = v;
        else if (c == "dtype") po.dtype = v;
        else if (c == "quant") po.quant = v;
        else if (c == "routing") po.routing = v;
        else if (c == "format") po.format = v;
        else if (c == "gate_up") po.gate_up = v;
        else return bad(fmt::format("unknown column '{}'", c));
      }
    } catch (const std::exception&) {
      return bad("a number column holds something else");
    }
    auto p = po.resolve();
    if (!p.ok()) return bad(p.status().message());
    if (tokens.empty()) return bad("no tokens");
    for (int64_t t : tokens) shapes.push_back({*p, t});
  }
  return shapes;
}

Result<double> parse_fraction(const std::string& s) {
  try {
    const bool pct = s.ends_with("%");
    const double v = std::stod(pct ? s.substr(0, s.size() - 1) : s);
    return pct ? v / 100 : v;
  } catch (const std::exception&) {
    return Status::InvalidArgument(fmt::format("--min-improvement '{}' is not a number or a percentage", s));
  }
}

std::string self_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "moekit";
}

// "shape i/N  <problem>": the layout is part of the problem key, so it is said where it is not the
// default.
std::string shape_heading(const tune::TuneShape& shape, size_t i, size_t n) {
  const bool interleaved = shape.problem.gate_up_layout == GateUpLayout::kInterleaved;
  return fmt::format("shape {}/{}  {}{}", i + 1, n, problem_summary(shape.problem, shape.tokens), interleaved ? " gate_up=interleaved" : "");
}

void print_report(const tune::ShapeReport& r, size_t i, size_t n) {
  fmt::print("{}\n", shape_heading(r.shape, i, n));
  if (r.tuned) {
    const double h = r.row.heuristic_us;
    fmt::print("  heuristic {:.1f} us   tuned {:.1f} us ({:.2f}x)   {} {:.1e}   choice {}\n", h, r.row.time_us, r.row.time_us > 0 ? h / r.row.time_us : 0.0,
               r.row.metric, r.row.error, r.row.choice.to_string());
    fmt::print("  end to end {:.3f} TFLOP/s {:.1f} GB/s (active experts only)\n", r.winner.tflops, r.winner.gbps);
    // How the times above were taken: the bench's protocol and input sets (docs/tune.md).
    if (!r.winner.timing.empty()) fmt::print("  timed: {} (each step alone: the first set)\n", r.winner.timing);
    for (const auto& s : r.winner.steps)
      fmt::print("    {:<24} {:<20} {:9.1f} us {:8.3f} TFLOP/s {:8.1f} GB/s\n", s.kernel, s.stages, s.us, s.tflops, s.gbps);
  }
  fmt::print("  table: {}\n", r.update);
  if (r.failed > 0) {
    fmt::print("  failed {} of {} candidates (never selected):\n", r.failed, r.candidates);
    for (const auto& f : r.failures) fmt::print("    {}\n", f);
  }
}

// One shape of --run-config: its time with the table and (with --compare) the heuristic's.
void print_production(const tune::TuneShape& shape, size_t i, size_t n, const std::string& table, const tune::WorkerResult& a,
                      const tune::WorkerResult* heuristic) {
  fmt::print("{}\n  with {}: {}\n", shape_heading(shape, i, n), table,
             a.ok ? fmt::format("{:.1f} us ({})", a.median_us, a.tuning) : "FAILED: " + a.failure);
  if (heuristic != nullptr) {
    const auto& b = *heuristic;
    fmt::print("  heuristic: {}{}\n", b.ok ? fmt::format("{:.1f} us", b.median_us) : "FAILED: " + b.failure,
               a.ok && b.ok && a.median_us > 0 ? fmt::format("   speedup {:.2f}x", b.median_us / a.median_us) : "");
  }
  std::fflush(stdout);  // a run cut short (a timeout, a lost machine) keeps the shapes it printed
}

// Shapes for --run-config without -i: every row of the table at the token count it was tuned at.
Result<std::vector<tune::TuneShape>> shapes_of_table(const std::string& path) {
  auto t = TuningTable::load(path);
  if (!t.ok()) return t.status();
  std::vector<tune::TuneShape> shapes;
  for (const auto& row : t->rows) {
    auto p = parse_problem_key(row.problem);
    if (!p.ok()) return p.status();
    shapes.push_back({*p, row.tokens});
  }
  return shapes;
}

// --reference-cache, else OUTPUT.refs beside the table and its journal. --run-config alone has no
// default: its table may sit in a source tree, and each shape runs only once or twice there.
std::string reference_cache_dir(const TuneCliOptions& c) {
  if (!c.reference_cache.empty()) return c.reference_cache;
  return c.output.empty() ? "" : c.output + ".refs";
}

int tune(const TuneCliOptions& c) {
  auto backend = parse_backend_choice(c.backend);
  if (!backend.ok()) return fail(backend.status());
  auto min_imp = parse_fraction(c.min_improvement);
  if (!min_imp.ok()) return fail(min_imp.status());
  if (c.input.empty() && c.run_config.empty()) return fail(Status::InvalidArgument("give -i SHAPES.csv (and -o TUNED.csv), or --run-config TUNED.csv"));
  tune::TuneOptions o{.worker_program = self_path(), .output = c.output, .journal = c.journal.empty() ? c.output + ".journal" : c.journal,
                      .backend = *backend, .timeout_s = c.timeout_s, .iters = c.iters, .warmup = c.warmup, .top = c.top, .seed = c.seed,
                      .update_improved = c.update_improved, .min_improvement = *min_imp, .keep_ties = c.keep_ties, .progress = !c.no_progress,
                      .jobs = c.jobs, .reference_cache = reference_cache_dir(c)};
  auto shapes = c.input.empty() ? shapes_of_table(c.run_config) : read_shapes(c.input);
  if (!shapes.ok()) return fail(shapes.status());
  std::string table = c.run_config;
  if (c.run_config.empty()) {
    if (c.output.empty()) return fail(Status::InvalidArgument("-o TUNED.csv is required to tune"));
    auto reports = tune::tune_shapes(*shapes, o);
    if (!reports.ok()) return fail(reports.status());
    for (size_t i = 0; i < reports->size(); ++i) print_report((*reports)[i], i, reports->size());
    fmt::print("wrote {} (journal {}; reference cache {})\n", c.output, o.journal, o.reference_cache);
    if (!c.compare) return 0;
    table = c.output;
  }
  // The production path with the table (and, with --compare, without it right after), one shape at
  // a time and printed as it is measured: the two runs of a shape are close in time, and a run cut
  // short keeps what it printed. The workers' own progress bars would show 1/1 for each shape.
  tune::TuneOptions each = o;
  each.progress = false;
  for (size_t i = 0; i < shapes->size(); ++i) {
    const std::vector<tune::TuneShape> one{(*shapes)[i]};
    auto after = tune::run_production(one, table, each);
    if (!after.ok()) return fail(after.status());
    Result<std::vector<tune::Measured>> before = std::vector<tune::Measured>{};
    if (c.compare) before = tune::run_production(one, "", each);
    if (!before.ok()) return fail(before.status());
    print_production(one[0], i, shapes->size(), table, after->front().result, c.compare ? &before->front().result : nullptr);
  }
  return 0;
}

int tune_worker(const WorkerCliOptions& c) {
  auto problem = parse_problem_key(c.problem);
  if (!problem.ok()) return fail(problem.status());
  auto choice = KernelChoice::parse(c.choice);
  if (!choice.ok()) return fail(choice.status());
  auto backend = parse_backend_choice(c.backend);
  if (!backend.ok()) return fail(backend.status());
  auto r = tune::run_candidate({.problem = *problem, .tokens = c.tokens, .choice = *choice, .table = c.table, .backend = *backend,
                                .seed = c.seed, .warmup = c.warmup, .iters = c.iters, .per_step = !c.no_steps,
                                .reference_cache = c.reference_cache});
  if (!r.ok()) return fail(r.status());
  fmt::print("{}\n", tune::to_json_line(*r));
  return 0;
}

}  // namespace

CommandAction add_tune_command(CLI::App& app) {
  auto o = std::make_shared<TuneCliOptions>();
  CLI::App* cmd = app.add_subcommand("tune", "Tune kernel choices per shape and write a tuned table (docs/tune.md)");
  cmd->add_option("-i,--input", o->input, "shapes CSV (columns: tokens, preset or experts/top_k/hidden/intermediate, ...)");
  cmd->add_option("-o,--output", o->output, "the tuned table to write (rows of other shapes are kept)");
  cmd->add_option("--journal", o->journal, "JSON-lines journal to resume from (default: OUTPUT.journal)");
  cmd->add_option("--run-config", o->run_config, "benchmark the production path with this tuned table instead of tuning");
  cmd->add_flag("--compare", o->compare, "also run the heuristic (no table) and print the speedup");
  cmd->add_flag("--update-improved", o->update_improved,
                "replace a row only when the new one is better by more than --min-improvement and the noise than the old row's choice timed in the same run");
  cmd->add_option("--min-improvement", o->min_improvement, "with --update-improved: e.g. 3% or 0.03");
  cmd->add_flag("--keep-ties", o->keep_ties,
                "write a row even where the best choice does not beat the heuristic by more than the noise (by default such a shape gets no row)");
  cmd->add_option("--timeout", o->timeout_s, "seconds a worker may run before it counts as hung");
  cmd->add_option("--iters", o->iters, "timed samples per candidate (CUDA: each the mean of 20 graph replays)");
  cmd->add_option("--warmup", o->warmup, "untimed runs before them (CUDA: rounds over the weight copies)");
  cmd->add_option("--top", o->top, "end-to-end candidates besides the heuristic");
  cmd->add_option("--seed", o->seed, "seed of the random weights and inputs, and the `moekit bench --seed` whose input sets time the candidates");
  cmd->add_option("--backend", o->backend, "auto, cpu, cuda");
  cmd->add_flag("--no-progress", o->no_progress, "no progress bar");
  cmd->add_option("--jobs", o->jobs, "workers at a time (default: one per GPU with the CUDA backend, one on the CPU)");
  cmd->add_option("--reference-cache", o->reference_cache,
                  "directory of the workers' cached reference outputs (default: OUTPUT.refs; delete it to recompute)");

  auto w = std::make_shared<WorkerCliOptions>();
  CLI::App* wc = app.add_subcommand("tune-worker", "one candidate of `moekit tune` (internal)");
  wc->group("");  // hidden from the usage
  wc->add_option("--problem", w->problem, "problem key")->required();
  wc->add_option("--tokens,-T", w->tokens, "token count");
  wc->add_option("--choice", w->choice, "knob values NAME=VALUE;...");
  wc->add_option("--table", w->table, "tuned table");
  wc->add_option("--backend", w->backend, "auto, cpu, cuda");
  wc->add_option("--seed", w->seed, "seed");
  wc->add_option("--iters", w->iters, "timed samples (CUDA: each the mean of 20 graph replays)");
  wc->add_option("--warmup", w->warmup, "untimed runs (CUDA: rounds over the weight copies)");
  wc->add_flag("--no-steps", w->no_steps, "do not time the steps alone");
  wc->add_option("--reference-cache", w->reference_cache, "directory of cached reference outputs");
  return [cmd, o, wc, w]() { return cmd->parsed() ? tune(*o) : wc->parsed() ? tune_worker(*w) : -1; };
}

}  // namespace moekit::cli
