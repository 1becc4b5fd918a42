// Reference quantization for the CPU backend: weight dequantization and activation
// quantize->dequantize for every QuantScheme, exact to docs/quantization.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "moekit/moe_problem.h"
#include "moekit/status.h"

namespace moekit::cpu {

enum class Gemm : uint8_t { k1, k2 };

// Checks that weights and scales match problem.quant: dtypes, shapes, group size, presence of
// required fields and absence of fields the scheme does not use. The message names the field and
// its value, e.g. "w13_scale: shape [8, 3] does not match [8, 24, 23] (kFp8Block, ...)".
Status validate_quantization(const MoeProblem& problem, const MoeWeights& weights);

// Row n of local expert e's weight for GEMM g (gemm1: N = gemm1_rows, K = H; gemm2: N = H, K = I)
// as doubles: out[k * stride] = W[e, n, k] for k in [0, K). Every scheme, kNone included (the
// weight in the activation dtype). The layer streams weights through this a few rows at a time, so
// its memory does not grow with the expert size. Requires validate_quantization() to have passed.
void dequantize_weight_row(const MoeProblem& problem, const MoeWeights& weights, Gemm g, int e, int64_t n, double* out,
                           int64_t stride);

// The whole weight of local expert e for GEMM g, row-major [N, K] (N * K doubles: for tests and
// tools; the layer uses dequantize_weight_row).
void dequantize_weight(const MoeProblem& problem, const MoeWeights& weights, Gemm g, int e, std::vector<double>& out);

// Replaces each row of `rows` ([num_rows, K], row-major) by the value the GEMM `g` sees after the
// scheme's activation quantization (AWQ pre-quant scale first, then quantize and dequantize).
// row_expert[r] is the local expert of row r (for per-expert static scales). kNone and 16-bit
// activation schemes leave rows as they are (apart from the AWQ scale).
void quantize_activations(const MoeProblem& problem, const MoeWeights& weights, Gemm g, std::span<double> rows,
                          int64_t K, std::span<const int32_t> row_expert);

}  // namespace moekit::cpu
