#include "io/safetensors_dtypes.h"

#include <array>

#include "moekit/safetensors.h"

namespace moekit {
namespace io {
namespace {

// The dtypes of huggingface/safetensors (0.6), in its order.
constexpr std::array<SafetensorsDtype, 22> kDtypes{{
    {"BOOL", 8, std::nullopt},
    {"F4", 4, DType::kE2M1},
    {"F6_E2M3", 6, std::nullopt},
    {"F6_E3M2", 6, std::nullopt},
    {"U8", 8, DType::kU8},
    {"I8", 8, DType::kI8},
    {"F8_E5M2", 8, DType::kE5M2},
    {"F8_E4M3", 8, DType::kE4M3},
    {"F8_E8M0", 8, DType::kE8M0},
    {"F8_E4M3FNUZ", 8, std::nullopt},
    {"F8_E5M2FNUZ", 8, std::nullopt},
    {"I16", 16, std::nullopt},
    {"U16", 16, std::nullopt},
    {"F16", 16, DType::kF16},
    {"BF16", 16, DType::kBF16},
    {"I32", 32, DType::kI32},
    {"U32", 32, std::nullopt},
    {"F32", 32, DType::kF32},
    {"C64", 64, std::nullopt},
    {"F64", 64, DType::kF64},
    {"I64", 64, DType::kI64},
    {"U64", 64, std::nullopt},
}};

constexpr std::array<std::string_view, kDtypes.size()> kNames = [] {
  std::array<std::string_view, kDtypes.size()> a{};
  for (size_t i = 0; i < kDtypes.size(); ++i) a[i] = kDtypes[i].name;
  return a;
}();

}  // namespace

const SafetensorsDtype* find_safetensors_dtype(std::string_view name) {
  for (const auto& d : kDtypes)
    if (d.name == name) return &d;
  return nullptr;
}

std::span<const std::string_view> safetensors_dtype_names() { return kNames; }

}  // namespace io

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  const io::SafetensorsDtype* d = io::find_safetensors_dtype(name);
  return d == nullptr ? std::nullopt : d->dtype;
}

std::optional<std::string_view> safetensors_dtype_name(DType t) {
  for (const auto& d : io::kDtypes)
    if (d.dtype == t) return d.name;
  return std::nullopt;
}

}  // namespace moekit
