// The rules behind every decision of a plan (the fusion matrix), one small function each, so that each
// can be tested on its own and `moekit explain` can name the rule that decided. A rule sees only the
// problem, the token count, the target device and what the weights provide; whether a backend has an
// implementation for what the rule allows is the plan builder's business (plan.cpp).
#pragma once

#include <cstdint>
#include <optional>

#include "moekit/plan.h"

namespace moekit::rules {

struct RuleInput {
  const MoeProblem& problem;
  int64_t num_tokens;
  const DeviceTarget& device;
  const WeightTraits& weights;
};

// The most expanded rows (T*K) the CUDA single-CTA routing+prologue path sorts in shared memory.
inline constexpr int64_t kSingleCtaPrologueMaxRows = 4096;
// The most tokens the CUDA single-CTA path also routes (a warp per token, in one block): beyond it,
// routing over the whole GPU and a second launch for the maps is faster.
inline constexpr int64_t kSingleCtaRouteMaxTokens = 32;
// The CUDA backend's operand rows are read 16 bytes at a time: H and I must be multiples of this.
inline constexpr int kCudaRowMultiple = 8;

// ---- the backend ----------------------------------------------------------------------------------
// Can this device's backend run the problem's quantization scheme at all (tensor-core support)?
Decision backend_supports_scheme(const RuleInput& in);

// ---- stages ---------------------------------------------------------------------------------------
// Only the Standard format routes inside the layer; every other stage runs for every format.
Decision stage_runs(const RuleInput& in, Stage stage);

// ---- fusions --------------------------------------------------------------------------------------
Decision routing_prologue_fusion(const RuleInput& in);
Decision gemm1_activation_fusion(const RuleInput& in);
Decision gemm2_finalize_fusion(const RuleInput& in);

// ---- placements: where an option is applied; nullopt when the option is not in use --------------
std::optional<Placement> router_weight_placement(const RuleInput& in);
std::optional<Placement> routed_scaling_placement(const RuleInput& in);
std::optional<Placement> gemm1_input_quant_placement(const RuleInput& in);
std::optional<Placement> gemm2_input_quant_placement(const RuleInput& in, bool activation_fused);
std::optional<Placement> gemm1_awq_placement(const RuleInput& in);
std::optional<Placement> gemm2_awq_placement(const RuleInput& in, bool activation_fused);

// What the scheme does to each GEMM's input activations.
enum class ActQuant : uint8_t {
  kNone,              // 16-bit activations
  kStaticPerTensor,   // a given scale (input_scale)
  kDynamicPerTensor,  // one scale from the amax of every row
  kDynamicPerRow,     // per token / per 1x128 / per 32 / per 16 along the row: row-local
};
ActQuant activation_quantization(const MoeProblem& problem, const WeightTraits& weights, bool gemm2);

}  // namespace moekit::rules
