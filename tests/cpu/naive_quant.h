// The quantization half of the naive test oracle (tests/cpu/naive_moe.h is the layer half): weight
// dequantization and activation fake-quantization for every QuantScheme, written from
// docs/quantization.md alone. It shares no code with src/cpu/quant_reference.cpp nor with the
// codecs of moekit/float_formats.h:
//   * codes are decoded from their bits here (e4m3/ue4m3 sign-exponent-mantissa, the e2m1 table,
//     e8m0 = 2^(code - 127), int4 two's complement nibbles);
//   * encoders pick the nearest value of the format by binary search over its value table (ties to
//     the even code, magnitudes beyond the largest finite value saturate), where the library rounds
//     on a power-of-two grid with nearbyint; integers round half to even by explicit comparison;
//   * the e8m0 MXFP8 scale is the smallest power of two not below amax / 448, found by doubling.
// Only IEEE f32/f16/bf16 tensors (scales, zero points, biases) are read through load_element.
// The arithmetic the docs fix is followed literally: amax, scales and quotients in fp32, products
// of codes and scales in double.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "moekit/float_formats.h"
#include "moekit/moe_problem.h"
#include "moekit/tensor.h"

namespace moekit::naive {

// ---- Decoding codes from their bits --------------------------------------------------------------

// fp8 e4m3fn: s eeee mmm, bias 7, subnormals m * 2^-9, S.1111.111 is NaN.
inline double e4m3_value(uint8_t code) {
  const int e = (code >> 3) & 0xF, m = code & 0x7;
  if (e == 0xF && m == 0x7) return std::numeric_limits<double>::quiet_NaN();
  const double magnitude = e == 0 ? m * std::ldexp(1.0, -9) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
  return (code & 0x80) ? -magnitude : magnitude;
}
// NVFP4 block scale: an e4m3fn without its sign bit; codes with bit 7 set are not values.
inline double ue4m3_value(uint8_t code) {
  return code < 0x80 ? e4m3_value(code) : std::numeric_limits<double>::quiet_NaN();
}
// fp4 e2m1: s ee m.
inline double e2m1_value(uint8_t nibble) {
  static constexpr double kMagnitude[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (nibble & 0x8) ? -kMagnitude[nibble & 0x7] : kMagnitude[nibble & 0x7];
}
inline double e8m0_value(uint8_t code) {
  return code == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, code - 127);
}
inline double int4_value(uint8_t nibble) { return (nibble & 0x8) ? nibble - 16 : nibble; }

// The code at flat element index i of a contiguous tensor (a nibble for packed types).
inline uint8_t code_at(const TensorView& t, int64_t i) {
  const auto* bytes = static_cast<const uint8_t*>(t.data());
  if (t.dtype() == DType::kI4 || t.dtype() == DType::kE2M1) return (bytes[i / 2] >> (i % 2 == 0 ? 0 : 4)) & 0xF;
  return bytes[i];
}

// decode(code) for every 8-bit code, computed once (the weights are read many times).
template <double (*decode)(uint8_t)>
const std::array<double, 256>& decoded() {
  static const std::array<double, 256> table = [] {
    std::array<double, 256> v{};
    for (int c = 0; c < 256; ++c) v[c] = decode(static_cast<uint8_t>(c));
    return v;
  }();
  return table;
}

// Element i of a tensor of any dtype as a value: narrow formats decoded here, IEEE floats (scales,
// zero points, biases, input scales) through load_element.
inline double value_at(const TensorView& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kE4M3: return decoded<e4m3_value>()[code_at(t, i)];
    case DType::kUE4M3: return decoded<ue4m3_value>()[code_at(t, i)];
    case DType::kE8M0: return decoded<e8m0_value>()[code_at(t, i)];
    case DType::kE2M1: return e2m1_value(code_at(t, i));
    case DType::kI4: return int4_value(code_at(t, i));
    case DType::kI8: return static_cast<int8_t>(code_at(t, i));
    default: return load_element(t.data(), t.dtype(), i);
  }
}

// ---- Encoding: nearest value, ties to the even code, saturating ------------------------------------

// The non-negative values of a sign-magnitude format, in code order (increasing).
inline std::vector<double> magnitudes(double (*decode)(uint8_t), int largest_code) {
  std::vector<double> v;
  for (int c = 0; c <= largest_code; ++c) v.push_back(decode(static_cast<uint8_t>(c)));
  return v;
}
inline const std::vector<double>& e4m3_magnitudes() {
  static const std::vector<double> v = magnitudes(e4m3_value, 0x7E);  // 0 .. 448
  return v;
}
inline const std::vector<double>& e2m1_magnitudes() {
  static const std::vector<double> v = magnitudes(e2m1_value, 0x7);  // 0 .. 6
  return v;
}

