// The CPU backend behind MoeRunner: one implementation per stage, the fused stage pairs (routing +
// prologue, gemm1 + activation, gemm2 + finalize) and a whole-layer token-major path for decode.
// Intermediate buffers hold float64, so every path computes exactly what the reference computes and
// "fused == unfused" is a bitwise comparison.
#pragma once

#include "moekit/stages.h"

namespace moekit::cpu {

// Element type of the CPU backend's gemm1_in/gemm1_out/gemm2_in/gemm2_out buffers.
inline constexpr DType kIntermediateDType = DType::kF64;

// The most tokens the whole-layer token-major path takes; beyond it the expert-major stage pipeline
// reads each expert's weights once instead of once per token.
inline constexpr int64_t kTokenMajorMaxTokens = 4;

Status register_cpu_backend(Registry& registry);

}  // namespace moekit::cpu
