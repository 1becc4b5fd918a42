// Running a worker process with a time limit: posix_spawn, its stdout and stderr collected, SIGKILL
// when it runs past the limit. A crash (a signal) or a hang is an outcome, never an error of the parent.
#pragma once

#include <string>
#include <vector>

#include "moekit/status.h"

namespace moekit::tune {

struct ProcessOutcome {
  int exit_code = -1;      // when it exited
  int signal = 0;          // when a signal ended it (not counting our own kill on timeout)
  bool timed_out = false;  // killed for running past the limit
  std::string out, err;    // what it wrote (stderr: the last 4 KiB)
  double seconds = 0;
};

// Runs argv[0] (a path) with `argv` and the parent's environment plus `env` ("NAME=value" entries,
// which override). Fails only when the process cannot be started.
Result<ProcessOutcome> run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env, double timeout_s);

}  // namespace moekit::tune
