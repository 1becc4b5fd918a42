#include "tune/worker.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <utility>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/floor.h"
#include "bench/routing_gen.h"
#include "cuda/bench_timing.h"
#include "moekit/cpu_reference.h"
#include "moekit/layer_copy.h"
#include "moekit/random_layer.h"
#include "moekit/runner.h"
#include "moekit/tuning.h"
#include "tune/metrics.h"
#include "tune/output_check.h"
#include "tune/reference_cache.h"

namespace moekit::tune {
namespace {

// Replays of the layer (or of one step) a CUDA sample averages, as `moekit bench` does by default
// (--iters 20): one replay's time would carry the launch of the graph, not the layer's steady pace.
constexpr int kCudaReplaysPerSample = 20;

// Times `fn(g, stream)` for g = 0 .. graphs - 1 in turn (a weight copy and an input set each):
// `iters` samples after `warmup` untimed rounds, in microseconds. The CUDA backend is timed as
// `moekit bench` times it (cuda::GraphReplays): one CUDA graph per g, replayed back to back in
// turn, each sample the mean of kCudaReplaysPerSample replays, so a tuned row wins under the
// protocol that later measures it (until 2026-11-29 the worker timed each run alone after a 256 MB
// L2 flush: docs/perf-notes.md step 40). The CPU: a steady clock, one run a sample.
Result<std::vector<double>> time_runs(BackendKind backend, int graphs, int warmup, int iters,
                                      const std::function<Status(int g, Stream)>& fn) {
  if (backend == BackendKind::kCuda) {
    auto g = cuda::GraphReplays::capture(graphs, [&](int c, void* s) { return fn(c, Stream{s}); });
    if (!g.ok()) return g.status();
    return g->time(warmup, kCudaReplaysPerSample, iters);
  }
  std::vector<double> us;
  for (int i = 0; i < warmup + iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    MOEKIT_RETURN_IF_ERROR(fn(i % graphs, Stream{}));
    const double t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (i >= warmup) us.push_back(t);
  }
  return us;
}

// The input sets a candidate is timed on. The layer's time depends on which experts its routing
// hits and how unevenly (Mixtral T=8: 7 or 8 experts of 8; DeepSeek-V3 T=256: 82 experts in the
// random layer's routing, 102 in the bench's), so a plan tuned on one draw can lose on another:
// step 40 of docs/perf-notes.md found the tuner's rows losing in the bench for that reason, not the
// timing. The worker therefore times on the inputs of the first kTimingDraws measurement sets of
// `moekit bench --seed SEED` (bench::bench_set_inputs: hidden states, DeepSeek-V3's correction
// bias and the router logits, uniform popularity), rotating over them. Validation keeps the random
// layer's own inputs (the cached reference is for those). Inputs that arrive routed (pre-routed,
// masked, indexed) keep their own routing: the bench does not draw those.
constexpr int kTimingDraws = 4;

struct TimingDraws {
  std::vector<MoeInputs> inputs;  // on the runner's device
  std::vector<RandomLayer> host;  // the sets' host tensors
  std::vector<LayerCopy> device;  // their device copies (CUDA)
  bool from_bench = false;
};

Result<TimingDraws> timing_draws(const MoeProblem& p, const WorkerRequest& rq, Device dev, const MoeInputs& on_dev) {
  TimingDraws d;
  if (p.input_format != InputFormat::kStandard) {
    d.inputs.push_back(on_dev);
    return d;
  }
  d.from_bench = true;
  for (int set = 0; set < kTimingDraws; ++set) {
    auto layer = bench::bench_set_inputs(p, rq.tokens, rq.seed, set, {.seed = rq.seed});
    if (!layer.ok()) return layer.status();
    MoeInputs in = layer->inputs();
    if (dev.is_cuda()) {
      auto c = copy_layer(dev, {}, in, {});
      if (!c.ok()) return c.status();
      in = c->inputs;
      d.device.push_back(std::move(c).value());
    }
    d.host.push_back(std::move(layer).value());
    d.inputs.push_back(in);
  }
  return d;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

RoutingStats stats_of(const MoeProblem& p, const RandomLayer& L, const MoeInputs& in, const TensorView& ids, int64_t plan_tokens) {
  switch (p.input_format) {
    case InputFormat::kMasked: {
      std::vector<int64_t> counts;
      for (int64_t e = 0; e < L.masked_m.numel(); ++e) counts.push_back(L.masked_m.data_as<const int32_t>()[e]);
      return routing_stats_from_counts(p, plan_tokens, plan_tokens, counts);
    }
    case InputFormat::kIndexed: {
      std::vector<int64_t> counts;
      const int32_t* off = L.expert_offsets.data_as<const int32_t>();  // i32, as MoeInputs says
      for (int64_t e = 0; e + 1 < L.expert_offsets.numel(); ++e) counts.push_back(off[e + 1] - off[e]);
      return routing_stats_from_counts(p, plan_tokens, in.hidden.size(0), counts);
    }
    default:
      return routing_stats(p, plan_tokens, std::span(ids.data_as<const int32_t>(), static_cast<size_t>(ids.numel())));
  }
}

}  // namespace

void apply_test_fault(const std::string& choice, bool* poison_output) {
  const char* fault = std::getenv("MOEKIT_TUNE_TEST_FAULT");
  if (fault == nullptr) return;
  const std::string f(fault);
  const size_t colon = f.find(':');
  if (colon == std::string::npos || choice.find(f.substr(colon + 1)) == std::string::npos) return;
  const std::string kind = f.substr(0, colon);
  if (kind == "crash") std::raise(SIGSEGV);
  if (kind == "hang")
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (kind == "nan") *poison_output = true;
}

RandomLayerOptions worker_layer_options(int64_t tokens, uint64_t seed) { return {.num_tokens = tokens, .seed = seed}; }

// Inputs and outputs are made on the host (small). The reference comes from the cache when it holds
// it; then the CUDA backend's weights (quant none) are generated in GPU memory, with no host copy
// and no transfer (the cost of a worker on a 22.5 GB preset). Otherwise the weights are made on the
// host, where cpu::run_reference reads them, and the CUDA backend runs on device copies of the same
// bytes.
Result<WorkerResult> run_candidate(const WorkerRequest& rq) {
  const MoeProblem& p = rq.problem;
  // Assigned, not designated-initialized: GCC 12 at -O3 warns (-Wmaybe-uninitialized, a false
  // positive) on the members a designated initializer skips.
  RunnerOptions ro;
  ro.backend = rq.backend;
  ro.choice = rq.choice;
  ro.read_env_table = false;
  if (!rq.table.empty()) {
    auto t = load_shared_table(rq.table);
    if (!t.ok()) return t.status();
    ro.tuning_table = *t;
  }
  auto runner = MoeRunner::create(p, ro);
  if (!runner.ok()) return runner.status();
  const RandomLayerOptions layer_options = worker_layer_options(rq.tokens, rq.seed);
  RandomLayerOptions lo = layer_options;
  lo.inputs_only = true;
  auto layer = make_random_layer(p, lo);
  if (!layer.ok()) return layer.status();
  const MoeInputs in = layer->inputs();
  const Device dev = runner->device().backend == BackendKind::kCuda ? Device::cuda() : Device::cpu();

  // The reference, when the cache has it (NaN-poisoned first, as the candidate's output).
  auto ref = Tensor::empty(layer->out.dtype(), layer->out.shape());
  if (!ref.ok()) return ref.status();
  poison_nan(ref->view());
  std::optional<ReferenceCache> cache;
  const ReferenceKey key = reference_key(p, layer_options);
  CacheLookup lookup;
  if (!rq.reference_cache.empty()) {
    cache.emplace(rq.reference_cache);
    auto l = cache->load(key, ref->view());
    if (!l.ok()) return l.status();
    lookup = std::move(l).value();
  }

  RandomLayerOptions wo = layer_options;
  wo.weights_only = true;
  if (lookup.hit && dev.is_cuda() && p.quant == QuantScheme::kNone) wo.weights_device = dev;
  auto weight_layer = make_random_layer(p, wo);
  if (!weight_layer.ok()) return weight_layer.status();
  const MoeWeights& weights = weight_layer->weights;
  LayerCopy on_dev{weights, in, {}, {}};
  if (dev.is_cuda()) {
    auto c = copy_layer(dev, weights, in, {});  // device-made weights are shared, not copied
    if (!c.ok()) return c.status();
    on_dev = std::move(c).value();
  }
  auto prepared = runner->prepare_weights(on_dev.weights);
  if (!prepared.ok()) return prepared.status();
  // The copies the timed replays rotate through: copy 0 is the one validated, the others new device
  // copies of it, as many as `moekit bench` would make (cuda::rotated_weight_copies).
  std::vector<LayerCopy> copy_storage;
  std::vector<PreparedWeights> copies;
  copies.push_back(std::move(prepared).value());
  if (dev.is_cuda()) {
    const auto [per_call, per_copy] = bench::rotation_bytes(p, bench::weight_bytes(on_dev.weights, p.local_experts()));
    auto n = cuda::rotated_weight_copies(per_call, per_copy);
    if (!n.ok()) return n.status();
    for (int c = 1; c < *n; ++c) {
      auto w = copy_weights(dev, on_dev.weights);
      if (!w.ok()) return w.status();
      auto pw = runner->prepare_weights(w->weights);
      if (!pw.ok()) return pw.status();
      copy_storage.push_back(std::move(w).value());
      copies.push_back(std::move(pw).value());
    }
  }
  auto ws_bytes = runner->workspace_size(on_dev.inputs);
  if (!ws_bytes.ok()) return ws_bytes.status();
  auto ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(*ws_bytes)}, dev);
  if (!ws.ok()) return ws.status();
  const std::span<std::byte> workspace(static_cast<std::byte*>(ws->data()), *ws_bytes);
  const MoePlan plan = runner->plan(in, WeightTraits::of(weights));
  if (!plan.runnable) return Status::Unsupported(fmt::format("not runnable: {}", fmt::join(plan.notes, "; ")));

