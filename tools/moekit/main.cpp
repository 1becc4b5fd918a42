// The `moekit` command-line tool.
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "moekit/build_config.h"

int main(int argc, char** argv) {
  CLI::App app{"moekit: Mixture-of-Experts inference kernels (routing, grouped GEMMs, combine, tuning)", "moekit"};
  app.set_version_flag("--version", MOEKIT_VERSION_STRING);
  // At most one command. "Exactly one" is checked after parsing: CLI11 would otherwise report a
  // missing command before it reports an unknown word such as a misspelt command.
  app.require_subcommand(0, 1);
  // On a bad command line, print the full usage, not only the error.
  app.failure_message(CLI::FailureMessage::help);

  using namespace moekit::cli;
  std::vector<CommandAction> actions;
  actions.push_back(add_info_command(app));
  actions.push_back(add_run_command(app));
  actions.push_back(add_bench_command(app));
  actions.push_back(add_bench_attention_command(app));  // `bench attention`, under the command above
  actions.push_back(add_tune_command(app));
  actions.push_back(add_explain_command(app));
  actions.push_back(add_check_command(app));

  CLI11_PARSE(app, argc, argv);
  for (const auto& action : actions) {
    if (const int rc = action(); rc >= 0) return rc;
  }
  return app.exit(CLI::RequiredError("A subcommand"));
}
