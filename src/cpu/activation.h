// Activation functions of the reference backend, in double.
#pragma once

#include <span>

#include "moekit/moe_problem.h"

namespace moekit::cpu {

// gemm1_out has problem.gemm1_rows() values (gate and up per `layout` when gated); writes the
// I values of the activation into `out`.
void apply_activation(const ActivationParams& params, GateUpLayout layout, std::span<const double> gemm1_out,
                      std::span<double> out);

double silu(double x);
double gelu_erf(double x);
double gelu_tanh(double x);

}  // namespace moekit::cpu
