// Whether this build can plan the sm_90a kernel on sm_90 (a CUDA backend built with
// MOEKIT_HAS_SM90_GEMM): the tests that name its tiles skip in builds without it.
#pragma once

#include <algorithm>

#include "moekit/plan.h"
#include "moekit/presets.h"

namespace moekit {

inline bool sm90_tiles_built() {
  if (!default_registry().has_backend(BackendKind::kCuda)) return false;
  const MoeProblem p = model_presets()[1].problem;  // Qwen3-30B-A3B, bf16
  for (const KnobSpec& k : knob_space({p, 1024, {}}, *DeviceTarget::named("sm90")))
    if (k.name == "gemm1.tile") return std::find(k.values.begin(), k.values.end(), "sm90_m128n256k64_c1x1") != k.values.end();
  return false;
}

}  // namespace moekit
