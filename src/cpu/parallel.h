// When the CPU backend's loops go parallel.
#pragma once

#include <cstdint>

namespace moekit::cpu {

// Starting an OpenMP team costs microseconds, and far more on a busy machine (threads wait at the
// barrier for cores that other processes hold). Loops whose work, counted in multiply-adds or
// element operations, is below this run on the calling thread; results never depend on the choice.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 17;

inline bool worth_parallel(int64_t work) { return work >= kMinParallelWork; }

// Rough costs in multiply-adds, for weighing loops of other work.
inline constexpr int64_t kCostOfExp = 16;     // an activation function (exp, erf, tanh)
inline constexpr int64_t kCostOfEncode = 32;  // quantizing one element (scale, round, decode)

}  // namespace moekit::cpu
