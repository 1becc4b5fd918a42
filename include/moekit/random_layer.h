// A synthetic MoE layer: random weights in the problem's quantization scheme and random inputs in
// its input format, generated in parallel from a seed (the same seed gives the same bytes on every
// machine and thread count). Used by `moekit run` on presets, the benchmarks and the tests.
//
// Values are uniform (never all zero): weights scaled to about 1/sqrt(fan_in) so activations stay
// O(1); quantized weights are random codes with scales that give the same magnitude.
#pragma once

#include <cstdint>
#include <vector>

#include "moekit/moe_problem.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit {

struct RandomLayerOptions {
  int64_t num_tokens = 1;   // T (Masked: max_m per expert)
  uint64_t seed = 1;
  bool biases = false;      // w13_bias and w2_bias
  bool weights_only = false;  // skip inputs and outputs
  bool inputs_only = false;   // skip weights (e.g. when they come from a checkpoint)
  // Where the weights (and biases) are made: the host, or a CUDA device, where a kernel writes the
  // bytes the host would (no host copy, no transfer: the tuner's workers on large presets). A CUDA
  // device needs quant=none (bf16, f16 or f32 weights); inputs and outputs are always on the host.
  Device weights_device = Device::cpu();
};

struct RandomLayer {
  MoeProblem problem;
  MoeWeights weights;
  Tensor hidden, router_logits, e_score_correction_bias, topk_ids, topk_weights, masked_m, expert_offsets,
      gather_index, row_weights;
  Tensor out;
  std::vector<Tensor> storage;  // the weight tensors behind `weights`

  MoeInputs inputs() const;
  MoeOutputs outputs() const;
};

// Fails (naming the field) for an invalid problem, when memory cannot be allocated, or for weights on
// a device this build or scheme cannot make them on.
Result<RandomLayer> make_random_layer(const MoeProblem& problem, const RandomLayerOptions& options);

// Fills `t` (any dtype; host) with uniform values in [-scale, scale) from (seed, stream).
void fill_uniform(const TensorView& t, double scale, uint64_t seed, uint64_t stream);

}  // namespace moekit
