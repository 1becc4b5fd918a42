// Our host conversions against NVIDIA's (cuda_fp8.h, cuda_fp4.h, cuda_bf16.h, cuda_fp16.h host
// paths), an implementation written independently of ours, over every f16 and bf16 value and a
// million random float32 bit patterns.
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "moekit/float_formats.h"

namespace moekit {
namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

std::vector<float> test_inputs() {
  std::vector<float> xs;
  for (uint32_t h = 0; h < 65536; ++h) {
    xs.push_back(from_bits(h << 16));  // every bf16 value
    __half_raw r;
    r.x = static_cast<unsigned short>(h);
    xs.push_back(__half2float(__half(r)));  // every f16 value
  }
  std::mt19937 rng(42);
  for (int i = 0; i < 1000000; ++i) xs.push_back(from_bits(rng()));
  // Values near every fp8/fp4 code and their midpoints.
  for (int c = 0; c < 256; ++c) {
    const float v = static_cast<float>(decode_e4m3(uint8_t(c)));
    for (float d : {-1e-3f, 0.f, 1e-3f}) xs.push_back(v * (1 + d));
  }
  return xs;
}

TEST(FloatFormatsVsCuda, Fp8EncodeMatchesEverywhere) {
  for (float x : test_inputs()) {
    for (auto sat : {__NV_SATFINITE, __NV_NOSAT}) {
      const Overflow ov = sat == __NV_SATFINITE ? Overflow::kSaturate : Overflow::kNoSaturate;
      ASSERT_EQ(encode_e4m3(x, ov), __nv_cvt_float_to_fp8(x, sat, __NV_E4M3)) << "e4m3 x=" << x << " sat=" << sat;
      ASSERT_EQ(encode_e5m2(x, ov), __nv_cvt_float_to_fp8(x, sat, __NV_E5M2)) << "e5m2 x=" << x << " sat=" << sat;
    }
  }
}

TEST(FloatFormatsVsCuda, Fp4AndE8m0EncodeMatchEverywhere) {
  for (float x : test_inputs()) {
    ASSERT_EQ(encode_e2m1(x), __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)) << "e2m1 x=" << x;
    for (auto sat : {__NV_SATFINITE, __NV_NOSAT}) {
      const Overflow ov = sat == __NV_SATFINITE ? Overflow::kSaturate : Overflow::kNoSaturate;
      ASSERT_EQ(encode_e8m0(x, ScaleRounding::kTowardZero, ov), __nv_cvt_float_to_e8m0(x, sat, cudaRoundZero)) << "e8m0 rz x=" << x;
      ASSERT_EQ(encode_e8m0(x, ScaleRounding::kUp, ov), __nv_cvt_float_to_e8m0(x, sat, cudaRoundPosInf)) << "e8m0 rp x=" << x;
    }
  }
}

TEST(FloatFormatsVsCuda, Bf16AndF16EncodeMatchEverywhere) {
  for (float x : test_inputs()) {
    const __nv_bfloat16_raw b = __float2bfloat16_rn(x);
    const __half_raw h = __float2half_rn(x);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(decode_bf16(encode_bf16(x))));
      EXPECT_TRUE(std::isnan(decode_f16(encode_f16(x))));
      continue;
    }
    ASSERT_EQ(encode_bf16(x), b.x) << "bf16 x=" << x;
    ASSERT_EQ(encode_f16(x), h.x) << "f16 x=" << x;
  }
}

TEST(FloatFormatsVsCuda, DecodeEveryCode) {
  for (int c = 0; c < 256; ++c) {
    const auto code = static_cast<__nv_fp8_storage_t>(c);
    const float e4m3 = __half2float(__half(__nv_cvt_fp8_to_halfraw(code, __NV_E4M3)));
    const float e5m2 = __half2float(__half(__nv_cvt_fp8_to_halfraw(code, __NV_E5M2)));
    if (std::isnan(e4m3)) EXPECT_TRUE(std::isnan(decode_e4m3(uint8_t(c))));
    else EXPECT_EQ(decode_e4m3(uint8_t(c)), e4m3) << c;
    if (std::isnan(e5m2)) EXPECT_TRUE(std::isnan(decode_e5m2(uint8_t(c))));
    else EXPECT_EQ(decode_e5m2(uint8_t(c)), e5m2) << c;
    const float e8m0 = __bfloat162float(__nv_bfloat16(__nv_cvt_e8m0_to_bf16raw(code)));
    if (c == 0xFF) EXPECT_TRUE(std::isnan(decode_e8m0(uint8_t(c))));
    else EXPECT_EQ(decode_e8m0(uint8_t(c)), e8m0) << c;
  }
  for (int c = 0; c < 16; ++c) {
    const float v = __half2float(__half(__nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>(c), __NV_E2M1)));
    EXPECT_EQ(decode_e2m1(uint8_t(c)), v) << c;
  }
}

}  // namespace
}  // namespace moekit
