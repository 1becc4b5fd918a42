#include <gtest/gtest.h>

#include <set>
#include <string>

#include "moekit/dtype.h"

namespace moekit {
namespace {

TEST(DType, NamesRoundTripAndAreUnique) {
  std::set<std::string> names;
  for (DType t : all_dtypes()) {
    const auto name = std::string(dtype_name(t));
    EXPECT_TRUE(names.insert(name).second) << name;
    ASSERT_TRUE(parse_dtype(name).has_value()) << name;
    EXPECT_EQ(*parse_dtype(name), t);
  }
  EXPECT_EQ(names.size(), 14u);
}

TEST(DType, AliasesAndUnknownNames) {
  EXPECT_EQ(parse_dtype("bfloat16"), DType::kBF16);
  EXPECT_EQ(parse_dtype("float8_e4m3fn"), DType::kE4M3);
  EXPECT_EQ(parse_dtype("fp4"), DType::kE2M1);
  EXPECT_FALSE(parse_dtype("float128").has_value());
  EXPECT_FALSE(parse_dtype("").has_value());
}

TEST(DType, StorageFacts) {
  EXPECT_EQ(dtype_bits(DType::kBF16), 16);
  EXPECT_EQ(dtype_bits(DType::kE2M1), 4);
  EXPECT_EQ(dtype_bits(DType::kI4), 4);
  EXPECT_EQ(dtype_bits(DType::kE8M0), 8);
  EXPECT_TRUE(dtype_is_packed(DType::kI4));
  EXPECT_FALSE(dtype_is_packed(DType::kE4M3));
  EXPECT_TRUE(dtype_is_floating(DType::kUE4M3));
  EXPECT_FALSE(dtype_is_floating(DType::kI32));
  EXPECT_EQ(dtype_storage_bytes(DType::kE2M1, 5), 3);
  EXPECT_EQ(dtype_storage_bytes(DType::kF32, 5), 20);
  EXPECT_EQ(dtype_storage_bytes(DType::kF32, 0), 0);
}

}  // namespace
}  // namespace moekit
