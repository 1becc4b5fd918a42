// Quantized MoE layers: cpu::run_reference against the naive float64 oracle (tests/cpu/naive_moe.h
// with tests/cpu/naive_quant.h, which decodes and quantizes on its own) for every QuantScheme, alone
// and combined with the layer's options, at odd sizes and at H = 2880, I = 1408; plus quantized
// layers whose output is known by hand.
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

namespace moekit {
namespace {

using test::count_poison;
using test::fill;
using test::is_poison;
using test::make;
using test::poison;
using test::value_at;

constexpr DType kF32 = DType::kF32, kBF16 = DType::kBF16, kF16 = DType::kF16, kI32 = DType::kI32;

// ---- Comparing with the oracle ---------------------------------------------------------------------

double round_to(DType t, double x) {
  if (t == kF32) return static_cast<float>(x);
  return t == kBF16 ? decode_bf16(encode_bf16(x)) : decode_f16(encode_f16(x));
}

// Elements of `got` the oracle's `want` does not allow (see the note at the top; a NaN in `want`
// means "must still hold the poison"). The first few are described in `first`.
int64_t mismatches(const Tensor& got, const std::vector<double>& want, std::vector<std::string>& first) {
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

void expect_matches_oracle(const Tensor& got, const std::vector<double>& want, const std::string& what) {
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

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }  // gtest's name for a failing parameter

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
Case base_case(const Variant& v, int T, uint32_t seed) {
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

DType weight_dtype(QuantScheme q) {
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
void make_gemm(Layer& L, const Case& c, int64_t N, int64_t K, double act_amax, GemmSlots s, std::mt19937& rng) {
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

Layer build(const Case& c) {
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

// Poisons the output, runs the library and the oracle, and compares.
void run_and_compare(const Case& c) {
  SCOPED_TRACE(c.name);
  Layer L = build(c);
  poison(L.out);
  MoeOutputs out;
  out.out = L.out.view();
  const Status st = cpu::run_reference(L.p, L.w, L.in, out);
  ASSERT_TRUE(st.ok()) << c.name << ": " << st.to_string();
  expect_matches_oracle(L.out, naive::run(L.p, L.w, L.in), c.name);
}

// ---- Every scheme, alone and with the layer's options ------------------------------------------------

using enum QuantScheme;
const Variant kVariants[] = {
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

const Variant& variant(std::string_view name) {
  for (const Variant& v : kVariants)
    if (v.name == name) return v;
  throw std::runtime_error("no variant " + std::string(name));
}

class QuantLayerVsNaive : public testing::TestWithParam<Variant> {};

TEST_P(QuantLayerVsNaive, TokenCounts) {
  uint32_t seed = 10;
  for (int T : {0, 1, 3, 77}) run_and_compare(base_case(GetParam(), T, ++seed));
}

TEST_P(QuantLayerVsNaive, WithLayerOptions) {
  const Variant& v = GetParam();
  uint32_t seed = 100;
  auto with = [&](const char* what, auto&& change) {
    Case c = base_case(v, 33, ++seed);
    c.name += std::string(" ") + what;
    change(c);
    run_and_compare(c);
  };
  with("relu2 (not gated), pre-routed, no biases, routed_scaling_factor 2.5", [](Case& c) {
    c.p.activation.kind = Activation::kReLU2;
    c.p.input_format = InputFormat::kPreRouted;
    c.bias13 = c.bias2 = false;
    c.p.routing.routed_scaling_factor = 2.5f;
  });
  with("geglu interleaved, w13 bias only, no_combine, local experts [2, 6), bf16", [](Case& c) {
    c.p.activation.kind = Activation::kGeGLU;
    c.p.gate_up_layout = GateUpLayout::kInterleaved;
    c.bias2 = false;
    c.p.no_combine = true;
    c.p.local_expert_begin = 2;
    c.p.num_local_experts = 4;
    c.p.activation_dtype = kBF16;
  });
  with("masked, silu, w2 bias only, f16", [](Case& c) {
    c.p.input_format = InputFormat::kMasked;
    c.p.activation.kind = Activation::kSiLU;
    c.bias13 = false;
    c.p.activation_dtype = kF16;
  });
  with("indexed, GPT-OSS clamped swiglu interleaved, local experts [8, 13) of 16, scaling 2.5", [](Case& c) {
    c.p.input_format = InputFormat::kIndexed;
    c.p.num_experts = 16;
    c.p.local_expert_begin = 8;
    c.p.num_local_experts = 5;
    c.p.activation.kind = Activation::kSwiGLUClamped;
    c.p.gate_up_layout = GateUpLayout::kInterleaved;
    c.p.routing.routed_scaling_factor = 2.5f;
  });
  with("llama4 top-1, router weight on the input, identity, expert_map", [](Case& c) {
    c.p.top_k = 1;
    c.p.routing.method = RoutingMethod::kLlama4;
    c.p.routing.renormalize = false;
    c.p.apply_router_weight_on_input = true;
    c.p.activation.kind = Activation::kIdentity;
    c.p.num_local_experts = 3;
    c.expert_map = {-1, 0, -1, 2, 1, -1, -1, -1};
  });
  with("DeepSeek-V3 routing E=16 K=4, scaling 2.5, no_combine, expert_map", [](Case& c) {
    c.p.num_experts = 16;
    c.p.top_k = 4;
    c.p.routing = {.method = RoutingMethod::kDeepSeekV3, .renormalize = true, .n_group = 4, .topk_group = 2,
                   .routed_scaling_factor = 2.5f};
    c.p.no_combine = true;
    c.p.num_local_experts = 6;
    c.expert_map = {0, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, -1, 4, -1, 5, -1};
  });
}

// A static activation scale of 0 or below zeroes that expert's GEMM input (docs/quantization.md).
TEST(QuantLayerVsNaiveScales, ZeroAndNegativeStaticScalesGiveZeroActivations) {
  for (const char* name : {"fp8_per_tensor_static_per_expert", "w4a8_g64_per_expert"}) {
    const Variant& v = variant(name);
    Case c = base_case(v, 33, 77);
    Layer L = build(c);
    L.w.w13_input_scale.data_as<float>()[1] = -L.w.w13_input_scale.data_as<float>()[1];
    L.w.w2_input_scale.data_as<float>()[2] = 0.0f;
    L.w.w2_input_scale.data_as<float>()[3] = -1.0f;
    poison(L.out);
    MoeOutputs out;
    out.out = L.out.view();
    ASSERT_TRUE(cpu::run_reference(L.p, L.w, L.in, out).ok());
    expect_matches_oracle(L.out, naive::run(L.p, L.w, L.in), std::string(v.name) + " with scales 0 and below");
  }
}

INSTANTIATE_TEST_SUITE_P(EveryScheme, QuantLayerVsNaive, testing::ValuesIn(kVariants),
                         [](const testing::TestParamInfo<Variant>& info) { return std::string(info.param.name); });

// ---- Model sizes: H = 2880, I = 1408 (few experts, few tokens) ---------------------------------------

Case model_sized(const Variant& v, int E, int K, int T, uint32_t seed) {
  Case c = base_case(v, T, seed);
  c.name = std::string(v.name) + " H=2880 I=1408 E=" + std::to_string(E) + " K=" + std::to_string(K) + " T=" + std::to_string(T);
  c.p.num_experts = E;
  c.p.top_k = K;
  c.p.hidden = 2880;
  c.p.intermediate = 1408;
  return c;
}

TEST(QuantLayerModelSizes, DeepSeekFp8BlockAndMicroscaledFp4) {
  // DeepSeek-V3: fp8 blocks (2880 = 22.5 blocks of 128), grouped sigmoid routing, scaling 2.5.
  Case ds = model_sized({"fp8_block", kFp8Block, 128, 0, 0}, 4, 2, 3, 1);
  ds.p.routing = {.method = RoutingMethod::kDeepSeekV3, .renormalize = true, .n_group = 2, .topk_group = 1,
                  .routed_scaling_factor = 2.5f};
  ds.bias13 = ds.bias2 = false;
  run_and_compare(ds);
  // GPT-OSS: MXFP4 weights, clamped SwiGLU with interleaved gate/up rows, biases, bf16 activations.
  for (int T : {0, 3}) {
    Case gpt = model_sized({"mxfp4", kMxfp4, 32, 0, 0}, 4, 2, T, 2);
    gpt.p.activation.kind = Activation::kSwiGLUClamped;
    gpt.p.gate_up_layout = GateUpLayout::kInterleaved;
    gpt.p.routing.method = RoutingMethod::kTopKSoftmax;
    gpt.p.activation_dtype = kBF16;
    run_and_compare(gpt);
  }
  run_and_compare(model_sized({"mxfp4_mxfp8", kMxfp4Mxfp8, 32, 0, 0}, 2, 1, 3, 3));
  run_and_compare(model_sized({"nvfp4", kNvfp4, 16, 0, 0, InputScale::kPerExpert}, 2, 1, 3, 4));
}

TEST(QuantLayerModelSizes, GroupWiseInt4AndInt8) {
  run_and_compare(model_sized(
      {"w4a16_g64_zero_awq", kW4A16, 64, 0, 0, InputScale::kNone, kBF16, ZeroPoint::kF32, Awq::kShared}, 2, 1, 3, 5));
  run_and_compare(model_sized({"w8a16_g32", kW8A16, 32, 0, 0, InputScale::kNone, kF16}, 1, 1, 1, 6));
  run_and_compare(model_sized({"w4a8_g64", kW4A8, 64, 0, 0, InputScale::kScalar}, 1, 1, 3, 7));
}

TEST(QuantLayerModelSizes, PerTensorAndPerToken) {
  run_and_compare(model_sized({"fp8_per_tensor_dynamic", kFp8PerTensor, 128, 0, 0}, 1, 1, 3, 8));
  run_and_compare(model_sized({"fp8_per_token", kFp8PerToken, 128, 0, 0}, 1, 1, 1, 9));
  run_and_compare(model_sized({"int8_per_token", kInt8PerToken, 128, 0, 0}, 1, 1, 1, 10));
}

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
    MoeOutputs out;
    out.out = L.out.view();
    ASSERT_TRUE(cpu::run_reference(L.p, L.w, L.in, out).ok());
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
    poison(L.out);
    MoeOutputs out;
    out.out = L.out.view();
    const Status st = cpu::run_reference(L.p, L.w, L.in, out);
    ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
    for (int h = 0; h < H; ++h) {
      EXPECT_EQ(L.out.data_as<float>()[h], x0[h]) << what << " token 0, h=" << h;
      EXPECT_EQ(L.out.data_as<float>()[H + h], x1[h] + 0.5) << what << " token 1, h=" << h;
    }
    EXPECT_EQ(count_poison(L.out), 0) << what;
  }
}

}  // namespace
}  // namespace moekit
