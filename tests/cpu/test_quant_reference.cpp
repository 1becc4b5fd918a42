// The reference quantizers: weights whose dequantized values are known by hand, activation
// quantizers against hand-computed codes, every validation message, and random data against a
// brute-force nearest-code oracle that shares no encoding code with the library.
#include "cpu/quant_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "moekit/float_formats.h"
#include "moekit/tensor.h"

namespace moekit {
namespace {

using cpu::Gemm;

// A host tensor; values are stored with store_element (exact for the values used here).
Tensor make(DType t, std::initializer_list<int64_t> shape, const std::vector<double>& v = {}) {
  Tensor x = Tensor::empty(t, shape).value();
  std::memset(x.data(), 0, static_cast<size_t>(x.storage_bytes()));
  for (size_t i = 0; i < v.size(); ++i) store_element(x.data(), t, static_cast<int64_t>(i), v[i]);
  return x;
}

// One layer: the problem, its weights, and the storage behind the weight views.
struct Layer {
  MoeProblem p;
  MoeWeights w;
  std::vector<Tensor> owned;

  Layer(QuantScheme q, int E, int H, int I) {
    p.num_experts = E, p.top_k = 1, p.hidden = H, p.intermediate = I, p.quant = q;
    p.activation.kind = Activation::kIdentity;  // gemm1_rows = I
  }
  void set(TensorView& field, Tensor t) {
    owned.push_back(std::move(t));
    field = owned.back().view();
  }
  std::string error() const {
    const Status s = cpu::validate_quantization(p, w);
    return s.ok() ? std::string("OK") : s.message();
  }
  std::vector<double> dequant(Gemm g, int e) const {
    std::vector<double> out;
    cpu::dequantize_weight(p, w, g, e, out);
    return out;
  }
  std::vector<double> quant(Gemm g, std::vector<double> rows, std::vector<int32_t> experts = {}) const {
    const int64_t K = g == Gemm::k1 ? p.hidden : p.intermediate;
    cpu::quantize_activations(p, w, g, rows, K, experts);
    return rows;
  }
};

// A value with an exact e4m3/e2m1/i4 code, from an index (a small repeating pattern).
double e4m3_pattern(int64_t i) { return std::ldexp(static_cast<double>(i % 9) - 4.0, static_cast<int>(i % 5) - 2); }
double e2m1_pattern(int64_t i) { return decode_e2m1(static_cast<uint8_t>(i % 16)); }
double i4_pattern(int64_t i) { return static_cast<double>((i * 7) % 16) - 8.0; }

std::vector<double> pattern(int64_t n, double (*f)(int64_t)) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(f(i));
  return v;
}

TEST(QuantNone, WeightsInActivationDtypeAndActivationsUntouched) {
  Layer L(QuantScheme::kNone, 2, 4, 2);
  L.set(L.w.w13, make(DType::kBF16, {2, 2, 4}, pattern(16, [](int64_t i) { return 0.25 * double(i) - 1; })));
  L.set(L.w.w2, make(DType::kBF16, {2, 4, 2}, pattern(16, [](int64_t i) { return -0.5 * double(i); })));
  ASSERT_EQ(L.error(), "OK");
  const auto w13 = L.dequant(Gemm::k1, 1);
  ASSERT_EQ(w13.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(w13[i], 0.25 * (8 + i) - 1);
  EXPECT_EQ(L.dequant(Gemm::k2, 0)[3], -1.5);
  const std::vector<double> rows = {0.1, -3.3, 1e30, 0, 7, 8, 9, 10};
  EXPECT_EQ(L.quant(Gemm::k1, rows), rows);  // not even rounded to bf16

  L.set(L.w.w13, make(DType::kF32, {2, 2, 4}));
  EXPECT_EQ(L.error(), "w13: dtype f32 does not match bf16 required by none (the activation dtype)");
  L.set(L.w.w13, make(DType::kBF16, {2, 2, 4}));
  L.set(L.w.w13_scale, make(DType::kF32, {2}));
  EXPECT_EQ(L.error(), "w13_scale: given but none has no weight scales");
  L.w.w13_scale = {};
  L.w.w2 = {};
  EXPECT_EQ(L.error(), "w2: required but not given");
  L.p.activation_dtype = DType::kE4M3;
  EXPECT_EQ(L.error(), "activation_dtype: e4m3 is not f32, f16 or bf16");
}

Layer fp8_per_tensor() {
  Layer L(QuantScheme::kFp8PerTensor, 2, 4, 2);
  L.set(L.w.w13, make(DType::kE4M3, {2, 2, 4}, pattern(16, e4m3_pattern)));
  L.set(L.w.w2, make(DType::kE4M3, {2, 4, 2}, pattern(16, e4m3_pattern)));
  L.set(L.w.w13_scale, make(DType::kF32, {2}, {0.5, 4}));
  L.set(L.w.w2_scale, make(DType::kF32, {2}, {3, 0.125}));
  return L;
}

TEST(QuantFp8PerTensor, WeightIsCodeTimesExpertScale) {
  Layer L = fp8_per_tensor();
  ASSERT_EQ(L.error(), "OK");
  const auto e0 = L.dequant(Gemm::k1, 0), e1 = L.dequant(Gemm::k1, 1), w2 = L.dequant(Gemm::k2, 1);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(e0[i], e4m3_pattern(i) * 0.5);
    EXPECT_EQ(e1[i], e4m3_pattern(8 + i) * 4);
    EXPECT_EQ(w2[i], e4m3_pattern(8 + i) * 0.125);
  }
}

TEST(QuantFp8PerTensor, StaticScalarScaleRoundsToNearestEvenAndSaturates) {
  Layer L = fp8_per_tensor();
  L.set(L.w.w13_input_scale, make(DType::kF32, {}, {0.5}));
  ASSERT_EQ(L.error(), "OK");
  EXPECT_EQ(encode_e4m3(448.0), 0x7E);
  EXPECT_EQ(encode_e4m3(1.0625), 0x38);  // tie between 1.0 (0x38) and 1.125 (0x39): even wins
  EXPECT_EQ(encode_e4m3(1.1875), 0x3A);  // tie between 1.125 and 1.25 (0x3A)
  // x / 0.5:       2   448   600->448  -2000->-448  1.0625->1  1.1875->1.25  0   -0.25
  const auto q = L.quant(Gemm::k1, {1.0, 224, 300, -1000, 0.53125, 0.59375, 0, -0.125});
  EXPECT_EQ(q, (std::vector<double>{1.0, 224, 224, -224, 0.5, 0.625, 0, -0.125}));
  EXPECT_EQ(q[1], decode_e4m3(0x7E) * 0.5);
}

TEST(QuantFp8PerTensor, StaticPerExpertScale) {
  Layer L = fp8_per_tensor();
  L.set(L.w.w2_input_scale, make(DType::kF32, {2}, {1, 0.5}));
  ASSERT_EQ(L.error(), "OK");
  // 300 with s=1 rounds to 288 (step 32 above 256); with s=0.5, 600 saturates to 448 -> 224.
  EXPECT_EQ(L.quant(Gemm::k2, {300, 1, 300, 1}, {0, 1}), (std::vector<double>{288, 1, 224, 1}));
  EXPECT_EQ(L.quant(Gemm::k2, {300, 1, 300, 1}, {1}), (std::vector<double>{224, 1, 224, 1}));  // one for all
  L.set(L.w.w2_input_scale, make(DType::kF32, {2}, {0, 1}));  // a zero scale: zeros, not 0/0 = NaN
  EXPECT_EQ(L.quant(Gemm::k2, {300, 1, 300, 1}, {0, 1}), (std::vector<double>{0, 0, 288, 1}));
}

// docs/quantization.md: "a zero or negative static scale yields zero codes". Without the rule a
// negative scale would quantize -x / |s| and give back about x, as if the scale were valid.
TEST(QuantFp8PerTensor, NegativeStaticScaleGivesZeros) {
  Layer L = fp8_per_tensor();
  L.set(L.w.w13_input_scale, make(DType::kF32, {}, {-0.5}));
  EXPECT_EQ(L.quant(Gemm::k1, {1.0, -224, 3, 0.25, 0, 0, 0, 0}), std::vector<double>(8, 0.0));
  Layer W(QuantScheme::kW4A8, 1, 128, 64);
  W.p.group_size = 64;
  W.set(W.w.w13_input_scale, make(DType::kF32, {1}, {-1}));
  std::vector<double> row(128, 0.0);
  row[0] = 5, row[1] = -2;
  EXPECT_EQ(W.quant(Gemm::k1, row), std::vector<double>(128, 0.0));
}

// The quotient is static_cast<float>(x) / s in fp32, not x / s in double: find a double x whose
// float rounding lands the fp32 quotient exactly on the e4m3 tie 1.0625 (-> 1.0) while the exact
// quotient lies above it (-> 1.125).
TEST(QuantFp8PerTensor, QuotientIsFp32OfFloatInput) {
  const float T = 1.0625f;
  for (float s : {0.1f, 0.3f, 0.7f, 3.0f / 448.0f, 0.011f}) {
    float y = std::nextafter(T * s, 0.0f);
    for (int i = 0; i < 16; ++i, y = std::nextafter(y, 1.0f)) {
      const double x = y + 0.49 * (double(std::nextafter(y, 1.0f)) - y);
      if (y / s != T || static_cast<float>(x / s) == T) continue;
      Layer L = fp8_per_tensor();
      L.set(L.w.w13_input_scale, make(DType::kF32, {}, {s}));
      EXPECT_EQ(L.quant(Gemm::k1, {x, 0, 0, 0})[0], 1.0 * static_cast<double>(s));
      return;
    }
  }
  FAIL() << "no test value found";
}

TEST(QuantFp8PerTensor, DynamicScaleIsAmaxOverAllRows) {
  Layer L = fp8_per_tensor();
  // amax over both rows is 224 -> s = 0.5 for every row.
  EXPECT_EQ(L.quant(Gemm::k1, {224, 1, 0, 0, -0.53125, 0, 0, 0.3}),
            (std::vector<double>{224, 1, 0, 0, -0.5, 0, 0, decode_e4m3(encode_e4m3(0.6f)) * 0.5}));
  const auto z = L.quant(Gemm::k1, std::vector<double>(8, 0.0));  // zero amax: zeros, no NaN
  for (double v : z) EXPECT_EQ(v, 0.0);
}

TEST(QuantFp8PerTensor, ValidationMessages) {
  Layer L = fp8_per_tensor();
  const TensorView w13 = L.w.w13, w2_scale = L.w.w2_scale;
  L.w.w2_scale = {};
  EXPECT_EQ(L.error(), "w2_scale: required by fp8_per_tensor but not given");
  L.set(L.w.w2_scale, make(DType::kF32, {2, 4}));
  EXPECT_EQ(L.error(), "w2_scale: shape [2, 4] does not match [2] required by fp8_per_tensor ([E_local])");
  L.w.w2_scale = w2_scale;
  L.set(L.w.w13, make(DType::kE4M3, {2, 3, 4}));
  EXPECT_EQ(L.error(), "w13: shape [2, 3, 4] does not match [2, 2, 4] required by fp8_per_tensor "
                       "([E_local, gemm1_rows, H])");
  L.set(L.w.w13, make(DType::kE5M2, {2, 2, 4}));
  EXPECT_EQ(L.error(), "w13: dtype e5m2 does not match e4m3 required by fp8_per_tensor");
  L.w.w13 = w13;
  L.set(L.w.w13_input_scale, make(DType::kF32, {3}));
  EXPECT_EQ(L.error(), "w13_input_scale: shape [3] does not match [2] required by fp8_per_tensor ([] or [E_local])");
  L.set(L.w.w13_input_scale, make(DType::kBF16, {}));
  EXPECT_EQ(L.error(), "w13_input_scale: dtype bf16 does not match f32 required by fp8_per_tensor");
  L.w.w13_input_scale = {};
  L.set(L.w.w13_global_scale, make(DType::kF32, {2}));
  EXPECT_EQ(L.error(), "w13_global_scale: given but fp8_per_tensor has no global scales");
  L.w.w13_global_scale = {};
  float buf[4] = {1, 2, 3, 4};
  const int64_t shape[] = {2}, strides[] = {2};
  L.w.w13_scale = TensorView::create(buf, DType::kF32, shape, {}, Device::cuda(0)).value();
  EXPECT_EQ(L.error(), "w13_scale: f32[2] cuda:0 is not a host (cpu) tensor, which the CPU reference needs");
  L.w.w13_scale = TensorView::create(buf, DType::kF32, shape, strides).value();
  EXPECT_EQ(L.error(), "w13_scale: f32[2] cpu with strides [2] is not contiguous");
}

TEST(QuantFp8PerToken, PerChannelWeightsAndPerRowActivations) {
  Layer L(QuantScheme::kFp8PerToken, 2, 3, 2);
  L.set(L.w.w13, make(DType::kE4M3, {2, 2, 3}, pattern(12, e4m3_pattern)));
  L.set(L.w.w2, make(DType::kE4M3, {2, 3, 2}, pattern(12, e4m3_pattern)));
  L.set(L.w.w13_scale, make(DType::kF32, {2, 2}, {1, 2, 4, 8}));
  L.set(L.w.w2_scale, make(DType::kF32, {2, 3}, {1, 1, 1, 0.25, 0.5, 0.75}));
  ASSERT_EQ(L.error(), "OK");
  const auto w = L.dequant(Gemm::k1, 1);
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(w[n * 3 + k], e4m3_pattern(6 + n * 3 + k) * (n == 0 ? 4 : 8));
  EXPECT_EQ(L.dequant(Gemm::k2, 1)[5], e4m3_pattern(11) * 0.75);
  // Row 0: amax 448 -> s = 1; row 1: amax 896 -> s = 2; row 2: zero amax -> zeros.
  EXPECT_EQ(L.quant(Gemm::k1, {448, 1.0625, -3, 896, 2.125, 1, 0, 0, 0}),
            (std::vector<double>{448, 1, -3, 896, 2, 1, 0, 0, 0}));
  // A non-power-of-two scale: s = float(3) / 448 in fp32; the value is decode(q) * s in double.
  const float s = 3.0f / 448.0f;
  const auto q = L.quant(Gemm::k1, {3, 0.1, -1, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(q[0], 448 * static_cast<double>(s));
  EXPECT_EQ(q[1], decode_e4m3(encode_e4m3(0.1f / s)) * static_cast<double>(s));
  L.set(L.w.w13_scale, make(DType::kF32, {2}));
  EXPECT_EQ(L.error(), "w13_scale: shape [2] does not match [2, 2] required by fp8_per_token ([E_local, N])");
  L.set(L.w.w13_scale, make(DType::kF32, {2, 2}));
  L.set(L.w.w13_input_scale, make(DType::kF32, {}));
  EXPECT_EQ(L.error(), "w13_input_scale: given but fp8_per_token has no static input scales");
}

// H = 160 and I = 136: both GEMMs have a partial last 128-block in N and in K.
Layer fp8_block() {
  Layer L(QuantScheme::kFp8Block, 1, 160, 136);
  L.set(L.w.w13, make(DType::kE4M3, {1, 136, 160}, pattern(136 * 160, e4m3_pattern)));
  L.set(L.w.w2, make(DType::kE4M3, {1, 160, 136}, pattern(160 * 136, e4m3_pattern)));
  L.set(L.w.w13_scale, make(DType::kF32, {1, 2, 2}, {1, 2, 4, 8}));
  L.set(L.w.w2_scale, make(DType::kF32, {1, 2, 2}, {0.5, 0.25, 16, 32}));
  return L;
}

TEST(QuantFp8Block, WeightBlocksOf128x128WithPartialEdges) {
  Layer L = fp8_block();
  ASSERT_EQ(L.error(), "OK");
  const auto w13 = L.dequant(Gemm::k1, 0), w2 = L.dequant(Gemm::k2, 0);
  const double s13[] = {1, 2, 4, 8}, s2[] = {0.5, 0.25, 16, 32};
  for (int64_t n = 0; n < 136; ++n)
    for (int64_t k = 0; k < 160; ++k)
      ASSERT_EQ(w13[n * 160 + k], e4m3_pattern(n * 160 + k) * s13[(n / 128) * 2 + k / 128]) << n << "," << k;
  for (int64_t n = 0; n < 160; ++n)
    for (int64_t k = 0; k < 136; ++k)
      ASSERT_EQ(w2[n * 136 + k], e4m3_pattern(n * 136 + k) * s2[(n / 128) * 2 + k / 128]) << n << "," << k;
}

TEST(QuantFp8Block, ActivationsPerRowPer128WithPartialLastBlock) {
  Layer L = fp8_block();
  std::vector<double> row(160, 0.0);
  row[0] = 1.0625;  // block 0 has amax 448 (s = 1)
  row[5] = 448;
  row[130] = 7;     // block 1 = [128, 160) has amax 7: s = 7/448 = 2^-6
  row[131] = 3.5;   // 224 -> 3.5
  row[132] = 0.1;   // 6.4 -> 6.5 -> 0.1015625
  row[159] = -7;
  const auto q = L.quant(Gemm::k1, row);
  std::vector<double> want(160, 0.0);
  want[0] = 1, want[5] = 448, want[130] = 7, want[131] = 3.5, want[132] = 0.1015625, want[159] = -7;
  EXPECT_EQ(q, want);
  // gemm2: K = 136, last block [128, 136) of 8 columns; a zero block stays zero.
  std::vector<double> r2(136, 0.0);
  r2[3] = 1.1875;  // block 0 amax 1.1875: s = 1.1875/448, x/s = 448
  r2[135] = 0.75;  // block 1: s = 0.75/448
  const auto q2 = L.quant(Gemm::k2, r2);
  EXPECT_EQ(q2[3], 448 * static_cast<double>(1.1875f / 448.0f));
  EXPECT_EQ(q2[135], 448 * static_cast<double>(0.75f / 448.0f));
  EXPECT_EQ(q2[0], 0.0);
}

TEST(QuantFp8Block, ValidationMessages) {
  Layer L = fp8_block();
  L.set(L.w.w13_scale, make(DType::kF32, {1, 1, 2}));
  EXPECT_EQ(L.error(), "w13_scale: shape [1, 1, 2] does not match [1, 2, 2] required by fp8_block "
                       "([E_local, ceil(N/128), ceil(K/128)])");
  L.set(L.w.w13_scale, make(DType::kF16, {1, 2, 2}));
  EXPECT_EQ(L.error(), "w13_scale: dtype f16 does not match f32 required by fp8_block");
  L.set(L.w.w13_scale, make(DType::kF32, {1, 2, 2}));
  L.set(L.w.w13_zero_point, make(DType::kF32, {1, 2, 2}));
  EXPECT_EQ(L.error(), "w13_zero_point: given but fp8_block has no zero points");
  L.w.w13_zero_point = {};
  L.set(L.w.w2, make(DType::kBF16, {1, 160, 136}));
  EXPECT_EQ(L.error(), "w2: dtype bf16 does not match e4m3 required by fp8_block");
}

TEST(QuantInt8PerToken, W8A8RoundsHalfToEven) {
  Layer L(QuantScheme::kInt8PerToken, 1, 8, 2);
  L.set(L.w.w13, make(DType::kI8, {1, 2, 8}, {-128, 127, 1, -1, 0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
  L.set(L.w.w2, make(DType::kI8, {1, 8, 2}));
  L.set(L.w.w13_scale, make(DType::kF32, {1, 2}, {0.5, 0.03125}));
  L.set(L.w.w2_scale, make(DType::kF32, {1, 8}));
  ASSERT_EQ(L.error(), "OK");
  const auto w = L.dequant(Gemm::k1, 0);
  EXPECT_EQ(w[0], -64);
  EXPECT_EQ(w[1], 63.5);
  EXPECT_EQ(w[15], 15 * 0.03125);
  // Row 0: s = 1; row 1: s = 2 (x/s = 1.5 -> 2, 2.5 -> 2); row 2: zeros.
  EXPECT_EQ(L.quant(Gemm::k1, {127, -63.5, 0.5, 1.5, 2.5, -2.5, 100.4, 0,  //
                               254, 3, 5, -5, 0, 0, 0, 0,                   //
                               0, 0, 0, 0, 0, 0, 0, 0}),
            (std::vector<double>{127, -64, 0, 2, 2, -2, 100, 0, 254, 4, 4, -4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  L.set(L.w.w13, make(DType::kE4M3, {1, 2, 8}));
  EXPECT_EQ(L.error(), "w13: dtype e4m3 does not match i8 required by int8_per_token");
}

// H = 64, I = 32, group 32: w13 has two groups per row, w2 one.
Layer w4a16() {
  Layer L(QuantScheme::kW4A16, 2, 64, 32);
  L.p.group_size = 32;
  L.set(L.w.w13, make(DType::kI4, {2, 32, 64}, pattern(2 * 32 * 64, i4_pattern)));
  L.set(L.w.w2, make(DType::kI4, {2, 64, 32}, pattern(2 * 64 * 32, i4_pattern)));
  L.set(L.w.w13_scale, make(DType::kBF16, {2, 32, 2}, pattern(128, [](int64_t i) { return std::ldexp(1.0, int(i % 7) - 3); })));
  L.set(L.w.w2_scale, make(DType::kBF16, {2, 64, 1}, pattern(128, [](int64_t i) { return 0.75 * double(i % 3 + 1); })));
  return L;
}

TEST(QuantW4A16, GroupScalesWithAndWithoutZeroPoints) {
  Layer L = w4a16();
  ASSERT_EQ(L.error(), "OK");
  auto w = L.dequant(Gemm::k1, 1);
  for (int64_t n = 0; n < 32; ++n)
    for (int64_t k = 0; k < 64; ++k) {
      const int64_t si = (32 + n) * 2 + k / 32;
      ASSERT_EQ(w[n * 64 + k], i4_pattern(2048 + n * 64 + k) * std::ldexp(1.0, int(si % 7) - 3));
    }
  // Zero points in f32, fractional allowed: w = (q - z) * s.
  L.set(L.w.w13_zero_point, make(DType::kF32, {2, 32, 2}, pattern(128, [](int64_t i) { return double(i % 4) - 1.5; })));
  L.set(L.w.w2_zero_point, make(DType::kBF16, {2, 64, 1}, pattern(128, [](int64_t i) { return double(i % 3); })));
  ASSERT_EQ(L.error(), "OK");
  w = L.dequant(Gemm::k1, 0);
  for (int64_t n = 0; n < 32; ++n)
    for (int64_t k = 0; k < 64; ++k) {
      const int64_t si = n * 2 + k / 32;
      ASSERT_EQ(w[n * 64 + k], (i4_pattern(n * 64 + k) - (double(si % 4) - 1.5)) * std::ldexp(1.0, int(si % 7) - 3));
    }
  const auto w2 = L.dequant(Gemm::k2, 1);
  EXPECT_EQ(w2[33], (i4_pattern(2048 + 33) - double(65 % 3)) * 0.75 * double(65 % 3 + 1));
  const std::vector<double> rows(64, 0.3);
  EXPECT_EQ(L.quant(Gemm::k1, rows), rows);  // 16-bit activations: untouched
}

TEST(QuantW4A16, ValidationMessages) {
  Layer L = w4a16();
  L.p.group_size = 48;
  EXPECT_EQ(L.error(), "group_size=48 is not 32, 64 or 128 (required by w4a16)");
  L.p.group_size = 64;
  L.set(L.w.w13_scale, make(DType::kBF16, {2, 32, 1}));
  EXPECT_EQ(L.error(), "w2: K=I=32 is not a multiple of group_size=64 (w4a16)");
  L.p.group_size = 32;
  EXPECT_EQ(L.error(), "w13_scale: shape [2, 32, 1] does not match [2, 32, 2] required by w4a16 "
                       "([E_local, N, K/group_size])");
  L.set(L.w.w13_scale, make(DType::kE4M3, {2, 32, 2}));
  EXPECT_EQ(L.error(), "w13_scale: dtype e4m3 is not one of f32, f16, bf16 allowed by w4a16");
  L.set(L.w.w13_scale, make(DType::kBF16, {2, 32, 2}));
  L.set(L.w.w13_zero_point, make(DType::kF16, {2, 32, 2}));
  EXPECT_EQ(L.error(), "w13_zero_point: dtype f16 is not one of f32, bf16 allowed by w4a16 (f32 or the scale dtype)");
  L.set(L.w.w13_zero_point, make(DType::kF32, {2, 32}));
  EXPECT_EQ(L.error(), "w13_zero_point: shape [2, 32] does not match [2, 32, 2] required by w4a16 "
                       "([E_local, N, K/group_size])");
  L.w.w13_zero_point = {};
  L.set(L.w.w13, make(DType::kI8, {2, 32, 64}));
  EXPECT_EQ(L.error(), "w13: dtype i8 does not match i4 required by w4a16");
  L.w.w13 = {};
  EXPECT_EQ(L.error(), "w13: required but not given");
}

TEST(QuantW8A16, Int8GroupsWithF16Scales) {
  Layer L(QuantScheme::kW8A16, 1, 128, 64);
  L.p.group_size = 64;
  L.set(L.w.w13, make(DType::kI8, {1, 64, 128}, pattern(64 * 128, [](int64_t i) { return double(i % 256) - 128; })));
  L.set(L.w.w2, make(DType::kI8, {1, 128, 64}));
  L.set(L.w.w13_scale, make(DType::kF16, {1, 64, 2}, pattern(128, [](int64_t i) { return std::ldexp(1.0, -int(i % 9)); })));
  L.set(L.w.w2_scale, make(DType::kF16, {1, 128, 1}));
  ASSERT_EQ(L.error(), "OK");
  const auto w = L.dequant(Gemm::k1, 0);
  for (int64_t i = 0; i < 64 * 128; ++i)
    ASSERT_EQ(w[i], (double(i % 256) - 128) * std::ldexp(1.0, -int(((i / 128) * 2 + (i % 128) / 64) % 9)));
}

Layer mxfp4(QuantScheme q) {
  Layer L(q, 1, 64, 32);
  L.set(L.w.w13, make(DType::kE2M1, {1, 32, 64}, pattern(32 * 64, e2m1_pattern)));
  L.set(L.w.w2, make(DType::kE2M1, {1, 64, 32}, pattern(64 * 32, e2m1_pattern)));
  auto e8m0 = [](int64_t i) { return std::ldexp(1.0, int(i % 5) - 2); };
  L.set(L.w.w13_scale, make(DType::kE8M0, {1, 32, 2}, pattern(64, e8m0)));
  L.set(L.w.w2_scale, make(DType::kE8M0, {1, 64, 1}, pattern(64, e8m0)));
  return L;
}

TEST(QuantMxfp4, WeightIsCodeTimesPowerOfTwoPer32) {
  Layer L = mxfp4(QuantScheme::kMxfp4);
  ASSERT_EQ(L.error(), "OK");
  EXPECT_EQ(L.owned[2].data_as<uint8_t>()[0], 125);  // 2^-2 is e8m0 code 125
  const auto w = L.dequant(Gemm::k1, 0);
  for (int64_t n = 0; n < 32; ++n)
    for (int64_t k = 0; k < 64; ++k)
      ASSERT_EQ(w[n * 64 + k], e2m1_pattern(n * 64 + k) * std::ldexp(1.0, int((n * 2 + k / 32) % 5) - 2));
  const std::vector<double> rows(32, 1.3);
  EXPECT_EQ(L.quant(Gemm::k2, rows), rows);
  L.set(L.w.w13_scale, make(DType::kF32, {1, 32, 2}));
  EXPECT_EQ(L.error(), "w13_scale: dtype f32 does not match e8m0 required by mxfp4");
  Layer bad(QuantScheme::kMxfp4, 1, 48, 32);
  bad.set(bad.w.w13, make(DType::kE2M1, {1, 32, 48}));
  EXPECT_EQ(bad.error(), "w13: K=H=48 is not a multiple of 32, the mxfp4 scale block");
}

TEST(QuantMxfp4Mxfp8, ActivationsE4M3WithE8M0ScalePer32) {
  Layer L = mxfp4(QuantScheme::kMxfp4Mxfp8);
  ASSERT_EQ(L.error(), "OK");
  std::vector<double> row(64, 0.0);
  row[0] = 448, row[1] = 1.0625, row[2] = -0.1;  // block 0: amax/448 = 1 -> scale 2^0
  row[32] = 500, row[33] = -3;                   // block 1: 500/448 rounds up to 2: 250 -> 256
  EXPECT_EQ(encode_e8m0(500.0 / 448.0, ScaleRounding::kUp), 128);
  auto q = L.quant(Gemm::k1, row);
  std::vector<double> want(64, 0.0);
  want[0] = 448, want[1] = 1, want[2] = -0.1015625, want[32] = 512, want[33] = -3;
  EXPECT_EQ(q, want);
  // amax 56: 56/448 = 2^-3 exactly; a zero block stays zero.
  std::vector<double> r2(32, 0.0);
  r2[7] = 56, r2[8] = 0.1;
  q = L.quant(Gemm::k2, r2);
  EXPECT_EQ(q[7], 56);
  EXPECT_EQ(q[8], decode_e4m3(encode_e4m3(0.8)) / 8);
  EXPECT_EQ(q[0], 0.0);
}

constexpr double kNvSf[] = {0.5, 1, 1.5, 2, 448, 0.015625};  // exact ue4m3 values

Layer nvfp4() {
  Layer L(QuantScheme::kNvfp4, 2, 32, 16);
  L.set(L.w.w13, make(DType::kE2M1, {2, 16, 32}, pattern(2 * 16 * 32, e2m1_pattern)));
  L.set(L.w.w2, make(DType::kE2M1, {2, 32, 16}, pattern(2 * 32 * 16, e2m1_pattern)));
  auto sf = [](int64_t i) { return kNvSf[i % 6]; };
  L.set(L.w.w13_scale, make(DType::kUE4M3, {2, 16, 2}, pattern(64, sf)));
  L.set(L.w.w2_scale, make(DType::kUE4M3, {2, 32, 1}, pattern(64, sf)));
  L.set(L.w.w13_global_scale, make(DType::kF32, {2}, {0.5, 3}));
  L.set(L.w.w2_global_scale, make(DType::kF32, {2}, {1, 1}));
  L.set(L.w.w13_input_scale, make(DType::kF32, {}, {0.5}));
  L.set(L.w.w2_input_scale, make(DType::kF32, {2}, {0.5, 0.25}));
  return L;
}

TEST(QuantNvfp4, WeightIsCodeTimesBlockScaleTimesGlobal) {
  Layer L = nvfp4();
  ASSERT_EQ(L.error(), "OK");
  const auto w = L.dequant(Gemm::k1, 1);
  for (int64_t n = 0; n < 16; ++n)
    for (int64_t k = 0; k < 32; ++k)
      ASSERT_EQ(w[n * 32 + k], e2m1_pattern(512 + n * 32 + k) * kNvSf[((16 + n) * 2 + k / 16) % 6] * 3);
}

TEST(QuantNvfp4, ActivationsE2M1Per16WithGlobalScale) {
  Layer L = nvfp4();
  EXPECT_EQ(encode_ue4m3(2.0), 0x40);
  // g = 0.5, block 0 amax 6: sf = 6/(6*0.5) = 2, divisor 2*0.5 = 1; e2m1 ties go to the even code.
  std::vector<double> row = {6, 0.25, 0.75, 2.5, 5, 1.25, -6, 1.75, 3.5, -0.3, 0, 0, 0, 0, 0, 0};
  row.resize(32, 0.0);  // block 1: zero amax -> zeros
  auto q = L.quant(Gemm::k1, row);
  std::vector<double> want = {6, 0, 1, 2, 4, 1, -6, 2, 4, -0.5, 0, 0, 0, 0, 0, 0};
  want.resize(32, 0.0);
  EXPECT_EQ(q, want);
  // amax 5: sf = ue4m3(5/3) = 1.625, divisor 0.8125: 5/0.8125 = 6.15 -> 6 -> 6 * 1.625 * 0.5.
  row.assign(32, 0.0);
  row[0] = 5;
  EXPECT_EQ(L.quant(Gemm::k1, row)[0], 4.875);
  // gemm2: per-expert g; expert 1 (g = 0.25), amax 3: sf = 2, divisor 0.5.
  std::vector<double> r2(32, 0.0);
  r2[0] = 6, r2[16] = 3, r2[17] = 1, r2[18] = 0.3;
  q = L.quant(Gemm::k2, r2, {0, 1});
  EXPECT_EQ(q[0], 6);
  EXPECT_EQ(q[16], 3);
  EXPECT_EQ(q[17], 1);
  EXPECT_EQ(q[18], 0.25);
}

// The e2m1 quotient divides by the fp32 product d = fl(decode(sf) * g), not by the exact product:
// find g and x with x / d exactly on the e2m1 tie 1.25 (-> 1.0) but x / (1.625 g) above it.
TEST(QuantNvfp4, DivisorIsFp32Product) {
  for (float g : {0.37f, 0.1f, 0.013f, 1.7f, 0.29f, 0.77f}) {
    const float d = 1.625f * g;
    float x = std::nextafter(1.25f * d, 0.0f);
    for (int i = 0; i < 8; ++i, x = std::nextafter(x, 100.0f)) {
      if (x / d != 1.25f || double(x) / (1.625 * g) <= 1.25) continue;
      Layer L = nvfp4();
      L.set(L.w.w13_input_scale, make(DType::kF32, {}, {g}));
      std::vector<double> row(32, 0.0);
      row[0] = 9.75f * g;  // amax / (6 g) ~ 1.625: sf = 1.625
      row[1] = x;
      EXPECT_EQ(L.quant(Gemm::k1, row)[1], 1.0 * 1.625 * double(g));
      return;
    }
  }
  FAIL() << "no test value found";
}

TEST(QuantNvfp4, ValidationMessages) {
  Layer L = nvfp4();
  L.w.w13_global_scale = {};
  EXPECT_EQ(L.error(), "w13_global_scale: required by nvfp4 but not given");
  L.set(L.w.w13_global_scale, make(DType::kF32, {}));
  EXPECT_EQ(L.error(), "w13_global_scale: shape [] does not match [2] required by nvfp4 ([E_local])");
  L.set(L.w.w13_global_scale, make(DType::kF32, {2}));
  L.w.w2_input_scale = {};
  EXPECT_EQ(L.error(), "w2_input_scale: required by nvfp4 but not given");
  L.set(L.w.w2_input_scale, make(DType::kF32, {}));
  L.set(L.w.w2_scale, make(DType::kE4M3, {2, 32, 1}));
  EXPECT_EQ(L.error(), "w2_scale: dtype e4m3 does not match ue4m3 required by nvfp4");
  Layer bad(QuantScheme::kNvfp4, 2, 24, 16);
  bad.set(bad.w.w13, make(DType::kE2M1, {2, 16, 24}));
  EXPECT_EQ(bad.error(), "w13: K=H=24 is not a multiple of 16, the nvfp4 scale block");
}

TEST(QuantW4A8, Int4GroupsAndStaticE4M3Activations) {
  Layer L(QuantScheme::kW4A8, 1, 128, 64);
  L.p.group_size = 64;
  L.set(L.w.w13, make(DType::kI4, {1, 64, 128}, pattern(64 * 128, i4_pattern)));
  L.set(L.w.w2, make(DType::kI4, {1, 128, 64}));
  L.set(L.w.w13_scale, make(DType::kF32, {1, 64, 2}, pattern(128, [](int64_t i) { return 0.1 * double(i); })));
  L.set(L.w.w2_scale, make(DType::kF32, {1, 128, 1}));
  L.set(L.w.w13_input_scale, make(DType::kF32, {}, {0.25}));
  L.set(L.w.w2_input_scale, make(DType::kF32, {1}, {1}));
  ASSERT_EQ(L.error(), "OK");
  const auto w = L.dequant(Gemm::k1, 0);
  EXPECT_EQ(w[130], i4_pattern(130) * static_cast<double>(static_cast<float>(0.1 * 2)));
  std::vector<double> row(128, 0.0);
  row[0] = 112, row[1] = 200, row[2] = 0.265625, row[3] = -1e9;
  const auto q = L.quant(Gemm::k1, row);
  EXPECT_EQ(q[0], 112);
  EXPECT_EQ(q[1], 112);  // 800 saturates to 448
  EXPECT_EQ(q[2], 0.25);
  EXPECT_EQ(q[3], -112);
  L.set(L.w.w13_zero_point, make(DType::kF32, {1, 64, 2}));
  EXPECT_EQ(L.error(), "w13_zero_point: given but w4a8 has no zero points");
  L.w.w13_zero_point = {};
  L.set(L.w.w13_scale, make(DType::kBF16, {1, 64, 2}));
  EXPECT_EQ(L.error(), "w13_scale: dtype bf16 does not match f32 required by w4a8");
  L.set(L.w.w13_scale, make(DType::kF32, {1, 64, 2}));
  L.w.w13_input_scale = {};
  EXPECT_EQ(L.error(), "w13_input_scale: required by w4a8 but not given");
}

TEST(QuantPreQuantScale, MultipliesChannelsBeforeQuantization) {
  Layer L(QuantScheme::kNone, 2, 4, 2);
  L.set(L.w.w13, make(DType::kBF16, {2, 2, 4}));
  L.set(L.w.w2, make(DType::kBF16, {2, 4, 2}));
  L.set(L.w.w13_pre_quant_scale, make(DType::kBF16, {4}, {2, 0.5, 3, 1}));
  ASSERT_EQ(L.error(), "OK");
  EXPECT_EQ(L.quant(Gemm::k1, {1, 1, 0.1, -2}), (std::vector<double>{2, 0.5, 0.1 * 3, -2}));
  L.set(L.w.w13_pre_quant_scale, make(DType::kF32, {5}));
  EXPECT_EQ(L.error(), "w13_pre_quant_scale: shape [5] does not match [4] required by none ([H] or [E_local, H])");
  L.set(L.w.w13_pre_quant_scale, make(DType::kI8, {4}));
  EXPECT_EQ(L.error(), "w13_pre_quant_scale: dtype i8 is not one of f32, f16, bf16 allowed by a pre-quant scale");
  L.w.w13_pre_quant_scale = {};

  // Per expert, then fp8 per-token: the amax is taken after the AWQ scale.
  Layer F(QuantScheme::kFp8PerToken, 2, 3, 2);
  F.set(F.w.w13, make(DType::kE4M3, {2, 2, 3}));
  F.set(F.w.w2, make(DType::kE4M3, {2, 3, 2}));
  F.set(F.w.w13_scale, make(DType::kF32, {2, 2}));
  F.set(F.w.w2_scale, make(DType::kF32, {2, 3}));
  F.set(F.w.w13_pre_quant_scale, make(DType::kF32, {2, 3}, {1, 1, 1, 2, 1, 3}));
  F.set(F.w.w2_pre_quant_scale, make(DType::kF32, {2, 2}));
  ASSERT_EQ(F.error(), "OK");
  // Row 0 (expert 0): amax 224 -> s = 0.5. Row 1 (expert 1): {448, 1.0625, 3} -> s = 1.
  EXPECT_EQ(F.quant(Gemm::k1, {224, 1.0625, 1, 224, 1.0625, 1}, {0, 1}), (std::vector<double>{224, 1, 1, 448, 1, 3}));
}

// The layer streams weights row by row into a strided (k-major) buffer: every row, at any stride,
// must equal the row of the whole-expert dequantization.
TEST(QuantWeightRows, StridedRowsEqualTheWholeExpert) {
  Layer zp = w4a16();
  zp.set(zp.w.w13_zero_point, make(DType::kF32, {2, 32, 2}, pattern(128, [](int64_t i) { return double(i % 4) - 1.5; })));
  const Layer layers[] = {fp8_per_tensor(), fp8_block(), w4a16(), std::move(zp), mxfp4(QuantScheme::kMxfp4), nvfp4()};
  for (const Layer& L : layers) {
    ASSERT_EQ(L.error(), "OK") << quant_scheme_name(L.p.quant);
    for (Gemm g : {Gemm::k1, Gemm::k2}) {
      const int64_t N = g == Gemm::k1 ? L.p.gemm1_rows() : L.p.hidden, K = g == Gemm::k1 ? L.p.hidden : L.p.intermediate;
      const int e = L.p.num_experts - 1;
      const auto whole = L.dequant(g, e);
      std::vector<double> row(static_cast<size_t>(3 * K), -1.0);
      for (int64_t n = 0; n < N; ++n) {
        cpu::dequantize_weight_row(L.p, L.w, g, e, n, row.data() + 1, 3);
        for (int64_t k = 0; k < K; ++k)
          ASSERT_EQ(row[1 + 3 * k], whole[n * K + k]) << quant_scheme_name(L.p.quant) << " n=" << n << " k=" << k;
      }
      for (int64_t i = 0; i < 3 * K; i += 3) ASSERT_EQ(row[i], -1.0) << "wrote outside its stride";
    }
  }
}

// Nearest representable value of a format given by its decoder over `codes`, ties to the even code,
// saturating to the largest magnitude. Shares nothing with the library's encoders.
double nearest(double v, double (*decode)(uint8_t), int codes) {
  double best = 0;
  int best_code = -1;
  for (int c = 0; c < codes; ++c) {
    const double d = decode(static_cast<uint8_t>(c));
    if (std::isnan(d)) continue;
    const double err = std::fabs(d - v), best_err = std::fabs(best - v);
    if (best_code < 0 || err < best_err || (err == best_err && (c % 2 == 0) && (best_code % 2 != 0))) {
      best = d;
      best_code = c;
    }
  }
  return best;
}

float amax(const std::vector<double>& x, int64_t b, int64_t n) {
  float a = 0;
  for (int64_t i = b; i < b + n; ++i) a = std::max(a, std::fabs(static_cast<float>(x[i])));
  return a;
}

TEST(QuantRandom, DynamicQuantizersMatchOracle) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  const int64_t H = 320, I = 160, R = 5;  // fp8 blocks of 128: a partial last block
  std::vector<double> rows(R * H);
  for (int64_t i = 0; i < R * H; ++i) rows[i] = normal(rng) * std::exp(3 * normal(rng));
  auto blockwise = [&](int64_t block, float qmax, auto round) {
    std::vector<double> want = rows;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t b = 0; b < H; b += block) {
        const int64_t n = std::min(block, H - b);
        const float s = amax(rows, r * H + b, n) / qmax;
        for (int64_t i = r * H + b; i < r * H + b + n; ++i)
          want[i] = s == 0 ? 0.0 : round(static_cast<float>(rows[i]) / s) * static_cast<double>(s);
      }
    return want;
  };
  auto e4m3 = [](float v) { return nearest(v, decode_e4m3, 256); };
  auto i8 = [](float v) { return std::clamp(std::nearbyint(static_cast<double>(v)), -128.0, 127.0); };

  Layer tok(QuantScheme::kFp8PerToken, 1, H, I);
  EXPECT_EQ(tok.quant(Gemm::k1, rows), blockwise(H, 448.0f, e4m3));
  Layer blk(QuantScheme::kFp8Block, 1, H, I);
  EXPECT_EQ(blk.quant(Gemm::k1, rows), blockwise(128, 448.0f, e4m3));
  Layer w8a8(QuantScheme::kInt8PerToken, 1, H, I);
  EXPECT_EQ(w8a8.quant(Gemm::k1, rows), blockwise(H, 127.0f, i8));

  // MXFP8: the smallest power of two >= amax/448.
  Layer mx(QuantScheme::kMxfp4Mxfp8, 1, H, I);
  std::vector<double> want = rows;
  for (int64_t b = 0; b < R * H; b += 32) {
    const float target = amax(rows, b, 32) / 448.0f;
    double scale = std::ldexp(1.0, -127);
    while (scale < target) scale *= 2;
    for (int64_t i = b; i < b + 32; ++i) want[i] = e4m3(static_cast<float>(rows[i]) / static_cast<float>(scale)) * scale;
  }
  EXPECT_EQ(mx.quant(Gemm::k1, rows), want);

  // NVFP4 with a non-power-of-two global scale.
  Layer nv = nvfp4();
  nv.p.hidden = H;
  const float g = 0.37f;
  nv.set(nv.w.w13_input_scale, make(DType::kF32, {}, {g}));
  for (int64_t b = 0; b < R * H; b += 16) {
    const float a = amax(rows, b, 16);
    const double sf = a == 0 ? 0.0 : nearest(a / (6.0f * g), decode_ue4m3, 127);
    const float d = static_cast<float>(sf) * g;
    for (int64_t i = b; i < b + 16; ++i)
      want[i] = (d == 0 ? 0.0 : nearest(static_cast<float>(rows[i]) / d, decode_e2m1, 16)) * sf * double(g);
  }
  EXPECT_EQ(nv.quant(Gemm::k1, rows), want);
}

}  // namespace
}  // namespace moekit
