#include "bench/progress.h"

#include <unistd.h>

#include <fmt/format.h>

namespace moekit::bench {

Progress::Progress(int total, std::FILE* out, double quiet_seconds)
    : total_(total), out_(out), quiet_(quiet_seconds), tty_(out != nullptr && isatty(fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { finish(); }

double Progress::elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

void Progress::step(const std::string& what) {
  ++done_;
  print(what);
}

void Progress::status(const std::string& what) { print(what); }

void Progress::print(const std::string& what) {
  if (out_ == nullptr) return;
  const double t = elapsed();
  if (tty_) {
    fmt::print(out_, "\r\033[K[{}/{}] {:.0f} s  {}", done_, total_, t, what);
    std::fflush(out_);
    printed_ = true;
  } else if (t >= quiet_ && t - last_print_ >= quiet_) {
    fmt::print(out_, "moekit bench: [{}/{}] {:.0f} s  {}\n", done_, total_, t, what);
    last_print_ = t;
    printed_ = true;
  }
}

void Progress::finish() {
  if (finished_ || out_ == nullptr) return;
  finished_ = true;
  if (tty_ && printed_) fmt::print(out_, "\r\033[K");
  if (printed_) fmt::print(out_, "moekit bench: {} steps in {:.1f} s\n", total_, elapsed());
}

}  // namespace moekit::bench
