// A progress line on stderr for long benchmark runs. Never writes to stdout (which may carry CSV or
// JSON). On a terminal it redraws one line; otherwise it stays silent for the first few seconds
// (short runs, tests) and then prints a plain line at most every few seconds.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace moekit::bench {

class Progress {
 public:
  // `total` steps; `out` is normally stderr. `quiet_seconds`: how long a non-terminal run stays silent.
  Progress(int total, std::FILE* out, double quiet_seconds = 3.0);
  ~Progress();
  // Starts step `done + 1` of `total`, described by `what`.
  void step(const std::string& what);
  // Says what the current step is doing now (e.g. generating a preset's weights) without advancing.
  void status(const std::string& what);
  // Clears a terminal line; prints the total time if anything was printed.
  void finish();

 private:
  double elapsed() const;
  void print(const std::string& what);
  int total_, done_ = 0;
  std::FILE* out_;
  double quiet_, last_print_ = -1e9;
  bool tty_, printed_ = false, finished_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace moekit::bench
