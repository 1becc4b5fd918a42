// Quantized MoE layers with random data for the tests against the naive float64 oracle
// (tests/cpu/naive_moe.h with tests/cpu/naive_quant.h, which decodes and quantizes on its own), and
// the comparison those tests use. Used by test_moe_quant_layers.cpp and test_moe_quant_exact.cpp.
//
// Tolerance, and why it is this tight. Both sides quantize the same float64 values with the fp32
// arithmetic docs/quantization.md fixes, so every activation code agrees bit for bit; both dequantize
// exactly and accumulate in float64 in the same order (k order in every dot product, bias last,
// (token, slot) order in the combine). What may differ is the last bits of the activation functions
// (x * sigmoid(x) here, x / (1 + exp(-x)) in the library). So each output must be the rounding to
// the activation dtype of some value within 1e-9 * |want| + 1e-12 of the oracle's float64 `want`:
// exact, except where `want` lies within that distance of a rounding boundary of the output dtype.
// One differing activation code or weight scale moves an output by 1e-3 relative or more, far outside
// the window (QuantOracle.ComparisonCatchesAChangedScale shows it). bf16 outputs hide changes below
// their own ulp, so most cases use f32 activations.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/layer_tensors.h"
#include "cpu/naive_moe.h"
#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"
#include "moekit/moe_problem.h"

namespace moekit::quant_test {

using test::count_poison;
using test::fill;
using test::is_poison;
using test::make;
using test::poison;
using test::value_at;

inline constexpr DType kF32 = DType::kF32, kBF16 = DType::kBF16, kF16 = DType::kF16, kI32 = DType::kI32;

// ---- Comparing with the oracle ---------------------------------------------------------------------

inline double round_to(DType t, double x) {
  if (t == kF32) return static_cast<float>(x);
  return t == kBF16 ? decode_bf16(encode_bf16(x)) : decode_f16(encode_f16(x));
}

// Elements of `got` the oracle's `want` does not allow (see the note at the top; a NaN in `want`
// means "must still hold the poison"). The first few are described in `first`.
inline int64_t mismatches(const Tensor& got, const std::vector<double>& want, std::vector<std::string>& first) {
  int64_t bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double w = want[static_cast<size_t>(i)], g = value_at(got, i);
    bool ok;
    if (std::isnan(w)) {
      ok = is_poison(got, i);
    } else {
      const double tol = 1e-9 * std::abs(w) + 1e-12;
      ok = !is_poison(got, i) && round_to(got.dtype(), w - tol) <= g && g <= round_to(got.dtype(), w + tol);
    }
    if (!ok && bad++ < 5) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "element %lld: got %.17g%s, oracle %.17g (rounds to %.9g)", static_cast<long long>(i),
                    g, is_poison(got, i) ? " (poison: never written)" : "", w, round_to(got.dtype(), w));
      first.push_back(buf);
    }
  }
  return bad;
}

inline void expect_matches_oracle(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  std::vector<std::string> first;
  const int64_t bad = mismatches(got, want, first);
  for (const std::string& f : first) ADD_FAILURE() << what << ": " << f;
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.numel() << " elements differ from the oracle";
}

// ---- A quantized layer with random data ------------------------------------------------------------

enum class InputScale { kNone, kScalar, kPerExpert };  // static activation scales; fp8_per_tensor: kNone = dynamic
enum class ZeroPoint { kNone, kF32, kScaleDtype };
enum class Awq { kNone, kShared, kPerExpert };  // pre-quant scale [K] bf16, or [E_local, K] f32

struct Variant {
  const char* name;
  QuantScheme quant;
  int group_size;
  int H, I;
  InputScale input_scale = InputScale::kNone;
  DType scale_dtype = kF32;  // w4a16 / w8a16 group scales
  ZeroPoint zero_point = ZeroPoint::kNone;
  Awq awq = Awq::kNone;
};

inline void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }  // gtest's name for a failing parameter

struct Case {
  std::string name;
  MoeProblem p;
  Variant v;
  int T = 77;
  bool bias13 = true, bias2 = true;
  std::vector<int32_t> expert_map;
  int max_m = 6;  // kMasked
  uint32_t seed = 1;
};

