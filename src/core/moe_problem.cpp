#include "moekit/moe_problem.h"

namespace moekit {

bool activation_is_gated(Activation a) {
  switch (a) {
    case Activation::kSwiGLU:
    case Activation::kGeGLU:
    case Activation::kGeGLUTanh:
    case Activation::kSwiGLUClamped: return true;
    case Activation::kReLU2:
    case Activation::kSiLU:
    case Activation::kGeLU:
    case Activation::kReLU:
    case Activation::kIdentity: return false;
  }
  return false;
}

std::string_view quant_scheme_name(QuantScheme q) {
  switch (q) {
    case QuantScheme::kNone: return "none";
    case QuantScheme::kFp8PerTensor: return "fp8_per_tensor";
    case QuantScheme::kFp8PerToken: return "fp8_per_token";
    case QuantScheme::kFp8Block: return "fp8_block";
    case QuantScheme::kInt8PerToken: return "int8_per_token";
    case QuantScheme::kW4A16: return "w4a16";
    case QuantScheme::kW8A16: return "w8a16";
    case QuantScheme::kMxfp4: return "mxfp4";
    case QuantScheme::kMxfp4Mxfp8: return "mxfp4_mxfp8";
    case QuantScheme::kNvfp4: return "nvfp4";
    case QuantScheme::kW4A8: return "w4a8";
  }
  return "unknown";
}

std::string_view input_format_name(InputFormat f) {
  switch (f) {
    case InputFormat::kStandard: return "standard";
    case InputFormat::kPreRouted: return "pre_routed";
    case InputFormat::kMasked: return "masked";
    case InputFormat::kIndexed: return "indexed";
  }
  return "unknown";
}

}  // namespace moekit

namespace moekit {
namespace {

// Finds `s` among the names of values [0, count) of an enum; the error lists the known names.
template <typename E, typename NameFn>
Result<E> parse_enum(std::string_view what, std::string_view s, int count, NameFn name) {
  std::string known;
  for (int i = 0; i < count; ++i) {
    if (name(E(i)) == s) return E(i);
    known += (i ? ", " : "") + std::string(name(E(i)));
  }
  return Status::InvalidArgument(std::string(what) + "='" + std::string(s) + "' is not one of " + known);
}

}  // namespace

std::string_view routing_method_name(RoutingMethod m) {
  switch (m) {
    case RoutingMethod::kSoftmaxTopK: return "softmax_topk";
    case RoutingMethod::kTopKSoftmax: return "topk_softmax";
    case RoutingMethod::kDeepSeekV3: return "deepseek_v3";
    case RoutingMethod::kLlama4: return "llama4";
    case RoutingMethod::kTopK: return "topk";
  }
  return "unknown";
}

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::kSwiGLU: return "swiglu";
    case Activation::kGeGLU: return "geglu";
    case Activation::kGeGLUTanh: return "geglu_tanh";
    case Activation::kSwiGLUClamped: return "swiglu_clamped";
    case Activation::kReLU2: return "relu2";
    case Activation::kSiLU: return "silu";
    case Activation::kGeLU: return "gelu";
    case Activation::kReLU: return "relu";
    case Activation::kIdentity: return "identity";
  }
  return "unknown";
}

std::string_view gate_up_layout_name(GateUpLayout l) { return l == GateUpLayout::kConcatenated ? "concatenated" : "interleaved"; }

Result<RoutingMethod> parse_routing_method(std::string_view s) {
  return parse_enum<RoutingMethod>("routing", s, 5, routing_method_name);
}
Result<Activation> parse_activation(std::string_view s) { return parse_enum<Activation>("activation", s, 9, activation_name); }
Result<QuantScheme> parse_quant_scheme(std::string_view s) { return parse_enum<QuantScheme>("quant", s, 11, quant_scheme_name); }
Result<InputFormat> parse_input_format(std::string_view s) { return parse_enum<InputFormat>("format", s, 4, input_format_name); }
Result<GateUpLayout> parse_gate_up_layout(std::string_view s) { return parse_enum<GateUpLayout>("gate_up", s, 2, gate_up_layout_name); }

Result<DType> parse_activation_dtype(std::string_view s) {
  const auto t = parse_dtype(s);
  if (!t || (*t != DType::kF32 && *t != DType::kF16 && *t != DType::kBF16))
    return Status::InvalidArgument("dtype='" + std::string(s) + "' is not an activation dtype (f32, f16, bf16)");
  return *t;
}

}  // namespace moekit
