// Runs one MoE layer, given as host tensors, with a runner: the part `moekit run` and `moekit check`
// share.
#pragma once

#include <cstddef>
#include <vector>

#include "moekit/runner.h"
#include "moekit/status.h"

namespace moekit::cli {

struct LayerRunTimes {
  std::vector<double> seconds;  // each run, to its completion (the device synchronized)
  size_t workspace_bytes = 0;
};

// Runs the layer `iters` times. When the runner's backend is the GPU it runs on device copies and
// copies the output (and the routing ids, where outputs.topk_ids is defined) back into `outputs`;
// otherwise on the host tensors themselves.
Result<LayerRunTimes> run_layer_on_host_tensors(const MoeRunner& runner, const MoeWeights& weights, const MoeInputs& inputs,
                                                const MoeOutputs& outputs, int iters);

}  // namespace moekit::cli
