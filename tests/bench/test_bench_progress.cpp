// The progress indicator: silent for short runs off a terminal, plain lines after the quiet time,
// and only ever on the stream it is given (stderr in the CLI), never stdout.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "bench/progress.h"

namespace moekit::bench {
namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) s += static_cast<char>(c);
  return s;
}

TEST(BenchProgress, SilentWithinTheQuietTime) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p(3, f, 3600.0);
    p.step("a");
    p.status("a: weights");
    p.step("b");
    p.finish();
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(BenchProgress, PlainLinesOnceTheQuietTimeHasPassed) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p(2, f, 0.0);
    p.step("qwen T=1");
    p.finish();
  }
  const std::string s = contents(f);
  EXPECT_NE(s.find("moekit bench: [1/2] 0 s  qwen T=1\n"), std::string::npos) << s;
  EXPECT_NE(s.find("moekit bench: 2 steps in"), std::string::npos) << s;
  EXPECT_EQ(s.find('\r'), std::string::npos);  // no terminal redraws in a file
  std::fclose(f);
}

}  // namespace
}  // namespace moekit::bench
