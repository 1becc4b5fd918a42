// The GPU's layer timing for `moekit bench`: MoeRunner::run captured in a CUDA graph per weight copy
// and replayed back to back between two events, rotating among the copies so that the bytes one
// call reads come from HBM, not from the L2 left by the previous call (cuda::GraphReplays, which
// the tuner's worker times with too). --stages captures each step of the plan alone (run_step); the
// cuBLAS baseline (baseline.h) is captured and replayed the same way.
#include <cuda_runtime_api.h>

#include <functional>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "bench/cuda/baseline.h"
#include "bench/layer_bench.h"
#include "cuda/bench_timing.h"
#include "cuda/cuda_check.h"
#include "moekit/layer_copy.h"

namespace moekit::bench {
namespace {

// NaN in every float dtype (0xFF bytes): a row the layer leaves unwritten shows in --refcheck.
// cudaMemset runs on the legacy stream and may return before it is done; the layer's graphs replay
// on a non-blocking stream, which does not wait for it, so wait here (as memcpy_sync does).
Status poison(const TensorView& t) {
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemset(t.data(), 0xFF, static_cast<size_t>(t.storage_bytes())));
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cudaStreamLegacy));
  return Status::Ok();
}

class CudaLayerBench final : public LayerBench {
 public:
  struct Copy {
    std::vector<Tensor> storage;
    MoeWeights weights;
    std::optional<PreparedWeights> prepared;
  };

  CudaLayerBench(const MoeRunner& runner, std::vector<Copy> copies, std::unique_ptr<CublasBaseline> baseline, std::string note)
      : runner_(runner), copies_(std::move(copies)), baseline_(std::move(baseline)), note_(std::move(note)) {}