  MoeOutputs outputs = layer->outputs();
  Tensor ids;
  if (p.input_format == InputFormat::kStandard) {
    auto t = Tensor::empty(DType::kI32, {in.hidden.size(0), int64_t{p.top_k}});
    if (!t.ok()) return t.status();
    ids = std::move(t).value();
    outputs.topk_ids = ids.view();
  }
  MoeOutputs run_out = outputs;  // what the runner writes: device copies on the GPU
  if (dev.is_cuda()) {
    auto c = copy_layer(dev, {}, {}, outputs);
    if (!c.ok()) return c.status();
    run_out = c->outputs;
    for (auto& t : c->storage) on_dev.storage.push_back(std::move(t));
  }
  WorkerResult r;
  r.tuning = plan.tuning;
  r.weights = wo.weights_device.is_cuda() ? "device" : "host";
  r.plan = plan_kernels(plan);

  // Validation: both outputs poisoned, the candidate once, the reference once.
  bool poison_after = false;
  apply_test_fault(rq.choice.to_string(), &poison_after);
  poison_nan(outputs.out);
  if (dev.is_cuda()) MOEKIT_RETURN_IF_ERROR(copy_tensor(run_out.out, outputs.out));
  Status ran = runner->run(copies[0], on_dev.inputs, run_out, workspace);
  if (ran.ok() && dev.is_cuda()) {
    ran = copy_tensor(outputs.out, run_out.out);
    if (ran.ok() && ids.data() != nullptr) ran = copy_tensor(ids.view(), run_out.topk_ids);
  }
  if (!ran.ok()) {
    r.failure = fmt::format("run: {}", ran.to_string());
    return r;
  }
  if (poison_after) poison_nan(outputs.out);
  if (lookup.hit) {
    r.reference = "cache";
    r.reference_note = lookup.path;
  } else {
    MoeOutputs ro_out;
    ro_out.out = ref->view();
    MOEKIT_RETURN_IF_ERROR(cpu::run_reference(p, weights, in, ro_out).with_context("reference"));
    r.reference = "computed";
    if (cache) {
      // A cache that cannot be written costs this worker nothing: the next one computes again.
      auto stored = cache->store(key, ref->view());
      r.reference_note = fmt::format("{}: {}; {}", lookup.path, lookup.why,
                                     stored.ok() ? "stored" : "not stored: " + stored.status().to_string());
    }
  }
  const Acceptance acc = accept_output(p, compare_outputs(outputs.out, ref->view()));
  r.metric = acc.metric;
  r.error = acc.value;
  if (!acc.passed) {
    r.failure = fmt::format("validation: {}", acc.why);
    return r;
  }

