// A layer's tensors copied to another device: how a layer generated or loaded on the host (random
// layers, checkpoints, .npy inputs) runs on the GPU backend, and how its output comes back.
#pragma once

#include <vector>

#include "moekit/moe_problem.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit {

struct LayerCopy {
  MoeWeights weights;
  MoeInputs inputs;
  MoeOutputs outputs;
  std::vector<Tensor> storage;  // owns every copied tensor
};

// Copies every given tensor of weights, inputs and outputs to `device` (synchronously). Tensors not
// given stay not given. Weights already on `device` are shared, not copied.
Result<LayerCopy> copy_layer(Device device, const MoeWeights& weights, const MoeInputs& inputs, const MoeOutputs& outputs);

// A new copy of every given weight tensor on `device`, also of those already there: the rotated
// copies a timed replay reads, so that one call's weights are not in the L2 the previous call left
// (`moekit bench`, the tuner's worker). Only `weights` and `storage` are set.
Result<LayerCopy> copy_weights(Device device, const MoeWeights& weights);

}  // namespace moekit
