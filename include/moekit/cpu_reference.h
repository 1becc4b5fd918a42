// The CPU reference backend: every MoE semantic of moekit/moe_problem.h, computed with float64
// accumulation, multi-threaded (OpenMP). It is the oracle for every GPU kernel and the backend used
// when no GPU is present. All tensors must be host (CPU) tensors.
//
// Every entry point validates first and, on error, returns a Status naming the field and value and
// writes nothing.
#pragma once

#include "moekit/moe_problem.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit::cpu {

// Checks the problem alone (sizes, option combinations, routing parameters): what MoeRunner::create
// checks before any tensor is seen.
Status validate_problem(const MoeProblem& problem);

// Checks the problem and the weights (shapes, dtypes, scale layouts): what prepare_weights checks.
Status validate_weights(const MoeProblem& problem, const MoeWeights& weights);

// Checks the inputs and outputs of a call (shapes, dtypes, devices, routing parameters, index
// ranges) for a problem validate_problem accepted and weights validate_weights accepted: what
// MoeRunner::run checks on every call, once the weights were checked by prepare_weights.
Status validate_io(const MoeProblem& problem, const MoeInputs& inputs, const MoeOutputs& outputs);

// Checks a whole layer call: shapes, dtypes, devices, option combinations, scale layouts.
Status validate(const MoeProblem& problem, const MoeWeights& weights, const MoeInputs& inputs,
                const MoeOutputs& outputs);

// Runs the whole layer.
Status run_reference(const MoeProblem& problem, const MoeWeights& weights, const MoeInputs& inputs,
                     const MoeOutputs& outputs);

// Routing alone: logits [T, E] (f32 or bf16) -> topk_ids [T, K] i32 and topk_weights [T, K] f32.
// correction_bias ([E], f32 or bf16) is used by kDeepSeekV3 only and may be empty otherwise.
// The weights are final except for routed_scaling_factor, which finalize applies. Ties go to the
// lower expert id.
Status route(const RoutingParams& params, int num_experts, int top_k, const TensorView& logits,
             const TensorView& correction_bias, const TensorView& topk_ids, const TensorView& topk_weights);

}  // namespace moekit::cpu
