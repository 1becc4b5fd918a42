// Checking a layer's output against the reference: the error figures `moekit run --refcheck` prints
// and the tuner's per-scheme acceptance (relative error for 16-bit activations, cosine similarity for
// fp8/int8/fp4 activations), and NaN poisoning of outputs before a candidate runs.
#pragma once

#include <cstdint>
#include <string>

#include "moekit/moe_problem.h"
#include "moekit/tensor.h"

namespace moekit::tune {

// The error of `got` against `want`, normalized by the largest |want| (so one number describes a
// whole output whatever its scale). Positions where both are NaN (rows neither wrote, e.g. Masked rows
// beyond masked_m after poisoning) count as equal; a NaN in `got` alone counts as non-finite.
struct OutputError {
  double max_abs = 0, max_ref = 0, normalized = 0;
  double cosine = 1;  // cosine similarity of the two outputs (1 when both are zero)
  int64_t mismatched = 0, non_finite = 0;
  bool bitwise = true;
};
OutputError compare_outputs(const TensorView& got, const TensorView& want);

// The largest normalized error --refcheck accepts: a few units of the output dtype's precision.
double refcheck_tolerance(DType t);

// The tuner's acceptance rule for a problem: metric "rel_err" (normalized error, at most
// refcheck_tolerance) for 16-bit activations into the GEMMs, "cosine" (1 - cosine similarity, at most
// 1e-3) when the scheme quantizes activations to fp8, int8 or fp4. Any non-finite output fails.
struct Acceptance {
  std::string metric;
  double value = 0;   // the figure of that metric
  double limit = 0;
  bool passed = false;
  std::string why;    // when not passed
};
Acceptance accept_output(const MoeProblem& problem, const OutputError& error);

// Fills `t` (host, a floating-point dtype) with NaN, so unwritten outputs show.
void poison_nan(const TensorView& t);

}  // namespace moekit::tune