  Result<SetTiming> measure(const MoeInputs& host_in, const TimingOptions& o) override {
    const MoeProblem& p = runner_.problem();
    const int64_t T = host_in.hidden.size(0), K = p.top_k;
    auto dev_in = copy_layer(Device::cuda(), {}, host_in, {});  // the set's inputs on the device
    if (!dev_in.ok()) return dev_in.status();
    const MoeInputs& in = dev_in->inputs;
    auto out = Tensor::empty(p.activation_dtype, {T, int64_t{p.hidden}}, Device::cuda());
    auto ids = Tensor::empty(DType::kI32, {T, K}, Device::cuda());
    auto wts = Tensor::empty(DType::kF32, {T, K}, Device::cuda());
    auto bytes = runner_.workspace_size(in);
    if (!out.ok() || !ids.ok() || !wts.ok() || !bytes.ok()) return Status::OutOfMemory("bench: device outputs");
    auto ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(std::max<size_t>(*bytes, 256))}, Device::cuda());
    if (!ws.ok()) return ws.status();
    out_ = std::move(*out);
    MOEKIT_RETURN_IF_ERROR(poison(out_.view()));
    MoeOutputs outs;
    outs.out = out_.view();
    outs.topk_ids = ids->view();
    outs.topk_weights = wts->view();
    const std::span<std::byte> workspace(static_cast<std::byte*>(ws->data()), *bytes);

    SetTiming s;
    // One graph per weight copy of what `body` enqueues; each set of graphs is timed alone.
    auto graphs_of = [&](const std::function<Status(const Copy&, cudaStream_t)>& body) {
      return cuda::GraphReplays::capture(static_cast<int>(copies_.size()), [&](int c, void* st) {
        return body(copies_[static_cast<size_t>(c)], static_cast<cudaStream_t>(st));
      });
    };
    auto time_replays = [&](const cuda::GraphReplays& g) { return g.time(o.warmup, o.iters, o.reps); };
    auto layer = graphs_of([&](const Copy& c, cudaStream_t st) { return runner_.run(*c.prepared, in, outs, workspace, Stream{st}); });
    if (!layer.ok()) return layer.status();
    auto us = time_replays(*layer);
    if (!us.ok()) return us.status();
    s.layer_us = std::move(us).value();

    // The routing decision of this set, for the floor and the baseline.
    s.topk_ids.resize(static_cast<size_t>(T * K));
    std::vector<float> weights(static_cast<size_t>(T * K));
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemcpy(s.topk_ids.data(), ids->data(), s.topk_ids.size() * 4, cudaMemcpyDeviceToHost));
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemcpy(weights.data(), wts->data(), weights.size() * 4, cudaMemcpyDeviceToHost));

    const MoePlan plan = runner_.plan(T, WeightTraits::of(copies_.front().weights));
    if (o.stages) {
      for (size_t k = 0; k < plan.steps.size(); ++k) {
        auto g = graphs_of([&](const Copy& c, cudaStream_t st) { return runner_.run_step(*c.prepared, in, outs, workspace, Stream{st}, k); });
        if (!g.ok()) return g.status();
        auto t = time_replays(*g);
        if (!t.ok()) return t.status();
        s.step_names.push_back(plan.steps[k].kernel);
        s.step_us.push_back(std::move(t).value());
      }
    }
    if (o.baseline && baseline_) {
      // The obvious implementation routes with the same first step when the plan has one that only
      // routes; its permutation comes from this set's routing, read to the host above.
      const bool route_step = !plan.steps.empty() && plan.steps.front().last <= Stage::kBuildMaps;
      MOEKIT_RETURN_IF_ERROR(baseline_->set_routing(s.topk_ids, weights, T));
      auto bout = Tensor::empty(p.activation_dtype, {T, int64_t{p.hidden}}, Device::cuda());
      if (!bout.ok()) return bout.status();
      baseline_out_ = std::move(*bout);
      MOEKIT_RETURN_IF_ERROR(poison(baseline_out_.view()));
      auto g = graphs_of([&](const Copy& c, cudaStream_t st) -> Status {
        if (route_step) MOEKIT_RETURN_IF_ERROR(runner_.run_step(*c.prepared, in, outs, workspace, Stream{st}, 0));
        return baseline_->enqueue(c.weights, in.hidden, baseline_out_.view(), st);
      });
      if (!g.ok()) return g.status();
      auto t = time_replays(*g);
      if (!t.ok()) return t.status();
      s.baseline_us = std::move(t).value();
    }
    if (o.batched_reference && baseline_) {
      auto m = baseline_->set_batched(s.topk_ids);
      if (!m.ok()) return m.status();
      if (*m > 0) {
        auto g = graphs_of([&](const Copy& c, cudaStream_t st) { return baseline_->enqueue_batched(c.weights, st); });
        if (!g.ok()) return g.status();
        auto t = time_replays(*g);
        if (!t.ok()) return t.status();
        s.batched_us = std::move(t).value();
        s.batched_rows_per_expert = *m;
      }
    }
    // One more whole-layer replay, so that --refcheck sees the output of a complete call, not of a
    // step replayed alone (a step that accumulates would have added to it).
    MOEKIT_RETURN_IF_ERROR(layer->replay(0));
    return s;
  }

  Result<Tensor> last_output() override { return to_host(out_); }
  Result<Tensor> last_baseline_output() override {
    if (baseline_out_.data() == nullptr) return Status::NotFound("no baseline output");
    return to_host(baseline_out_);
  }
  std::string baseline_note() const override { return note_; }

 private:
  static Result<Tensor> to_host(const Tensor& d) {
    auto t = Tensor::empty(d.dtype(), d.shape());
    if (!t.ok()) return t.status();
    MOEKIT_RETURN_IF_ERROR(copy_tensor(t->view(), d.view()));
    return std::move(t).value();
  }

  const MoeRunner& runner_;
  std::vector<Copy> copies_;
  std::unique_ptr<CublasBaseline> baseline_;
  std::string note_;
  Tensor out_, baseline_out_;
};

}  // namespace

Result<std::unique_ptr<LayerBench>> make_cuda_layer_bench(const MoeRunner& runner, const MoeWeights& host_weights,
                                                          const CudaBenchConfig& config) {
  std::vector<CudaLayerBench::Copy> copies(static_cast<size_t>(std::max(config.weight_copies, 1)));
  for (CudaLayerBench::Copy& c : copies) {
    auto w = copy_weights(Device::cuda(), host_weights);
    if (!w.ok()) return w.status();
    c.weights = w->weights;
    c.storage = std::move(w->storage);
    auto prepared = runner.prepare_weights(c.weights);
    if (!prepared.ok()) return prepared.status();
    c.prepared.emplace(std::move(prepared).value());
  }
  std::string note = fmt::format("GPU: {} weight cop{} rotated (L2 defeat). cuBLAS baseline: ", copies.size(), copies.size() == 1 ? "y" : "ies");
  auto baseline = config.baseline ? CublasBaseline::create(runner.problem())
                                  : Result<std::unique_ptr<CublasBaseline>>(Status::NotFound("not asked for"));
  if (baseline.ok())
    note += "the fused layer's routing step when it has one of its own (else routing is not timed), permutation built on the host "
            "from the routing read back once per set, gather, one cublasGemmEx per expert for gemm1, activation kernel, one per "
            "expert for gemm2, weighted combine";
  else
    note += "none (" + baseline.status().message() + ")";
  return std::unique_ptr<LayerBench>(
      new CudaLayerBench(runner, std::move(copies), baseline.ok() ? std::move(baseline).value() : nullptr, std::move(note)));
}

}  // namespace moekit::bench
