// Every code of every 8- and 4-bit format (and every bf16/f16 code) decoded, round-tripped and
// compared with known values; encoding checked against a brute-force nearest-value oracle that
// shares no code with the codec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "moekit/float_formats.h"

namespace moekit {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Codec {
  const char* name;
  int bits;
  std::function<double(uint32_t)> decode;
  std::function<uint32_t(double)> encode;  // saturating where the format has a choice
};

std::vector<Codec> narrow_codecs() {
  return {
      {"e4m3", 8, [](uint32_t c) { return decode_e4m3(uint8_t(c)); }, [](double x) { return uint32_t(encode_e4m3(x)); }},
      {"e5m2", 8, [](uint32_t c) { return decode_e5m2(uint8_t(c)); }, [](double x) { return uint32_t(encode_e5m2(x)); }},
      {"ue4m3", 8, [](uint32_t c) { return decode_ue4m3(uint8_t(c)); }, [](double x) { return uint32_t(encode_ue4m3(x)); }},
      {"e2m1", 4, [](uint32_t c) { return decode_e2m1(uint8_t(c)); }, [](double x) { return uint32_t(encode_e2m1(x)); }},
      {"bf16", 16, [](uint32_t c) { return decode_bf16(uint16_t(c)); }, [](double x) { return uint32_t(encode_bf16(x)); }},
      {"f16", 16, [](uint32_t c) { return decode_f16(uint16_t(c)); }, [](double x) { return uint32_t(encode_f16(x)); }},
  };
}

// Every code that is not NaN encodes back to itself.
TEST(FloatFormats, EveryCodeRoundTrips) {
  for (const Codec& c : narrow_codecs()) {
    int nan_codes = 0;
    for (uint32_t code = 0; code < (1u << c.bits); ++code) {
      const double v = c.decode(code);
      if (std::isnan(v)) {
        ++nan_codes;
        EXPECT_TRUE(std::isnan(c.decode(c.encode(v)))) << c.name << " NaN code " << code;
        continue;
      }
      if (std::isinf(v)) continue;  // saturating encode maps inf to max; checked below
      EXPECT_EQ(c.encode(v), code) << c.name << " code 0x" << std::hex << code << " value " << v;
    }
    SCOPED_TRACE(c.name);
    if (std::string(c.name) == "e4m3") EXPECT_EQ(nan_codes, 2);     // 0x7F, 0xFF
    if (std::string(c.name) == "e5m2") EXPECT_EQ(nan_codes, 6);     // 0x7D-0x7F, 0xFD-0xFF
    if (std::string(c.name) == "ue4m3") EXPECT_EQ(nan_codes, 129);  // 0x7F and the 128 codes with bit 7 set
    if (std::string(c.name) == "e2m1") EXPECT_EQ(nan_codes, 0);
    if (std::string(c.name) == "bf16") EXPECT_EQ(nan_codes, 2 * 127);
    if (std::string(c.name) == "f16") EXPECT_EQ(nan_codes, 2 * 1023);
  }
}

TEST(FloatFormats, KnownValues) {
  EXPECT_EQ(encode_e4m3(448.0), 0x7E);
  EXPECT_EQ(decode_e4m3(0x7E), 448.0);
  EXPECT_EQ(decode_e4m3(0x38), 1.0);
  EXPECT_EQ(decode_e4m3(0x08), std::ldexp(1.0, -6));  // smallest normal
  EXPECT_EQ(decode_e4m3(0x01), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_EQ(decode_e4m3(0xB8), -1.0);
  EXPECT_TRUE(std::isnan(decode_e4m3(0x7F)));
  EXPECT_EQ(decode_e5m2(0x7B), 57344.0);
  EXPECT_EQ(decode_e5m2(0x7C), kInf);
  EXPECT_EQ(decode_e5m2(0x3C), 1.0);
  EXPECT_EQ(decode_e5m2(0x01), std::ldexp(1.0, -16));
  const double e2m1_values[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (uint8_t c = 0; c < 8; ++c) {
    EXPECT_EQ(decode_e2m1(c), e2m1_values[c]);
    EXPECT_EQ(decode_e2m1(c | 0x8), c == 0 ? -0.0 : -e2m1_values[c]);
    EXPECT_TRUE(std::signbit(decode_e2m1(c | 0x8)));
  }
  EXPECT_EQ(decode_e8m0(0x7F), 1.0);
  EXPECT_EQ(decode_e8m0(0x00), std::ldexp(1.0, -127));
  EXPECT_EQ(decode_e8m0(0xFE), std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(decode_e8m0(0xFF)));
  for (int c = 0; c < 255; ++c) EXPECT_EQ(encode_e8m0(decode_e8m0(uint8_t(c)), ScaleRounding::kTowardZero), c);
  EXPECT_EQ(decode_ue4m3(0x7E), 448.0);
  EXPECT_TRUE(std::isnan(decode_ue4m3(0x80)));
  EXPECT_EQ(encode_bf16(1.0), 0x3F80);
  EXPECT_EQ(encode_f16(65504.0), 0x7BFF);
  EXPECT_EQ(encode_f16(1.0), 0x3C00);
}

TEST(FloatFormats, SaturationAndSpecials) {
  // e4m3fn: 464 is the tie between 448 (mantissa 110, even) and 480 (not representable).
  EXPECT_EQ(encode_e4m3(463.99, Overflow::kNoSaturate), 0x7E);
  EXPECT_EQ(encode_e4m3(464.0, Overflow::kNoSaturate), 0x7E);
  EXPECT_EQ(encode_e4m3(464.01, Overflow::kNoSaturate), 0x7F);
  EXPECT_EQ(encode_e4m3(1e6, Overflow::kSaturate), 0x7E);
  EXPECT_EQ(encode_e4m3(-1e6, Overflow::kSaturate), 0xFE);
  EXPECT_EQ(encode_e4m3(kInf, Overflow::kSaturate), 0x7E);
  EXPECT_EQ(encode_e4m3(kInf, Overflow::kNoSaturate), 0x7F);
  EXPECT_EQ(encode_e4m3(-466.0, Overflow::kNoSaturate), 0xFF);
  EXPECT_EQ(encode_e4m3(kNaN), 0x7F);
  EXPECT_EQ(encode_e5m2(1e6, Overflow::kNoSaturate), 0x7C);
  EXPECT_EQ(encode_e5m2(-kInf, Overflow::kNoSaturate), 0xFC);
  EXPECT_EQ(encode_e5m2(-kInf, Overflow::kSaturate), 0xFB);
  EXPECT_EQ(encode_e5m2(kNaN), 0x7F);
  EXPECT_EQ(encode_e2m1(100.0), 0x7);
  EXPECT_EQ(encode_e2m1(-kInf), 0xF);
  EXPECT_EQ(encode_e2m1(kNaN), 0x7);
  EXPECT_EQ(encode_e2m1(-0.0), 0x8);
  EXPECT_EQ(encode_e2m1(0.25), 0x0);  // tie between 0 and 0.5: even code 0
  EXPECT_EQ(encode_e2m1(0.75), 0x2);  // tie between 0.5 (code 1) and 1.0 (code 2): even
  EXPECT_EQ(encode_e2m1(2.5), 0x4);   // tie between 2 (code 4) and 3 (code 5)
  EXPECT_EQ(encode_e2m1(5.0), 0x6);   // tie between 4 (code 6) and 6 (code 7)
  EXPECT_EQ(encode_ue4m3(-3.0), 0x00);
  EXPECT_EQ(encode_ue4m3(1e9), 0x7E);
  EXPECT_EQ(encode_ue4m3(kNaN), 0x7F);
  EXPECT_EQ(encode_bf16(1e39), 0x7F80);
  EXPECT_EQ(encode_bf16(kNaN), 0x7FC0);
  EXPECT_EQ(encode_f16(65520.0), 0x7C00);  // tie between 65504 and 65536 rounds to even: overflow
  EXPECT_EQ(encode_f16(65519.99), 0x7BFF);
  EXPECT_EQ(encode_e8m0(1.5, ScaleRounding::kUp), 0x80);
  EXPECT_EQ(encode_e8m0(1.5, ScaleRounding::kTowardZero), 0x7F);
  EXPECT_EQ(encode_e8m0(-1.5, ScaleRounding::kUp), 0x80);
  EXPECT_EQ(encode_e8m0(0.0, ScaleRounding::kUp), 0x00);
  EXPECT_EQ(encode_e8m0(1e-45, ScaleRounding::kUp), 0x00);
  EXPECT_EQ(encode_e8m0(1e39, ScaleRounding::kUp, Overflow::kSaturate), 0xFE);
  EXPECT_EQ(encode_e8m0(1e39, ScaleRounding::kUp, Overflow::kNoSaturate), 0xFF);
  EXPECT_EQ(encode_e8m0(kNaN, ScaleRounding::kUp), 0xFF);
}

TEST(FloatFormats, IntegersRoundHalfToEvenAndSaturate) {
  EXPECT_EQ(encode_i8(2.5), 2);
  EXPECT_EQ(encode_i8(3.5), 4);
  EXPECT_EQ(encode_i8(-2.5), -2);
  EXPECT_EQ(encode_i8(126.6), 127);
  EXPECT_EQ(encode_i8(1000), 127);
  EXPECT_EQ(encode_i8(-1000), -128);
  EXPECT_EQ(encode_i8(kNaN), 0);
  EXPECT_EQ(encode_u8(-3), 0);
  EXPECT_EQ(encode_u8(255.4), 255);
  EXPECT_EQ(encode_u8(300), 255);
  EXPECT_EQ(encode_i4(7.5), 7);
  EXPECT_EQ(encode_i4(6.5), 6);
  EXPECT_EQ(encode_i4(-8.5), -8);
  EXPECT_EQ(encode_i4(-100), -8);
  for (int v = -128; v <= 127; ++v) EXPECT_EQ(encode_i8(v), v);
  for (int v = 0; v <= 255; ++v) EXPECT_EQ(encode_u8(v), v);
  for (int v = -8; v <= 7; ++v) EXPECT_EQ(encode_i4(v), v);
}

// Brute-force oracle: the nearest finite value of the format; on a tie the code whose last bit is
// 0 (the even mantissa); beyond the largest finite value, whatever saturation says.
uint32_t oracle_encode(const Codec& c, double x) {
  uint32_t best = 0;
  double best_err = kInf;
  for (uint32_t code = 0; code < (1u << c.bits); ++code) {
    const double v = c.decode(code);
    if (!std::isfinite(v) || std::signbit(v) != std::signbit(x)) continue;
    const double err = std::fabs(v - x);
    if (err < best_err || (err == best_err && (code & 1) == 0 && (best & 1) == 1)) {
      best = code;
      best_err = err;
    }
  }
  return best;
}

TEST(FloatFormats, EncodingMatchesNearestValueOracle) {
  std::mt19937_64 rng(1234);
  for (const Codec& c : narrow_codecs()) {
    if (c.bits > 8) continue;  // the 16-bit oracle search would be slow; f16/bf16 checked vs CUDA
    SCOPED_TRACE(c.name);
    std::vector<double> finite;
    for (uint32_t code = 0; code < (1u << c.bits); ++code)
      if (std::isfinite(c.decode(code)) && !std::signbit(c.decode(code))) finite.push_back(c.decode(code));
    std::sort(finite.begin(), finite.end());
    const double max = finite.back();
    std::vector<double> inputs;
    for (size_t i = 0; i + 1 < finite.size(); ++i) {
      const double lo = finite[i], hi = finite[i + 1], mid = (lo + hi) / 2;
      inputs.insert(inputs.end(), {lo, mid, std::nextafter(mid, lo), std::nextafter(mid, hi), hi});
    }
    std::uniform_real_distribution<double> u(0, max * 1.02);
    for (int i = 0; i < 4000; ++i) inputs.push_back(u(rng));
    for (double x : inputs) {
      for (double s : {x, -x}) {
        if (std::string(c.name) == "ue4m3" && std::signbit(s)) continue;  // negatives clamp to 0 (tested above)
        if (std::fabs(s) > max) continue;                                  // saturation tested above
        ASSERT_EQ(c.encode(s), oracle_encode(c, s)) << "x=" << s;
      }
    }
  }
}

TEST(FloatFormats, PackedElementAccess) {
  uint8_t buf[4] = {0xD5, 0xD5, 0xD5, 0xD5};  // poisoned
  const double e2m1_in[8] = {0.5, -6, 3, 0, 1.5, -0.5, 4, 2};
  for (int i = 0; i < 8; ++i) store_element(buf, DType::kE2M1, i, e2m1_in[i]);
  EXPECT_EQ(buf[0], 0xF1);  // element 0 (0.5 = code 1) low nibble, element 1 (-6 = 0xF) high nibble
  for (int i = 0; i < 8; ++i) EXPECT_EQ(load_element(buf, DType::kE2M1, i), e2m1_in[i]);
  const int i4_in[8] = {-8, 7, -1, 0, 3, -3, 5, -5};
  for (int i = 0; i < 8; ++i) store_element(buf, DType::kI4, i, i4_in[i]);
  EXPECT_EQ(buf[0], 0x78);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(load_element(buf, DType::kI4, i), i4_in[i]);
}

TEST(FloatFormats, ElementAccessRoundTripsEveryDType) {
  for (DType t : all_dtypes()) {
    alignas(8) uint8_t buf[64] = {};
    const double values[4] = {1.0, -2.0, 0.5, 4.0};
    int n = 0;
    for (double v : values) {
      const bool representable = !(t == DType::kU8 || t == DType::kUE4M3 || t == DType::kE8M0) || v > 0;
      const bool integral = !dtype_is_floating(t);
      if (!representable || (integral && v != std::floor(v))) continue;
      store_element(buf, t, n, v);
      EXPECT_EQ(load_element(buf, t, n), v) << dtype_name(t) << " value " << v;
      ++n;
    }
  }
}

// The bulk reader equals load_element on every dtype, from every start offset (odd starts of the
// packed types begin in a high nibble), over random bytes that include every special code.
TEST(FloatFormats, LoadElementsEqualsLoadElement) {
  std::mt19937 rng(11);
  alignas(8) uint8_t buf[512];
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (DType t : all_dtypes()) {
    const int64_t capacity = 512 * 8 / dtype_bits(t);
    for (int64_t first : {int64_t{0}, int64_t{1}, int64_t{3}, capacity - 40}) {
      double got[40];
      load_elements(buf, t, first, 40, got);
      for (int64_t i = 0; i < 40; ++i) {
        const double want = load_element(buf, t, first + i);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got[i])) << dtype_name(t) << " element " << first + i;
        } else {
          EXPECT_EQ(got[i], want) << dtype_name(t) << " element " << first + i;
        }
      }
    }
  }
}

TEST(FloatFormats, MaxFinite) {
  EXPECT_EQ(dtype_max_finite(DType::kE4M3), 448.0);
  EXPECT_EQ(dtype_max_finite(DType::kE5M2), 57344.0);
  EXPECT_EQ(dtype_max_finite(DType::kE2M1), 6.0);
  EXPECT_EQ(dtype_max_finite(DType::kF16), 65504.0);
  EXPECT_EQ(dtype_max_finite(DType::kUE4M3), 448.0);
  EXPECT_EQ(dtype_max_finite(DType::kBF16), 0x1.FEp127);
}

}  // namespace
}  // namespace moekit
