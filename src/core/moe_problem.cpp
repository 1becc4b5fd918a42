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