// A case from a variant with the common defaults: E = 8, K = 2, SwiGLU, softmax top-k renormalized,
// both biases, f32 activations.
inline Case base_case(const Variant& v, int T, uint32_t seed) {
  Case c;
  c.name = std::string(v.name) + " T=" + std::to_string(T);
  c.v = v;
  c.p.num_experts = 8;
  c.p.top_k = 2;
  c.p.hidden = v.H;
  c.p.intermediate = v.I;
  c.p.quant = v.quant;
  c.p.group_size = v.group_size;
  c.p.activation_dtype = kF32;
  c.p.routing.renormalize = true;
  c.T = T;
  c.seed = seed;
  return c;
}

struct Layer {
  MoeProblem p;
  std::vector<Tensor> owned;
  MoeWeights w;
  MoeInputs in;
  Tensor out;
  TensorView keep(Tensor t) {
    owned.push_back(std::move(t));
    return owned.back().view();
  }
};

inline DType weight_dtype(QuantScheme q) {
  switch (q) {
    case QuantScheme::kFp8PerTensor:
    case QuantScheme::kFp8PerToken:
    case QuantScheme::kFp8Block: return DType::kE4M3;
    case QuantScheme::kInt8PerToken:
    case QuantScheme::kW8A16: return DType::kI8;
    case QuantScheme::kW4A16:
    case QuantScheme::kW4A8: return DType::kI4;
    default: return DType::kE2M1;
  }
}

// Weights of one GEMM ([E_local, N, K]): codes from raw random bytes (e4m3 exponents kept in [-3, 2]
// so no NaN code appears), and scales that bring the dequantized weights to about 1/sqrt(K).
struct GemmSlots {
  TensorView &w, &scale, &zero_point, &global_scale, &input_scale, &pre_quant_scale;
};
inline void make_gemm(Layer& L, const Case& c, int64_t N, int64_t K, double act_amax, GemmSlots s, std::mt19937& rng) {
  const Variant& v = c.v;
  const int64_t E = c.p.local_experts();
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto factor = [&] { return std::exp2(u(rng)); };  // in [0.5, 2)
  const DType wt = weight_dtype(v.quant);
  Tensor w = make(wt, {E, N, K});
  auto* bytes = static_cast<uint8_t*>(w.data());
  const int64_t n_bytes = w.storage_bytes();
  for (int64_t i = 0; i < n_bytes; i += 4) {
    const uint32_t r = static_cast<uint32_t>(rng());  // four random bytes
    for (int64_t j = i; j < std::min(i + 4, n_bytes); ++j) {
      const uint8_t b = static_cast<uint8_t>(r >> (8 * (j - i)));
      bytes[j] = wt == DType::kE4M3 ? static_cast<uint8_t>((b & 0x87) | ((((b >> 3) & 0xF) % 6 + 4) << 3)) : b;
    }
  }
  s.w = L.keep(std::move(w));
  const double typical = wt == DType::kE4M3 ? 1.9 : wt == DType::kI8 ? 64 : wt == DType::kI4 ? 4 : 2.25;
  const double base = 1.0 / (typical * std::sqrt(static_cast<double>(K)));
  auto scales = [&](DType t, std::vector<int64_t> shape, double mean) {
    Tensor x = make(t, std::move(shape));
    fill(x, [&](int64_t) { return mean * factor(); });
    return L.keep(std::move(x));
  };
  switch (v.quant) {
    case QuantScheme::kFp8PerTensor: s.scale = scales(kF32, {E}, base); break;
    case QuantScheme::kFp8PerToken:
    case QuantScheme::kInt8PerToken: s.scale = scales(kF32, {E, N}, base); break;
    case QuantScheme::kFp8Block: s.scale = scales(kF32, {E, (N + 127) / 128, (K + 127) / 128}, base); break;
    case QuantScheme::kW4A16:
    case QuantScheme::kW8A16:
    case QuantScheme::kW4A8: {
      const int64_t G = K / v.group_size;
      s.scale = scales(v.quant == QuantScheme::kW4A8 ? kF32 : v.scale_dtype, {E, N, G}, base);
      if (v.zero_point != ZeroPoint::kNone) {
        Tensor z = make(v.zero_point == ZeroPoint::kF32 ? kF32 : v.scale_dtype, {E, N, G});
        fill(z, [&](int64_t) { return static_cast<double>(rng() % 5) - 2 + 0.25 * static_cast<double>(rng() % 3); });
        s.zero_point = L.keep(std::move(z));
      }
      break;
    }
    case QuantScheme::kMxfp4:
    case QuantScheme::kMxfp4Mxfp8: {
      Tensor x = make(DType::kE8M0, {E, N, K / 32});
      for (int64_t i = 0; i < x.numel(); ++i)
        x.data_as<uint8_t>()[i] = static_cast<uint8_t>(127 + std::lround(std::log2(base)) + static_cast<int>(rng() % 3) - 1);
      s.scale = L.keep(std::move(x));
      break;
    }
    case QuantScheme::kNvfp4:
      s.scale = scales(DType::kUE4M3, {E, N, K / 16}, 8.0);
      s.global_scale = scales(kF32, {E}, base / 8);
      break;
    case QuantScheme::kNone: break;
  }
  // Static activation scales as dequantization multipliers for an amax of about act_amax, so a few
  // values saturate.
  if (v.input_scale != InputScale::kNone) {
    const double mean = act_amax / (v.quant == QuantScheme::kNvfp4 ? 448.0 * 6 : 448.0);
    s.input_scale = v.input_scale == InputScale::kScalar ? scales(kF32, {}, mean) : scales(kF32, {E}, mean);
  }
  if (v.awq != Awq::kNone) {
    Tensor x = v.awq == Awq::kShared ? make(kBF16, {K}) : make(kF32, {E, K});
    fill(x, [&](int64_t) { return 1.0 + 0.5 * u(rng); });
    s.pre_quant_scale = L.keep(std::move(x));
  }
}

