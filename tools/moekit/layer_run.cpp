#include "layer_run.h"

#include <chrono>
#include <span>

#include "moekit/layer_copy.h"
#include "moekit/tensor.h"

namespace moekit::cli {

Result<LayerRunTimes> run_layer_on_host_tensors(const MoeRunner& runner, const MoeWeights& weights, const MoeInputs& inputs,
                                                const MoeOutputs& outputs, int iters) {
  const Device dev = runner.device().backend == BackendKind::kCuda ? Device::cuda() : Device::cpu();
  LayerCopy layer{weights, inputs, outputs, {}};
  if (dev.is_cuda()) {
    auto c = copy_layer(dev, weights, inputs, outputs);
    if (!c.ok()) return c.status().with_context("copying the layer to the GPU");
    layer = std::move(c).value();
  }
  auto prepared = runner.prepare_weights(layer.weights);
  if (!prepared.ok()) return prepared.status();
  auto ws_bytes = runner.workspace_size(layer.inputs);
  if (!ws_bytes.ok()) return ws_bytes.status();
  auto ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(*ws_bytes)}, dev);
  if (!ws.ok()) return ws.status();
  const std::span<std::byte> workspace(static_cast<std::byte*>(ws->data()), *ws_bytes);

  LayerRunTimes r;
  r.workspace_bytes = *ws_bytes;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Status s = runner.run(*prepared, layer.inputs, layer.outputs, workspace);
    if (s.ok()) s = synchronize(dev);
    if (!s.ok()) return s;
    r.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (dev.is_cuda()) {
    Status s = copy_tensor(outputs.out, layer.outputs.out);
    if (s.ok() && outputs.topk_ids.defined()) s = copy_tensor(outputs.topk_ids, layer.outputs.topk_ids);
    if (!s.ok()) return s.with_context("copying the output back");
  }
  return r;
}

}  // namespace moekit::cli
