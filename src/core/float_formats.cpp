// One generic codec for small binary floating-point formats; each named format is a parameter set.
// Encoding works in double: the inputs (float or double) are exact there, and every quotient by a
// power of two below is exact, so a single std::nearbyint gives round-to-nearest-even.
#include "moekit/float_formats.h"

#include <array>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>

namespace moekit {
namespace {

struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  bool has_sign;
  bool ieee_specials;  // all-ones exponent is inf (mantissa 0) or NaN (otherwise)
  bool fn_nan;         // e4m3fn style: only all-ones exponent and mantissa is NaN
  uint32_t nan_code;   // canonical NaN (positive); unused when the format has no NaN
  uint32_t max_code;   // largest finite magnitude code

  int emin() const { return 1 - bias; }
  uint32_t sign_bit() const { return has_sign ? (1u << (exp_bits + man_bits)) : 0u; }
  uint32_t exp_mask() const { return (1u << exp_bits) - 1; }
  uint32_t man_mask() const { return (1u << man_bits) - 1; }
  bool has_nan() const { return ieee_specials || fn_nan; }
};

constexpr MiniFloat kBF16{8, 7, 127, true, true, false, 0x7FC0, 0x7F7F};
constexpr MiniFloat kF16{5, 10, 15, true, true, false, 0x7E00, 0x7BFF};
constexpr MiniFloat kE4M3{4, 3, 7, true, false, true, 0x7F, 0x7E};
constexpr MiniFloat kE5M2{5, 2, 15, true, true, false, 0x7F, 0x7B};
constexpr MiniFloat kE2M1{2, 1, 1, true, false, false, 0, 0x7};
constexpr MiniFloat kUE4M3{4, 3, 7, false, false, true, 0x7F, 0x7E};

double decode(const MiniFloat& f, uint32_t code) {
  const uint32_t width = f.exp_bits + f.man_bits + (f.has_sign ? 1 : 0);
  if (code >> width) return std::numeric_limits<double>::quiet_NaN();  // not a code of this format
  const bool neg = f.has_sign && (code & f.sign_bit());
  const uint32_t e = (code >> f.man_bits) & f.exp_mask();
  const uint32_t m = code & f.man_mask();
  double v;
  if (f.ieee_specials && e == f.exp_mask()) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (f.fn_nan && e == f.exp_mask() && m == f.man_mask()) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), f.emin() - f.man_bits);
  } else {
    v = std::ldexp(static_cast<double>(m | (1u << f.man_bits)), static_cast<int>(e) - f.bias - f.man_bits);
  }
  return neg ? -v : v;
}

uint32_t on_overflow(const MiniFloat& f, uint32_t sign, Overflow ov) {
  if (ov == Overflow::kSaturate || !f.has_nan()) return sign | f.max_code;
  if (f.ieee_specials) return sign | (f.exp_mask() << f.man_bits);  // infinity
  return sign | f.nan_code;  // e4m3fn: an overflow keeps its sign (0xFF); a NaN input does not
}

// Rounds |x| to the format's grid at its binade (or the subnormal grid), ties to even.
double round_to_grid(const MiniFloat& f, double a) {
  int e = 0;
  std::frexp(a, &e);
  const int exponent = std::max(e - 1, f.emin());
  const double quantum = std::ldexp(1.0, exponent - f.man_bits);
  return std::nearbyint(a / quantum) * quantum;
}

uint32_t encode(const MiniFloat& f, double x, Overflow ov) {
  if (std::isnan(x)) return f.has_nan() ? f.nan_code : f.max_code;  // e2m1: NaN -> +max, as CUDA
  uint32_t sign = std::signbit(x) ? f.sign_bit() : 0u;
  double a = std::fabs(x);
  if (!f.has_sign && std::signbit(x)) return 0;  // unsigned formats clamp negatives to zero
  if (std::isinf(a)) return on_overflow(f, sign, ov);
  const double v = round_to_grid(f, a);
  if (v > decode(f, f.max_code)) return on_overflow(f, sign, ov);
  if (v == 0) return sign;
  int e = 0;
  std::frexp(v, &e);
  const int exponent = e - 1;
  if (exponent < f.emin()) {
    return sign | static_cast<uint32_t>(v / std::ldexp(1.0, f.emin() - f.man_bits));
  }
  const uint32_t mant = static_cast<uint32_t>(v / std::ldexp(1.0, exponent - f.man_bits)) & f.man_mask();
  return sign | (static_cast<uint32_t>(exponent + f.bias) << f.man_bits) | mant;
}

