// Command-line options that describe an MoE problem: a preset and/or explicit fields, shared by
// `explain`, `run` and (later) `bench` and `tune`, so every command spells a problem the same way.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "moekit/moe_problem.h"
#include "moekit/plan.h"
#include "moekit/status.h"

namespace moekit::cli {

struct ProblemOptions {
  std::string preset;
  std::optional<int> experts, top_k, hidden, intermediate, local_experts, local_begin, group_size, n_group, topk_group;
  std::optional<std::string> activation, routing, quant, format, dtype, gate_up;
  std::optional<float> scaling;
  std::optional<bool> renormalize;
  bool deterministic = false, no_combine = false, weight_on_input = false;
  std::vector<std::string> fusions;  // NAME=on|off|auto

  // Registers the options on `cmd`.
  void add_to(CLI::App& cmd);
  // The preset (if any) with every given field applied on top; an error names the option.
  Result<MoeProblem> resolve() const;
  Result<FusionControls> fusion_controls() const;
  // "--preset qwen3-30b-a3b --tokens 32 ...": the options as given, to print a reproduction command.
  std::string describe() const;
};

}  // namespace moekit::cli
