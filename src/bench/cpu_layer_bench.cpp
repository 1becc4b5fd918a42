// The CPU backend's layer timing: MoeRunner::run on host tensors, timed with a steady clock (there
// is no graph to replay and no baseline to compare with on the host).
#include <chrono>
#include <cmath>

#include "bench/layer_bench.h"
#include "moekit/float_formats.h"

namespace moekit::bench {
namespace {

double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

class CpuLayerBench final : public LayerBench {
 public:
  CpuLayerBench(const MoeRunner& runner, PreparedWeights prepared) : runner_(runner), prepared_(std::move(prepared)) {}

  Result<SetTiming> measure(const MoeInputs& in, const TimingOptions& o) override {
    const MoeProblem& p = runner_.problem();
    const int64_t T = in.hidden.size(0);
    auto out = Tensor::empty(p.activation_dtype, {T, int64_t{p.hidden}});
    auto ids = Tensor::empty(DType::kI32, {T, int64_t{p.top_k}});
    if (!out.ok() || !ids.ok()) return Status::OutOfMemory("bench: output tensors");
    auto bytes = runner_.workspace_size(in);
    if (!bytes.ok()) return bytes.status();
    auto ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(*bytes)});
    if (!ws.ok()) return ws.status();
    out_ = std::move(*out);
    MoeOutputs outs;
    outs.out = out_.view();
    outs.topk_ids = ids->view();
    const std::span<std::byte> workspace(static_cast<std::byte*>(ws->data()), *bytes);

    // Poisoned with NaN: a row the layer failed to write shows in --refcheck.
    for (int64_t i = 0; i < out_.numel(); ++i) store_element(out_.data(), out_.dtype(), i, std::nan(""));
    SetTiming s;
    auto call = [&] { return runner_.run(prepared_, in, outs, workspace); };
    for (int i = 0; i < o.warmup; ++i) MOEKIT_RETURN_IF_ERROR(call());
    for (int r = 0; r < o.reps; ++r) {
      const double t0 = now_us();
      for (int i = 0; i < o.iters; ++i) MOEKIT_RETURN_IF_ERROR(call());
      s.layer_us.push_back((now_us() - t0) / o.iters);
    }
    s.topk_ids.assign(ids->data_as<const int32_t>(), ids->data_as<const int32_t>() + ids->numel());
    if (o.stages) {
      // Each step reads what the steps before it left in the workspace: the full runs above.
      const MoePlan plan = runner_.plan(T, WeightTraits::of(prepared_.weights()));
      for (size_t k = 0; k < plan.steps.size(); ++k) {
        s.step_names.push_back(plan.steps[k].kernel);
        std::vector<double> us;
        for (int r = 0; r < o.reps; ++r) {
          const double t0 = now_us();
          for (int i = 0; i < o.iters; ++i) MOEKIT_RETURN_IF_ERROR(runner_.run_step(prepared_, in, outs, workspace, {}, k));
          us.push_back((now_us() - t0) / o.iters);
        }
        s.step_us.push_back(std::move(us));
      }
      MOEKIT_RETURN_IF_ERROR(call());  // --refcheck reads the output of a complete call
    }
    return s;
  }

  Result<Tensor> last_output() override {
    auto t = Tensor::empty(out_.dtype(), out_.shape());
    if (!t.ok()) return t.status();
    MOEKIT_RETURN_IF_ERROR(copy_tensor(t->view(), out_.view()));
    return std::move(t).value();
  }

  Result<Tensor> last_baseline_output() override { return Status::NotFound("no baseline on the CPU backend"); }

  std::string baseline_note() const override { return "no cuBLAS baseline on the CPU backend (it needs a GPU)"; }

 private:
  const MoeRunner& runner_;
  PreparedWeights prepared_;
  Tensor out_;
};

}  // namespace

Result<std::unique_ptr<LayerBench>> make_cpu_layer_bench(const MoeRunner& runner, const MoeWeights& weights) {
  auto prepared = runner.prepare_weights(weights);
  if (!prepared.ok()) return prepared.status();
  return std::unique_ptr<LayerBench>(new CpuLayerBench(runner, std::move(prepared).value()));
}

}  // namespace moekit::bench