template <typename Int>
Int encode_int(double x, double lo, double hi) {
  if (std::isnan(x)) return 0;
  const double r = std::nearbyint(x);
  return static_cast<Int>(r < lo ? lo : (r > hi ? hi : r));
}

}  // namespace

double decode_bf16(uint16_t bits) { return decode(kBF16, bits); }
double decode_f16(uint16_t bits) { return decode(kF16, bits); }
double decode_e4m3(uint8_t code) { return decode(kE4M3, code); }
double decode_e5m2(uint8_t code) { return decode(kE5M2, code); }
double decode_e2m1(uint8_t nibble) { return decode(kE2M1, nibble & 0xFu); }
double decode_ue4m3(uint8_t code) { return decode(kUE4M3, code); }
double decode_e8m0(uint8_t code) {
  return code == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, int(code) - 127);
}

uint16_t encode_bf16(double x) { return static_cast<uint16_t>(encode(kBF16, x, Overflow::kNoSaturate)); }
uint16_t encode_f16(double x) { return static_cast<uint16_t>(encode(kF16, x, Overflow::kNoSaturate)); }
uint8_t encode_e4m3(double x, Overflow ov) { return static_cast<uint8_t>(encode(kE4M3, x, ov)); }
uint8_t encode_e5m2(double x, Overflow ov) { return static_cast<uint8_t>(encode(kE5M2, x, ov)); }
uint8_t encode_e2m1(double x) { return static_cast<uint8_t>(encode(kE2M1, x, Overflow::kSaturate)); }
uint8_t encode_ue4m3(double x) { return static_cast<uint8_t>(encode(kUE4M3, x, Overflow::kSaturate)); }

uint8_t encode_e8m0(double x, ScaleRounding rounding, Overflow ov) {
  if (std::isnan(x)) return 0xFF;
  const double a = std::fabs(x);
  if (std::isinf(a)) return ov == Overflow::kSaturate ? 0xFE : 0xFF;
  if (a == 0) return 0;
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int p = e - 1;                        // floor(log2 a)
  if (rounding == ScaleRounding::kUp && m != 0.5) p += 1;
  if (p < -127) return 0;
  if (p > 127) return ov == Overflow::kSaturate ? 0xFE : 0xFF;
  return static_cast<uint8_t>(p + 127);
}

int8_t encode_i8(double x) { return encode_int<int8_t>(x, -128, 127); }
uint8_t encode_u8(double x) { return encode_int<uint8_t>(x, 0, 255); }
int8_t encode_i4(double x) { return encode_int<int8_t>(x, -8, 7); }

double dtype_max_finite(DType t) {
  switch (t) {
    case DType::kF64: return std::numeric_limits<double>::max();
    case DType::kF32: return std::numeric_limits<float>::max();
    case DType::kF16: return decode(kF16, kF16.max_code);
    case DType::kBF16: return decode(kBF16, kBF16.max_code);
    case DType::kE4M3: return decode(kE4M3, kE4M3.max_code);
    case DType::kE5M2: return decode(kE5M2, kE5M2.max_code);
    case DType::kE2M1: return decode(kE2M1, kE2M1.max_code);
    case DType::kUE4M3: return decode(kUE4M3, kUE4M3.max_code);
    case DType::kE8M0: return std::ldexp(1.0, 127);
    case DType::kI64: return static_cast<double>(std::numeric_limits<int64_t>::max());
    case DType::kI32: return std::numeric_limits<int32_t>::max();
    case DType::kI8: return 127;
    case DType::kU8: return 255;
    case DType::kI4: return 7;
  }
  return 0;
}

