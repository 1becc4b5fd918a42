// Host tensors for the layer tests (test_moe_reference.cpp, test_moe_quant_layers.cpp): creation,
// filling, and poisoning outputs so that an unwritten element shows.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "moekit/float_formats.h"
#include "moekit/tensor.h"

namespace moekit::test {

inline constexpr uint32_t kPoisonF32 = 0x7FC0DEADu;  // a quiet NaN with a payload
inline constexpr uint16_t kPoison16 = 0xFFFFu;       // bf16 and f16 NaN
inline constexpr int32_t kPoisonI32 = -12345;

inline Tensor make(DType dtype, std::vector<int64_t> shape) {
  auto r = Tensor::empty(dtype, std::span<const int64_t>(shape.data(), shape.size()));
  if (!r.ok()) throw Error(r.status());
  return std::move(r).value();
}

template <typename F>
void fill(const Tensor& t, F&& value_of_index) {
  for (int64_t i = 0; i < t.numel(); ++i) store_element(t.data(), t.dtype(), i, value_of_index(i));
}

inline Tensor from_values(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values) {
  Tensor t = make(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel()) throw std::runtime_error("from_values: size mismatch");
  fill(t, [&](int64_t i) { return values[static_cast<size_t>(i)]; });
  return t;
}

inline void poison(const Tensor& t) {
  if (t.data() == nullptr) return;
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DType::kF32: std::memcpy(t.data_as<uint32_t>() + i, &kPoisonF32, 4); break;
      case DType::kBF16:
      case DType::kF16: t.data_as<uint16_t>()[i] = kPoison16; break;
      case DType::kI32: t.data_as<int32_t>()[i] = kPoisonI32; break;
      default: throw std::runtime_error("poison: unexpected dtype");
    }
  }
}

inline bool is_poison(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32: {
      uint32_t bits;
      std::memcpy(&bits, t.data_as<uint32_t>() + i, 4);
      return bits == kPoisonF32;
    }
    case DType::kBF16:
    case DType::kF16: return t.data_as<uint16_t>()[i] == kPoison16;
    case DType::kI32: return t.data_as<int32_t>()[i] == kPoisonI32;
    default: return false;
  }
}

inline int64_t count_poison(const Tensor& t) {
  int64_t n = 0;
  for (int64_t i = 0; i < t.numel(); ++i) n += is_poison(t, i) ? 1 : 0;
  return n;
}

inline double value_at(const Tensor& t, int64_t i) { return load_element(t.data(), t.dtype(), i); }

}  // namespace moekit::test