// The value of `table` nearest to |x| with x's sign; a tie goes to the even code (index).
inline double nearest(const std::vector<double>& table, double x) {
  const double a = std::fabs(x);
  const auto hi = std::lower_bound(table.begin(), table.end(), a);
  double best;
  if (hi == table.end()) {
    best = table.back();  // beyond the largest value: saturate
  } else if (hi == table.begin() || *hi == a) {
    best = *hi;
  } else {
    const auto lo = hi - 1;
    const double dl = a - *lo, dh = *hi - a;
    if (dl != dh) best = dl < dh ? *lo : *hi;
    else best = ((lo - table.begin()) % 2 == 0) ? *lo : *hi;
  }
  return std::signbit(x) ? -best : best;
}
inline double round_e4m3(float x) { return nearest(e4m3_magnitudes(), x); }
inline double round_e2m1(float x) { return nearest(e2m1_magnitudes(), x); }
// ue4m3 has no sign: negatives become 0.
inline double round_ue4m3(float x) { return x <= 0.0f ? 0.0 : nearest(e4m3_magnitudes(), x); }
// int8: round half to even, then saturate to [-128, 127].
inline double round_i8(float x) {
  const double v = x, f = std::floor(v), frac = v - f;
  double r = frac > 0.5 ? f + 1 : (frac < 0.5 ? f : (std::fmod(f, 2.0) == 0 ? f : f + 1));
  return std::clamp(r, -128.0, 127.0);
}
// MXFP8 scale: the smallest power of two >= x, within e8m0's [2^-127, 2^127].
inline double e8m0_round_up(float x) {
  int p = -127;
  while (p < 127 && std::ldexp(1.0, p) < static_cast<double>(x)) ++p;
  return std::ldexp(1.0, p);
}

// ---- Which tensors a GEMM uses ---------------------------------------------------------------------

enum class Which { k13, k2 };

inline bool is_gated(Activation a) {
  return a == Activation::kSwiGLU || a == Activation::kGeGLU || a == Activation::kGeGLUTanh ||
         a == Activation::kSwiGLUClamped;
}

struct GemmTensors {
  const TensorView &w, &scale, &zero_point, &global_scale, &input_scale, &pre_quant_scale;
  int64_t N, K;
};
inline GemmTensors gemm_tensors(const MoeProblem& p, const MoeWeights& w, Which g) {
  const bool gated = is_gated(p.activation.kind);
  if (g == Which::k13)
    return {w.w13, w.w13_scale, w.w13_zero_point, w.w13_global_scale, w.w13_input_scale, w.w13_pre_quant_scale,
            gated ? 2 * p.intermediate : p.intermediate, p.hidden};
  return {w.w2, w.w2_scale, w.w2_zero_point, w.w2_global_scale, w.w2_input_scale, w.w2_pre_quant_scale, p.hidden,
          p.intermediate};
}

// ---- Weights (docs/quantization.md, "Weight dequantization") -----------------------------------------

// Row n of local expert e's weight, W[e, n, 0..K), as doubles.
inline std::vector<double> weight_row(const MoeProblem& p, const MoeWeights& w, Which g, int e, int64_t n) {
  const GemmTensors t = gemm_tensors(p, w, g);
  const int64_t N = t.N, K = t.K;
  std::vector<double> row(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) {
    const double q = value_at(t.w, (e * N + n) * K + k);
    double v = 0;
    switch (p.quant) {
      case QuantScheme::kNone: v = q; break;
      case QuantScheme::kFp8PerTensor: v = q * value_at(t.scale, e); break;
      case QuantScheme::kFp8PerToken:
      case QuantScheme::kInt8PerToken: v = q * value_at(t.scale, e * N + n); break;
      case QuantScheme::kFp8Block: {
        const int64_t nb = (N + 127) / 128, kb = (K + 127) / 128;
        v = q * value_at(t.scale, (e * nb + n / 128) * kb + k / 128);
        break;
      }
      case QuantScheme::kW4A16:
      case QuantScheme::kW8A16:
      case QuantScheme::kW4A8: {
        const int64_t gs = p.group_size, G = K / gs, si = (e * N + n) * G + k / gs;
        const double z = t.zero_point.defined() ? value_at(t.zero_point, si) : 0.0;
        v = (q - z) * value_at(t.scale, si);
        break;
      }
      case QuantScheme::kMxfp4:
      case QuantScheme::kMxfp4Mxfp8: v = q * value_at(t.scale, (e * N + n) * (K / 32) + k / 32); break;
      case QuantScheme::kNvfp4:
        v = q * value_at(t.scale, (e * N + n) * (K / 16) + k / 16) * value_at(t.global_scale, e);
        break;
    }
    row[static_cast<size_t>(k)] = v;
  }
  return row;
}