  // Timing on the bench's sets (timing_draws), the whole layer rotating over the sets and the weight
  // copies; then each step alone on set 0 (its routing maps must be in the workspace).
  auto draws = timing_draws(p, rq, dev, on_dev.inputs);
  if (!draws.ok()) return draws.status();
  const std::vector<MoeInputs>& draw_inputs = draws->inputs;
  const BackendKind backend = runner->device().backend;
  const int n_copies = static_cast<int>(copies.size());
  const int n_draws = static_cast<int>(draw_inputs.size());
  const std::string routing = draws->from_bench
                                  ? fmt::format("the inputs of {} set{} of `moekit bench --seed {}`", n_draws, n_draws == 1 ? "" : "s", rq.seed)
                                  : std::string("the layer's own inputs");
  r.timing = backend == BackendKind::kCuda
                 ? fmt::format("CUDA graph replays, {} weight cop{} rotated, mean of {} replays a sample; {}", n_copies,
                               n_copies == 1 ? "y" : "ies", kCudaReplaysPerSample, routing)
                 : fmt::format("host clock, one run a sample; {}", routing);
  auto times = time_runs(backend, n_copies * n_draws, rq.warmup, rq.iters, [&](int g, Stream s) {
    const auto copy = static_cast<size_t>(g % n_copies), set = static_cast<size_t>(g / n_copies);
    return runner->run(copies[copy], draw_inputs[set], run_out, workspace, s);
  });
  if (!times.ok()) return times.status();
  r.median_us = median(*times);
  r.min_us = *std::min_element(times->begin(), times->end());
  r.max_us = *std::max_element(times->begin(), times->end());
  // The figures' work: each draw's routing (the layer run once on it, the last run on draw 0), averaged.
  Work total;
  RoutingStats stats0;
  for (int d = n_draws - 1; d >= 0; --d) {
    MOEKIT_RETURN_IF_ERROR(runner->run(copies[0], draw_inputs[static_cast<size_t>(d)], run_out, workspace));
    MOEKIT_RETURN_IF_ERROR(synchronize(dev));
    if (dev.is_cuda() && ids.data() != nullptr) MOEKIT_RETURN_IF_ERROR(copy_tensor(ids.view(), run_out.topk_ids));
    const RoutingStats st = stats_of(p, *layer, in, p.input_format == InputFormat::kStandard ? ids.view() : in.topk_ids, plan.num_tokens);
    const Work w = step_work(p, Stage::kRoute, Stage::kFinalize, st);
    total.flops += w.flops / n_draws;
    total.bytes += w.bytes / n_draws;
    if (d == 0) stats0 = st;
  }
  r.tflops = tflops(total, r.median_us);
  r.gbps = gbps(total, r.median_us);
  if (rq.per_step) {
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const PlannedStep& st = plan.steps[i];
      auto t = time_runs(backend, n_copies, rq.warmup, rq.iters, [&](int c, Stream s) {
        return runner->run_step(copies[static_cast<size_t>(c)], draw_inputs[0], run_out, workspace, s, i);
      });
      if (!t.ok()) return t.status();
      const Work w = step_work(p, st.first, st.last, stats0);
      const double us = median(*t);
      const std::string range = st.first == st.last ? std::string(stage_name(st.first))
                                                     : fmt::format("{}..{}", stage_name(st.first), stage_name(st.last));
      r.steps.push_back({st.kernel, range, static_cast<int>(st.first), static_cast<int>(st.last), us, tflops(w, us), gbps(w, us)});
    }
  }
  r.ok = true;
  return r;
}

