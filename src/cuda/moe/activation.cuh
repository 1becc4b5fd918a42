// The activations of the reference (src/cpu/activation.cpp) in float on the device, shared by the
// gemm1 epilogue and the unfused activation kernel so that both compute the same function.
#pragma once

#include <cmath>

#include "moekit/moe_problem.h"

namespace moekit::cuda::moe {

__device__ __forceinline__ float silu_f(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float gelu_erf_f(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float gelu_tanh_f(float x) {
  const float c = 0.79788456080286536f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}

__device__ __forceinline__ bool activation_is_gated_device(int kind) {
  const auto a = static_cast<Activation>(kind);
  return a == Activation::kSwiGLU || a == Activation::kGeGLU || a == Activation::kGeGLUTanh || a == Activation::kSwiGLUClamped;
}

// A gated activation of (gate, up); `kind` is an Activation.
__device__ __forceinline__ float gated_act(int kind, float gate, float up, float alpha, float limit) {
  switch (static_cast<Activation>(kind)) {
    case Activation::kSwiGLU: return silu_f(gate) * up;
    case Activation::kGeGLU: return gelu_erf_f(gate) * up;
    case Activation::kGeGLUTanh: return gelu_tanh_f(gate) * up;
    case Activation::kSwiGLUClamped: {
      // GPT-OSS: the gate is clamped from above only, the up projection on both sides.
      const float g = fminf(gate, limit);
      const float u = fminf(fmaxf(up, -limit), limit);
      return (u + 1.0f) * g / (1.0f + expf(-alpha * g));
    }
    default: return 0.0f;
  }
}

// An elementwise (not gated) activation.
__device__ __forceinline__ float plain_act(int kind, float x) {
  switch (static_cast<Activation>(kind)) {
    case Activation::kReLU2: return x > 0.0f ? x * x : 0.0f;
    case Activation::kSiLU: return silu_f(x);
    case Activation::kGeLU: return gelu_erf_f(x);
    case Activation::kReLU: return x > 0.0f ? x : 0.0f;
    case Activation::kIdentity: return x;
    default: return 0.0f;
  }
}

}  // namespace moekit::cuda::moe
