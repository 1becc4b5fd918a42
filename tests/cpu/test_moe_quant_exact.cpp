// Quantized layers whose output is known by hand (diagonal experts, power-of-two scales per expert,
// bias = expert id), and checks of the naive quantization oracle itself.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cpu/quant_layer_fixture.h"

namespace moekit::quant_test {
namespace {

// ---- The oracle itself ----------------------------------------------------------------------------

TEST(QuantOracle, CodecsByHand) {
  EXPECT_EQ(naive::e4m3_value(0x7E), 448);
  EXPECT_EQ(naive::e4m3_value(0x38), 1);
  EXPECT_EQ(naive::e4m3_value(0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(naive::e4m3_value(0xB4), -0.75);
  EXPECT_TRUE(std::isnan(naive::e4m3_value(0xFF)));
  EXPECT_TRUE(std::isnan(naive::ue4m3_value(0x80)));
  EXPECT_EQ(naive::e2m1_value(0x7), 6);
  EXPECT_EQ(naive::e2m1_value(0xB), -1.5);
  EXPECT_EQ(naive::e8m0_value(127), 1);
  EXPECT_EQ(naive::e8m0_value(0), std::ldexp(1.0, -127));
  EXPECT_EQ(naive::int4_value(0x8), -8);
  EXPECT_EQ(naive::int4_value(0x7), 7);
  // Nearest, ties to the even code, saturating (the examples of docs/quantization.md).
  EXPECT_EQ(naive::round_e4m3(1.0625f), 1.0);
  EXPECT_EQ(naive::round_e4m3(1.1875f), 1.25);
  EXPECT_EQ(naive::round_e4m3(464.0f), 448);
  EXPECT_EQ(naive::round_e4m3(-1000.0f), -448);
  EXPECT_EQ(naive::round_e4m3(std::ldexp(1.0f, -10)), 0);  // half the smallest subnormal: tie to 0
  EXPECT_EQ(naive::round_e4m3(std::ldexp(3.0f, -10)), std::ldexp(2.0, -9));
  const float e2m1_in[] = {0.25f, 0.75f, 2.5f, 5.0f, 1.75f, -1.25f, 7.0f};
  const double e2m1_out[] = {0, 1, 2, 4, 2, -1, 6};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(naive::round_e2m1(e2m1_in[i]), e2m1_out[i]) << e2m1_in[i];
  EXPECT_EQ(naive::round_ue4m3(-3.0f), 0);
  EXPECT_EQ(naive::round_ue4m3(2.0f), 2);
  EXPECT_EQ(naive::round_i8(1.5f), 2);
  EXPECT_EQ(naive::round_i8(2.5f), 2);
  EXPECT_EQ(naive::round_i8(-2.5f), -2);
  EXPECT_EQ(naive::round_i8(-3.5f), -4);
  EXPECT_EQ(naive::round_i8(300.0f), 127);
  EXPECT_EQ(naive::round_i8(-300.0f), -128);
  EXPECT_EQ(naive::e8m0_round_up(500.0f / 448.0f), 2);
  EXPECT_EQ(naive::e8m0_round_up(0.125f), 0.125);
  EXPECT_EQ(naive::e8m0_round_up(0.0f), std::ldexp(1.0, -127));
}

// The comparison can fail: the library's output stops matching once the oracle sees one weight
// scale doubled (fp8 block) or one e8m0 scale code moved by one (MXFP4).
TEST(QuantOracle, ComparisonCatchesAChangedScale) {
  for (const char* name : {"fp8_block", "mxfp4"}) {
    const Variant& v = variant(name);
    Case c = base_case(v, 5, 42);
    Layer L = build(c);
    ASSERT_TRUE(run_library(L).ok());
    std::vector<std::string> first;
    ASSERT_EQ(mismatches(L.out, naive::run(L.p, L.w, L.in), first), 0) << v.name;
    if (v.quant == kFp8Block) L.w.w13_scale.data_as<float>()[1] *= 2;
    else L.w.w13_scale.data_as<uint8_t>()[3] += 1;
    EXPECT_GT(mismatches(L.out, naive::run(L.p, L.w, L.in), first), 0) << v.name << ": a changed scale went unnoticed";
  }
}

// ---- Hand-checkable quantized layers ------------------------------------------------------------------

// E = 2 experts, H = I = 32, identity activation. Expert e: W13 = 2^e * identity (a code of 1 with a
// power-of-two scale 2^e), W2 = identity, b2 = e (the expert id), so y = 2^e x + e. Token 0 goes to
// expert 0 with weight 1, token 1 to expert 1 with weight 0.5: out = {x0, x1 + 0.5}, exactly, when
// x and 2x quantize without loss (each scheme gets such an x).
TEST(QuantLayerExact, DiagonalExpertsPowerOfTwoScalesBiasIsExpertId) {
  constexpr int H = 32;
  // x/2^-6 and x/2^-5 are e4m3 codes; amax 7 makes every dynamic e4m3 scale 7/448 = 2^-6.
  const std::vector<double> fp8_x = {7, -3.5, 1, 0.5, 0.125, 0, 2.75, -6, 1.5, -0.25};
  // Multiples of 1/16 with amax 127/16: the int8 scale is 2^-4 and every code an integer.
  const std::vector<double> int8_x = {127.0 / 16, -4, 1.0 / 16, 0, 3, -5.0 / 16, 6.25, 2};
  // e2m1 values with a 6 in each block of 16: the NVFP4 block scale is 1 (2 for 2x).
  std::vector<double> fp4_x = {6, -3, 1, 0.5, 0, 1.5, 2, -4};
  fp4_x.resize(16, 0.0);
  fp4_x.insert(fp4_x.end(), {-6, 4, 0.5, -1, 3});
  struct Scheme {
    QuantScheme q;
    const std::vector<double>& x;
  };
  for (const Scheme& s : {Scheme{kFp8PerTensor, fp8_x}, Scheme{kFp8PerToken, fp8_x}, Scheme{kFp8Block, fp8_x},
                          Scheme{kInt8PerToken, int8_x}, Scheme{kW4A16, fp8_x}, Scheme{kW8A16, fp8_x},
                          Scheme{kMxfp4, fp8_x}, Scheme{kMxfp4Mxfp8, fp8_x}, Scheme{kNvfp4, fp4_x},
                          Scheme{kW4A8, fp8_x}}) {
    const std::string what(quant_scheme_name(s.q));
    Layer L;
    L.p.num_experts = 2;
    L.p.top_k = 1;
    L.p.hidden = L.p.intermediate = H;
    L.p.quant = s.q;
    L.p.group_size = 32;
    L.p.activation.kind = Activation::kIdentity;
    L.p.activation_dtype = kF32;
    L.p.input_format = InputFormat::kPreRouted;
    const DType wt = weight_dtype(s.q);
    const bool zero = s.q == kW4A16 || s.q == kW8A16;  // codes 3 on the diagonal, 2 elsewhere, zero point 2
    // Weight codes: the diagonal dequantizes to 1 before the scale, the rest to 0.
    auto codes = [&](int64_t i) { return (i / H) % H == i % H ? (zero ? 3.0 : 1.0) : (zero ? 2.0 : 0.0); };
    // Scale tensors holding 2^e for expert e (gemm1) or 1 (gemm2) in every element.
    auto per_expert = [&](DType t, std::vector<int64_t> shape, bool gemm1) {
      Tensor x = make(t, shape);
      const int64_t per = x.numel() / 2;
      fill(x, [&](int64_t i) { return gemm1 ? std::ldexp(1.0, static_cast<int>(i / per)) : 1.0; });
      return L.keep(std::move(x));
    };
    for (bool gemm1 : {true, false}) {
      TensorView& w = gemm1 ? L.w.w13 : L.w.w2;
      TensorView& scale = gemm1 ? L.w.w13_scale : L.w.w2_scale;
      Tensor codes_t = make(wt, {2, H, H});
      fill(codes_t, codes);
      w = L.keep(std::move(codes_t));
      switch (s.q) {
        case kFp8PerTensor: scale = per_expert(kF32, {2}, gemm1); break;
        case kFp8PerToken:
        case kInt8PerToken: scale = per_expert(kF32, {2, H}, gemm1); break;
        case kFp8Block: scale = per_expert(kF32, {2, 1, 1}, gemm1); break;
        case kMxfp4:
        case kMxfp4Mxfp8: scale = per_expert(DType::kE8M0, {2, H, 1}, gemm1); break;
        case kNvfp4:
          scale = per_expert(DType::kUE4M3, {2, H, 2}, false);
          (gemm1 ? L.w.w13_global_scale : L.w.w2_global_scale) = per_expert(kF32, {2}, gemm1);
          (gemm1 ? L.w.w13_input_scale : L.w.w2_input_scale) = L.keep(test::from_values(kF32, {}, {1}));
          break;
        default: scale = per_expert(kF32, {2, H, 1}, gemm1); break;  // group-wise, one group
      }
      if (zero) (gemm1 ? L.w.w13_zero_point : L.w.w2_zero_point) = L.keep(test::from_values(kF32, {2, H, 1}, std::vector<double>(2 * H, 2)));
    }
    if (s.q == kFp8PerTensor || s.q == kW4A8) {  // static scales: 2^-6 before gemm1, 2^-5 before gemm2
      L.w.w13_input_scale = L.keep(test::from_values(kF32, {}, {1.0 / 64}));
      L.w.w2_input_scale = L.keep(test::from_values(kF32, {}, {1.0 / 32}));
    }
    L.w.w2_bias = L.keep(test::from_values(kF32, {2, H}, [] {
      std::vector<double> b(2 * H, 0.0);
      std::fill(b.begin() + H, b.end(), 1.0);
      return b;
    }()));
    std::vector<double> x0 = s.x, x1(s.x.rbegin(), s.x.rend());
    x0.resize(H, 0.0);
    x1.resize(H, 0.0);
    if (s.q == kNvfp4) x1 = x0;  // keeps a 6 in each block of 16
    std::vector<double> hidden = x0;
    hidden.insert(hidden.end(), x1.begin(), x1.end());
    L.in.hidden = L.keep(test::from_values(kF32, {2, H}, hidden));
    L.in.topk_ids = L.keep(test::from_values(kI32, {2, 1}, {0, 1}));
    L.in.topk_weights = L.keep(test::from_values(kF32, {2, 1}, {1, 0.5}));
    L.out = make(kF32, {2, H});
    const Status st = run_library(L);
    ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
    for (int h = 0; h < H; ++h) {
      EXPECT_EQ(L.out.data_as<float>()[h], x0[h]) << what << " token 0, h=" << h;
      EXPECT_EQ(L.out.data_as<float>()[H + h], x1[h] + 0.5) << what << " token 1, h=" << h;
    }
    EXPECT_EQ(count_poison(L.out), 0) << what;
  }
}

}  // namespace
}  // namespace moekit::quant_test