inline Layer build(const Case& c) {
  Layer L;
  L.p = c.p;
  const MoeProblem& p = c.p;
  const int64_t E = p.num_experts, K = p.top_k, H = p.hidden, T = c.T, EL = p.local_experts();
  const DType act = p.activation_dtype;
  std::mt19937 rng(c.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  MoeWeights& w = L.w;
  make_gemm(L, c, p.gemm1_rows(), H, 3.5,
            {w.w13, w.w13_scale, w.w13_zero_point, w.w13_global_scale, w.w13_input_scale, w.w13_pre_quant_scale}, rng);
  make_gemm(L, c, H, p.intermediate, 3.0,
            {w.w2, w.w2_scale, w.w2_zero_point, w.w2_global_scale, w.w2_input_scale, w.w2_pre_quant_scale}, rng);
  auto random = [&](DType t, std::vector<int64_t> shape, double sigma) {
    Tensor x = make(t, std::move(shape));
    fill(x, [&](int64_t) { return sigma * normal(rng); });
    return L.keep(std::move(x));
  };
  if (c.bias13) w.w13_bias = random(kF32, {EL, p.gemm1_rows()}, 0.5);
  if (c.bias2) w.w2_bias = random(kBF16, {EL, H}, 0.5);
  if (!c.expert_map.empty()) {
    Tensor m = make(kI32, {E});
    fill(m, [&](int64_t i) { return c.expert_map[static_cast<size_t>(i)]; });
    w.expert_map = L.keep(std::move(m));
  }
  MoeInputs& in = L.in;
  switch (p.input_format) {
    case InputFormat::kStandard:
      in.hidden = random(act, {T, H}, 1.0);
      in.router_logits = random(kF32, {T, E}, 1.5);
      if (p.routing.method == RoutingMethod::kDeepSeekV3) in.e_score_correction_bias = random(kF32, {E}, 0.3);
      L.out = make(act, p.no_combine ? std::vector<int64_t>{T, K, H} : std::vector<int64_t>{T, H});
      break;
    case InputFormat::kPreRouted: {
      in.hidden = random(act, {T, H}, 1.0);
      Tensor ids = make(kI32, {T, K}), wts = make(kF32, {T, K});
      std::vector<int> perm(static_cast<size_t>(E));
      for (int64_t t = 0; t < T; ++t) {
        for (int e = 0; e < E; ++e) perm[e] = e;
        std::shuffle(perm.begin(), perm.end(), rng);
        for (int64_t k = 0; k < K; ++k) {
          ids.data_as<int32_t>()[t * K + k] = perm[k];
          wts.data_as<float>()[t * K + k] = static_cast<float>(0.1 + 0.9 * uniform(rng));
        }
      }
      in.topk_ids = L.keep(std::move(ids));
      in.topk_weights = L.keep(std::move(wts));
      L.out = make(act, p.no_combine ? std::vector<int64_t>{T, K, H} : std::vector<int64_t>{T, H});
      break;
    }
    case InputFormat::kMasked: {
      in.hidden = random(act, {EL, c.max_m, H}, 1.0);
      Tensor m = make(kI32, {EL});
      fill(m, [&](int64_t) { return static_cast<double>(rng() % static_cast<uint32_t>(c.max_m + 1)); });
      in.masked_m = L.keep(std::move(m));
      L.out = make(act, {EL, c.max_m, H});
      break;
    }
    case InputFormat::kIndexed: {
      in.hidden = random(act, {T, H}, 1.0);
      std::vector<std::vector<int64_t>> tokens_of(static_cast<size_t>(EL));
      for (int64_t t = 0; t < T; ++t)
        for (int64_t k = 0; k < std::min(K, EL); ++k) tokens_of[rng() % EL].push_back(t);
      std::vector<double> off{0}, gather, rw;
      for (const auto& tokens : tokens_of) {
        for (int64_t t : tokens) gather.push_back(static_cast<double>(t)), rw.push_back(0.1 + 0.9 * uniform(rng));
        off.push_back(static_cast<double>(gather.size()));
      }
      const int64_t R = static_cast<int64_t>(gather.size());
      in.expert_offsets = L.keep(test::from_values(kI32, {EL + 1}, off));
      in.gather_index = L.keep(test::from_values(kI32, {R}, gather));
      in.row_weights = L.keep(test::from_values(kF32, {R}, rw));
      L.out = make(act, {T, H});
      break;
    }
  }
  return L;
}

// Poisons the output and runs the library on the layer.
inline Status run_library(Layer& L) {
  poison(L.out);
  MoeOutputs out;
  out.out = L.out.view();
  return cpu::run_reference(L.p, L.w, L.in, out);
}

// Runs the library and the oracle, and compares.
inline void run_and_compare(const Case& c) {
  SCOPED_TRACE(c.name);
  Layer L = build(c);
  const Status st = run_library(L);
  ASSERT_TRUE(st.ok()) << c.name << ": " << st.to_string();
  expect_matches_oracle(L.out, naive::run(L.p, L.w, L.in), c.name);
}

// ---- Every scheme, alone and with the layer's options ------------------------------------------------

using enum QuantScheme;
inline const Variant kVariants[] = {
    {"fp8_per_tensor_static", kFp8PerTensor, 128, 70, 37, InputScale::kScalar},
    {"fp8_per_tensor_static_per_expert", kFp8PerTensor, 128, 70, 37, InputScale::kPerExpert},
    {"fp8_per_tensor_dynamic", kFp8PerTensor, 128, 70, 37},
    {"fp8_per_token_awq_per_expert", kFp8PerToken, 128, 70, 37, InputScale::kNone, kF32, ZeroPoint::kNone, Awq::kPerExpert},
    {"fp8_block", kFp8Block, 128, 163, 97},  // partial 128-blocks along N and K in both GEMMs
    {"int8_per_token", kInt8PerToken, 128, 70, 37},
    {"w4a16_g32_zero_awq", kW4A16, 32, 160, 96, InputScale::kNone, kBF16, ZeroPoint::kF32, Awq::kShared},
    {"w4a16_g64_f16", kW4A16, 64, 192, 64, InputScale::kNone, kF16},
    {"w4a16_g128_zero_awq_per_expert", kW4A16, 128, 256, 128, InputScale::kNone, kBF16, ZeroPoint::kScaleDtype,
     Awq::kPerExpert},
    {"w8a16_g64_zero", kW8A16, 64, 192, 64, InputScale::kNone, kF16, ZeroPoint::kScaleDtype},
    {"w8a16_g128", kW8A16, 128, 256, 128},
    {"mxfp4", kMxfp4, 32, 160, 96},
    {"mxfp4_mxfp8", kMxfp4Mxfp8, 32, 160, 96},
    {"nvfp4", kNvfp4, 16, 176, 80, InputScale::kScalar},
    {"nvfp4_per_expert", kNvfp4, 16, 176, 80, InputScale::kPerExpert},
    {"w4a8_g128_awq", kW4A8, 128, 256, 128, InputScale::kScalar, kF32, ZeroPoint::kNone, Awq::kShared},
    {"w4a8_g64_per_expert", kW4A8, 64, 192, 64, InputScale::kPerExpert},
};

inline const Variant& variant(std::string_view name) {
  for (const Variant& v : kVariants)
    if (v.name == name) return v;
  throw std::runtime_error("no variant " + std::string(name));
}

}  // namespace moekit::quant_test
