// --refcheck for `moekit bench`: the layer's output against cpu::run_reference on the first tokens.
#pragma once

#include <cstdint>

#include "moekit/moe_problem.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit::bench {

// ||got - ref||_2 / ||ref||_2 over all elements (host tensors of one dtype and shape); NaN when
// `got` holds a NaN (an unwritten, poisoned row). ||got - ref|| when ref is all zero.
double relative_l2_error(const TensorView& got, const TensorView& ref);

// The largest relative L2 error accepted for an output in `dtype`: a few units of its precision.
double refcheck_limit(DType dtype);

// Runs the CPU reference on the first `tokens` tokens of `inputs` (Standard format: each token's
// output depends on its own row only) and compares with the same rows of `out` [T, H] (host).
Result<double> refcheck_first_tokens(const MoeProblem& problem, const MoeWeights& weights, const MoeInputs& inputs,
                                     const TensorView& out, int64_t tokens);

}  // namespace moekit::bench
