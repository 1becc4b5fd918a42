// Model presets: the MoE layer of published models, with the routing method, activation and
// quantization their checkpoints use. One table (src/runner/presets.cpp); `moekit explain`, `run`
// and `bench` take them by name.
#pragma once

#include <span>
#include <string_view>

#include "moekit/moe_problem.h"
#include "moekit/status.h"

namespace moekit {

struct ModelPreset {
  std::string_view name;      // "qwen3-30b-a3b"
  std::string_view model;     // the Hugging Face model id the numbers come from
  MoeProblem problem;
  std::string_view notes;     // what the layer has that the problem does not (shared experts, ...)
};

std::span<const ModelPreset> model_presets();
// By name (case-insensitive); the error lists the known names.
Result<ModelPreset> find_preset(std::string_view name);

}  // namespace moekit
