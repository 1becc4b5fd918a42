// Each `moekit` subcommand registers itself on the CLI11 app and returns the exit code to use.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "moekit/status.h"

namespace moekit::cli {

// What runs once the command line has been parsed; returns the process exit code.
using CommandAction = std::function<int()>;

CommandAction add_info_command(CLI::App& app);
CommandAction add_explain_command(CLI::App& app);
CommandAction add_run_command(CLI::App& app);
// `moekit check`: a configuration against the CPU reference at several token counts.
CommandAction add_check_command(CLI::App& app);
// `moekit tune` and the hidden `moekit tune-worker`.
CommandAction add_tune_command(CLI::App& app);

// Prints "moekit: error: <status>" to stderr and returns the exit code for a failed command (1).
int fail(const Status& status);
// `moekit bench` (MoE layers against the floor).
CommandAction add_bench_command(CLI::App& app);
// `moekit bench attention`; registers under the `bench` command, which must exist already.
CommandAction add_bench_attention_command(CLI::App& app);

}  // namespace moekit::cli