double load_element(const void* base, DType t, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(base);
  auto read = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(v)), sizeof(v));
    return v;
  };
  switch (t) {
    case DType::kF64: return read(double{});
    case DType::kF32: return read(float{});
    case DType::kF16: return decode_f16(read(uint16_t{}));
    case DType::kBF16: return decode_bf16(read(uint16_t{}));
    case DType::kE4M3: return decode_e4m3(p[i]);
    case DType::kE5M2: return decode_e5m2(p[i]);
    case DType::kUE4M3: return decode_ue4m3(p[i]);
    case DType::kE8M0: return decode_e8m0(p[i]);
    case DType::kI64: return static_cast<double>(read(int64_t{}));
    case DType::kI32: return read(int32_t{});
    case DType::kI8: return static_cast<int8_t>(p[i]);
    case DType::kU8: return p[i];
    case DType::kI4: {
      const uint8_t nib = (p[i / 2] >> (4 * (i % 2))) & 0xF;
      return static_cast<int>(nib) - ((nib & 0x8) ? 16 : 0);
    }
    case DType::kE2M1: return decode_e2m1((p[i / 2] >> (4 * (i % 2))) & 0xF);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

void store_element(void* base, DType t, int64_t i, double v) {
  auto* p = static_cast<uint8_t*>(base);
  auto write = [&](auto value) { std::memcpy(p + i * static_cast<int64_t>(sizeof(value)), &value, sizeof(value)); };
  auto write_nibble = [&](uint8_t nib) {
    uint8_t& byte = p[i / 2];
    const int shift = 4 * static_cast<int>(i % 2);
    byte = static_cast<uint8_t>((byte & ~(0xF << shift)) | ((nib & 0xF) << shift));
  };
  switch (t) {
    case DType::kF64: write(v); return;
    case DType::kF32: write(static_cast<float>(v)); return;
    case DType::kF16: write(encode_f16(v)); return;
    case DType::kBF16: write(encode_bf16(v)); return;
    case DType::kE4M3: p[i] = encode_e4m3(v); return;
    case DType::kE5M2: p[i] = encode_e5m2(v); return;
    case DType::kUE4M3: p[i] = encode_ue4m3(v); return;
    case DType::kE8M0: p[i] = encode_e8m0(v, ScaleRounding::kUp); return;
    case DType::kI64: write(static_cast<int64_t>(std::nearbyint(v))); return;
    case DType::kI32: write(static_cast<int32_t>(std::nearbyint(v))); return;
    case DType::kI8: p[i] = static_cast<uint8_t>(encode_i8(v)); return;
    case DType::kU8: p[i] = encode_u8(v); return;
    case DType::kI4: write_nibble(static_cast<uint8_t>(encode_i4(v))); return;
    case DType::kE2M1: write_nibble(encode_e2m1(v)); return;
  }
}

void load_elements(const void* base, DType t, int64_t first, int64_t n, double* dst) {
  const auto* p = static_cast<const uint8_t*>(base);
  // Decoded values of every 8-bit e4m3 code and every 4-bit e2m1/i4 code, built once.
  static const auto e4m3 = [] {
    std::array<double, 256> v{};
    for (int c = 0; c < 256; ++c) v[c] = decode_e4m3(static_cast<uint8_t>(c));
    return v;
  }();
  static const auto e2m1 = [] {
    std::array<double, 16> v{};
    for (int c = 0; c < 16; ++c) v[c] = decode_e2m1(static_cast<uint8_t>(c));
    return v;
  }();
  static const auto i4 = [] {
    std::array<double, 16> v{};
    for (int c = 0; c < 16; ++c) v[c] = c < 8 ? c : c - 16;
    return v;
  }();
  auto nibbles = [&](const std::array<double, 16>& table) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = first + i;
      dst[i] = table[(p[j / 2] >> (4 * (j % 2))) & 0xF];
    }
  };
  switch (t) {
    case DType::kF32:
      for (int64_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, p + 4 * (first + i), 4);
        dst[i] = v;
      }
      return;
    case DType::kBF16:
      // bf16 is the upper half of an f32: widening the bits is exact (NaN stays NaN).
      for (int64_t i = 0; i < n; ++i) {
        uint16_t b;
        std::memcpy(&b, p + 2 * (first + i), 2);
        const uint32_t bits = static_cast<uint32_t>(b) << 16;
        float v;
        std::memcpy(&v, &bits, 4);
        dst[i] = v;
      }
      return;
    case DType::kE4M3:
      for (int64_t i = 0; i < n; ++i) dst[i] = e4m3[p[first + i]];
      return;
    case DType::kI8:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<int8_t>(p[first + i]);
      return;
    case DType::kE2M1: nibbles(e2m1); return;
    case DType::kI4: nibbles(i4); return;
    default:
      for (int64_t i = 0; i < n; ++i) dst[i] = load_element(base, t, first + i);
      return;
  }
}

}  // namespace moekit
