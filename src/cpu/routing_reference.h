// Routing of one token, shared by cpu::route() and the fused CPU paths.
#pragma once

#include <cstdint>
#include <span>

#include "moekit/moe_problem.h"
#include "moekit/status.h"

namespace moekit::cpu {

// logits [E] and bias [E] (empty unless kDeepSeekV3) in double; writes K ids and K weights
// (before routed_scaling_factor). Parameters are assumed valid (cpu::route checks them).
void route_token(const RoutingParams& params, std::span<const double> logits, std::span<const double> bias,
                 std::span<int32_t> ids, std::span<float> weights);

// The scalar checks of routing: method known, 1 <= top_k <= num_experts, and for kDeepSeekV3 the
// group parameters. Shared by cpu::route and cpu::validate.
Status validate_routing_params(const RoutingParams& params, int num_experts, int top_k);

}  // namespace moekit::cpu
