#include "moekit/dtype.h"

#include <array>

namespace moekit {
namespace {

struct DTypeFacts {
  DType type;
  std::string_view name;
  int bits;
  bool floating;
};

constexpr std::array<DTypeFacts, 14> kFacts{{
    {DType::kF64, "f64", 64, true},
    {DType::kF32, "f32", 32, true},
    {DType::kF16, "f16", 16, true},
    {DType::kBF16, "bf16", 16, true},
    {DType::kE4M3, "e4m3", 8, true},
    {DType::kE5M2, "e5m2", 8, true},
    {DType::kI64, "i64", 64, false},
    {DType::kI32, "i32", 32, false},
    {DType::kI8, "i8", 8, false},
    {DType::kU8, "u8", 8, false},
    {DType::kI4, "i4", 4, false},
    {DType::kE2M1, "e2m1", 4, true},
    {DType::kE8M0, "e8m0", 8, true},
    {DType::kUE4M3, "ue4m3", 8, true},
}};

constexpr std::array<DType, kFacts.size()> kAll = [] {
  std::array<DType, kFacts.size()> a{};
  for (size_t i = 0; i < kFacts.size(); ++i) a[i] = kFacts[i].type;
  return a;
}();

const DTypeFacts& facts(DType t) { return kFacts[static_cast<size_t>(t)]; }

struct Alias {
  std::string_view alias;
  DType type;
};
constexpr std::array<Alias, 17> kAliases{{
    {"float64", DType::kF64},   {"float32", DType::kF32},        {"float", DType::kF32},
    {"float16", DType::kF16},   {"half", DType::kF16},           {"fp16", DType::kF16},
    {"bfloat16", DType::kBF16}, {"float8_e4m3fn", DType::kE4M3}, {"fp8", DType::kE4M3},
    {"e4m3fn", DType::kE4M3},   {"float8_e5m2", DType::kE5M2},   {"int64", DType::kI64},
    {"int32", DType::kI32},     {"int8", DType::kI8},            {"uint8", DType::kU8},
    {"int4", DType::kI4},       {"fp4", DType::kE2M1},
}};

}  // namespace

static_assert(static_cast<size_t>(DType::kUE4M3) + 1 == kFacts.size(), "kFacts must list every DType in order");

std::span<const DType> all_dtypes() { return kAll; }
std::string_view dtype_name(DType t) { return facts(t).name; }
int dtype_bits(DType t) { return facts(t).bits; }
bool dtype_is_packed(DType t) { return facts(t).bits < 8; }
bool dtype_is_floating(DType t) { return facts(t).floating; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& f : kFacts)
    if (f.name == name) return f.type;
  for (const auto& a : kAliases)
    if (a.alias == name) return a.type;
  return std::nullopt;
}

int64_t dtype_storage_bytes(DType t, int64_t numel) { return (numel * dtype_bits(t) + 7) / 8; }

}  // namespace moekit
