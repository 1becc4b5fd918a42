#include <gtest/gtest.h>

#include <string>

#include "moekit/status.h"

namespace moekit {
namespace {

Status fails() { return Status::InvalidArgument("top_k=9 exceeds num_experts=8"); }
Status propagates() {
  MOEKIT_RETURN_IF_ERROR(fails());
  return Status::Internal("not reached");
}
Result<int> half_of(int x) {
  if (x % 2) return Status::InvalidArgument("x=" + std::to_string(x) + " is odd");
  return x / 2;
}

TEST(Status, OkAndErrors) {
  EXPECT_TRUE(Status().ok());
  EXPECT_EQ(Status().to_string(), "ok");
  const Status s = fails();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.to_string(), "invalid argument: top_k=9 exceeds num_experts=8");
  EXPECT_EQ(s.with_context("layer 3").message(), "layer 3: top_k=9 exceeds num_experts=8");
  EXPECT_EQ(propagates().message(), s.message());
}

TEST(Status, ResultHoldsValueOrStatus) {
  EXPECT_EQ(half_of(8).value(), 4);
  const auto r = half_of(3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "x=3 is odd");
  EXPECT_THROW((void)half_of(3).value(), Error);
  try {
    throw_if_error(fails());
    FAIL() << "expected an exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("top_k=9"), std::string::npos);
  }
  // A Result built from an OK status is a bug in the caller, reported as such.
  const Result<int> bogus{Status::Ok()};
  EXPECT_EQ(bogus.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace moekit
