// The CPU backend's expert GEMM, shared by the reference layer and the runner's CPU stages, so that
// both compute the same sums in the same order (the runner's tests compare them bitwise).
#pragma once

#include <cstdint>

#include "moekit/moe_problem.h"
#include "quant_reference.h"

namespace moekit::cpu {

// y[r, n] = sum_k x[r, k] * W_e[n, k] + bias_e[n] for rows [begin, end) of local expert e, where
// W is GEMM g's weight (gemm1: N = gemm1_rows, K = H; gemm2: N = H, K = I) dequantized row by row.
// x is [*, K] and y is [*, N], row-major. Threads split the output columns; every sum runs over k
// in order, so the result does not depend on the thread count nor on `row_block`, the number of
// weight rows decoded and advanced together (4, 8 or 16; the CPU backend's knob
// "gemm1.row_block"/"gemm2.row_block"; another value takes kDefaultRowBlock).
inline constexpr int kDefaultRowBlock = 8;
void expert_gemm(const MoeProblem& problem, const MoeWeights& weights, Gemm g, int e, int64_t begin, int64_t end,
                 const double* x, double* y, int row_block = kDefaultRowBlock);

}  // namespace moekit::cpu
