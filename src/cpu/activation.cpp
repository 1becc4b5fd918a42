#include "activation.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace moekit::cpu {

double silu(double x) { return x / (1.0 + std::exp(-x)); }
double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }
double gelu_tanh(double x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

namespace {

double gated(const ActivationParams& p, double gate, double up) {
  switch (p.kind) {
    case Activation::kSwiGLU: return silu(gate) * up;
    case Activation::kGeGLU: return gelu_erf(gate) * up;
    case Activation::kGeGLUTanh: return gelu_tanh(gate) * up;
    case Activation::kSwiGLUClamped: {
      // GPT-OSS: the gate is clamped from above only, the up projection on both sides.
      const double g = std::min(gate, static_cast<double>(p.limit));
      const double u = std::clamp(up, -static_cast<double>(p.limit), static_cast<double>(p.limit));
      return (u + 1.0) * g / (1.0 + std::exp(-static_cast<double>(p.alpha) * g));
    }
    default: return 0.0;  // not gated: unreachable, apply_activation dispatches on activation_is_gated
  }
}

double plain(Activation a, double x) {
  switch (a) {
    case Activation::kReLU2: return x > 0 ? x * x : 0.0;
    case Activation::kSiLU: return silu(x);
    case Activation::kGeLU: return gelu_erf(x);
    case Activation::kReLU: return x > 0 ? x : 0.0;
    case Activation::kIdentity: return x;
    default: return 0.0;  // gated: unreachable
  }
}

}  // namespace

void apply_activation(const ActivationParams& params, GateUpLayout layout, std::span<const double> in,
                      std::span<double> out) {
  const size_t n = out.size();
  if (!activation_is_gated(params.kind)) {
    for (size_t i = 0; i < n; ++i) out[i] = plain(params.kind, in[i]);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const bool interleaved = layout == GateUpLayout::kInterleaved;
    const double gate = interleaved ? in[2 * i] : in[i];
    const double up = interleaved ? in[2 * i + 1] : in[n + i];
    out[i] = gated(params, gate, up);
  }
}

}  // namespace moekit::cpu