std::string to_json_line(const WorkerResult& r) {
  nlohmann::ordered_json j{{"ok", r.ok},         {"failure", r.failure}, {"metric", r.metric}, {"error", r.error},
                           {"median_us", r.median_us}, {"min_us", r.min_us}, {"max_us", r.max_us}, {"tflops", r.tflops},
                           {"gbps", r.gbps},     {"tuning", r.tuning},   {"plan", r.plan},     {"reference", r.reference},
                           {"reference_note", r.reference_note}, {"weights", r.weights},
                           {"timing", r.timing}};
  auto& steps = j["steps"] = nlohmann::ordered_json::array();
  for (const auto& s : r.steps)
    steps.push_back({{"kernel", s.kernel}, {"stages", s.stages}, {"first", s.first}, {"last", s.last}, {"us", s.us}, {"tflops", s.tflops}, {"gbps", s.gbps}});
  return j.dump();
}

Result<WorkerResult> parse_worker_json(const std::string& line) {
  try {
    const auto j = nlohmann::json::parse(line);
    WorkerResult r;
    r.ok = j.at("ok");
    r.failure = j.at("failure");
    r.metric = j.at("metric");
    r.error = j.at("error");
    r.median_us = j.at("median_us");
    r.min_us = j.at("min_us");
    r.max_us = j.at("max_us");
    r.tflops = j.at("tflops");
    r.gbps = j.at("gbps");
    r.tuning = j.at("tuning");
    r.plan = j.at("plan");
    // Absent from journals written before the reference cache: those results still count.
    r.reference = j.value("reference", "");
    r.reference_note = j.value("reference_note", "");
    r.weights = j.value("weights", "");
    r.timing = j.value("timing", "");  // absent before 2026-11-29: the L2-flushed single runs
    for (const auto& s : j.at("steps"))
      r.steps.push_back({s.at("kernel"), s.at("stages"), s.at("first"), s.at("last"), s.at("us"), s.at("tflops"), s.at("gbps")});
    return r;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("worker output is not a result line ({}): {}", e.what(), line.substr(0, 200)));
  }
}

}  // namespace moekit::tune