// ---- Activations (docs/quantization.md, "Activation quantization") ------------------------------------

inline float amax_of(const std::vector<double>& x, size_t begin, size_t end) {
  float a = 0.0f;
  for (size_t i = begin; i < end; ++i) a = std::max(a, std::fabs(static_cast<float>(x[i])));
  return a;
}

// x[begin, end) <- round(float(x) / s) * s with the fp32 quotient; a scale of 0 or below gives zeros.
inline void fake_quant(std::vector<double>& x, size_t begin, size_t end, float s, double (*round)(float)) {
  for (size_t i = begin; i < end; ++i)
    x[i] = s <= 0.0f ? 0.0 : round(static_cast<float>(x[i]) / s) * static_cast<double>(s);
}

// A static [] or [E_local] fp32 input scale for a row of local expert e.
inline float static_scale(const TensorView& t, int e) { return static_cast<float>(value_at(t, t.ndim() == 0 ? 0 : e)); }

// Replaces every row (all rows that enter GEMM g in one layer call; expert[r] is row r's local
// expert) by what the GEMM sees: the AWQ pre-quant scale first, then the scheme's quantization.
inline void quantize_rows(const MoeProblem& p, const MoeWeights& w, Which g, std::vector<std::vector<double>>& rows,
                          const std::vector<int>& expert) {
  const GemmTensors t = gemm_tensors(p, w, g);
  const size_t K = static_cast<size_t>(t.K);
  if (t.pre_quant_scale.defined())
    for (size_t r = 0; r < rows.size(); ++r)
      for (size_t k = 0; k < K; ++k)
        rows[r][k] *= value_at(t.pre_quant_scale, t.pre_quant_scale.ndim() == 2 ? expert[r] * t.K + k : k);

  // Per row, per `block` columns, a dynamic scale amax / qmax.
  auto dynamic = [&](size_t block, float qmax, double (*round)(float)) {
    for (auto& x : rows)
      for (size_t b = 0; b < K; b += block) fake_quant(x, b, std::min(K, b + block), amax_of(x, b, std::min(K, b + block)) / qmax, round);
  };
  switch (p.quant) {
    case QuantScheme::kNone:
    case QuantScheme::kW4A16:
    case QuantScheme::kW8A16:
    case QuantScheme::kMxfp4: return;
    case QuantScheme::kFp8PerTensor:
      if (!t.input_scale.defined()) {
        float amax = 0.0f;  // one scale for every row of the call
        for (const auto& x : rows) amax = std::max(amax, amax_of(x, 0, K));
        for (auto& x : rows) fake_quant(x, 0, K, amax / 448.0f, round_e4m3);
        return;
      }
      [[fallthrough]];
    case QuantScheme::kW4A8:
      for (size_t r = 0; r < rows.size(); ++r) fake_quant(rows[r], 0, K, static_scale(t.input_scale, expert[r]), round_e4m3);
      return;
    case QuantScheme::kFp8PerToken: dynamic(K, 448.0f, round_e4m3); return;
    case QuantScheme::kFp8Block: dynamic(128, 448.0f, round_e4m3); return;
    case QuantScheme::kInt8PerToken: dynamic(K, 127.0f, round_i8); return;
    case QuantScheme::kMxfp4Mxfp8:
      for (auto& x : rows)
        for (size_t b = 0; b < K; b += 32) {
          const double s = e8m0_round_up(amax_of(x, b, std::min(K, b + 32)) / 448.0f);
          for (size_t i = b; i < std::min(K, b + 32); ++i)
            x[i] = round_e4m3(static_cast<float>(x[i]) / static_cast<float>(s)) * s;
        }
      return;
    case QuantScheme::kNvfp4:
      for (size_t r = 0; r < rows.size(); ++r) {
        const float gs = static_scale(t.input_scale, expert[r]);
        auto& x = rows[r];
        for (size_t b = 0; b < K; b += 16) {
          const size_t end = std::min(K, b + 16);
          const float a = amax_of(x, b, end);
          const double sf = a == 0.0f ? 0.0 : round_ue4m3(a / (6.0f * gs));
          const float d = static_cast<float>(sf) * gs;
          for (size_t i = b; i < end; ++i)
            x[i] = (d == 0.0f ? 0.0 : round_e2m1(static_cast<float>(x[i]) / d)) * sf * static_cast<double>(gs);
        }
      }
      return;
  }
}

}  // namespace moekit::naive
