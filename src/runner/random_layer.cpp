// Random layers for every quantization scheme and input format. Bulk weights are written as raw
// codes (random bytes with a bounded exponent for fp8, any nibble for e2m1/int4), because encoding
// hundreds of millions of values one by one would take longer than the layer itself.
#include "moekit/random_layer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "cuda/random_fill.h"
#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"
#include "runner/random_bits.h"

namespace moekit {
namespace {

using random_bits::bits_at;
using random_bits::uniform_at;

Result<Tensor> alloc(DType t, std::vector<int64_t> shape, Device device = Device::cpu()) {
  return Tensor::empty(t, std::span<const int64_t>(shape), device);
}

// fill_uniform where the tensor lives: the host loop, or the kernel that writes the same bytes.
Status fill_uniform_at(const TensorView& t, double scale, uint64_t seed, uint64_t stream) {
  if (t.device().is_cuda()) return cuda::fill_uniform_device(t, scale, seed, stream);
  fill_uniform(t, scale, seed, stream);
  return Status::Ok();
}

// Raw random codes: `byte_of` maps 64 random bits to one stored byte.
template <typename ByteOf>
void fill_bytes(const TensorView& t, uint64_t seed, uint64_t stream, ByteOf byte_of) {
  auto* p = static_cast<uint8_t*>(t.data());
  const int64_t n = t.storage_bytes();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] = byte_of(bits_at(seed, stream, static_cast<uint64_t>(i)));
}

// e4m3 with exponent field 4..10 (|value| in [2^-3, 2^4)), random sign and mantissa: rms about 3.
uint8_t e4m3_code(uint64_t r) { return static_cast<uint8_t>((r & 0x80) | ((4 + (r >> 8) % 7) << 3) | ((r >> 16) & 7)); }
constexpr double kE4m3Rms = 3.0;
constexpr double kE2m1Rms = 2.93;  // rms of {0, 0.5, 1, 1.5, 2, 3, 4, 6}
constexpr double kI4Rms = 4.6;     // rms of uniform integers in [-8, 7]
constexpr double kI8Rms = 37.0;    // rms of uniform integers in [-64, 64]

// Sets a scale tensor to `value` everywhere (stored in its dtype, e.g. rounded up to a power of two
// for e8m0).
void fill_constant(const TensorView& t, double value) {
  for (int64_t i = 0; i < t.numel(); ++i) store_element(t.data(), t.dtype(), i, value);
}

struct GemmSpec {
  int64_t n, k;
  TensorView* w;
  TensorView* scale;
  TensorView* global_scale;
  TensorView* input_scale;
};

// Weights of the scheme; only quant=none can be on `device` (make_random_layer checks it).
Status make_weight(RandomLayer& L, const GemmSpec& g, uint64_t seed, uint64_t stream, Device device) {
  const MoeProblem& p = L.problem;
  const int64_t EL = p.local_experts(), N = g.n, K = g.k;
  const double target = 1.0 / std::sqrt(static_cast<double>(K));  // rms of the dequantized weight
  auto keep = [&](Result<Tensor> t, TensorView* into) -> Status {
    if (!t.ok()) return t.status();
    *into = t->view();
    L.storage.push_back(std::move(t).value());
    return Status::Ok();
  };
  auto weight = [&](DType t) { return keep(alloc(t, {EL, N, K}, device), g.w); };
  auto scale = [&](DType t, std::vector<int64_t> shape, double value) -> Status {
    MOEKIT_RETURN_IF_ERROR(keep(alloc(t, std::move(shape)), g.scale));
    fill_constant(*g.scale, value);
    return Status::Ok();
  };
  const int64_t gs = p.group_size;
  switch (p.quant) {
    case QuantScheme::kNone:
      MOEKIT_RETURN_IF_ERROR(weight(p.activation_dtype));
      return fill_uniform_at(*g.w, target * std::sqrt(3.0), seed, stream);
    case QuantScheme::kFp8PerTensor:
    case QuantScheme::kFp8PerToken:
    case QuantScheme::kFp8Block: {
      MOEKIT_RETURN_IF_ERROR(weight(DType::kE4M3));
      fill_bytes(*g.w, seed, stream, e4m3_code);
      const double s = target / kE4m3Rms;
      if (p.quant == QuantScheme::kFp8PerTensor) return scale(DType::kF32, {EL}, s);
      if (p.quant == QuantScheme::kFp8PerToken) return scale(DType::kF32, {EL, N}, s);
      return scale(DType::kF32, {EL, (N + 127) / 128, (K + 127) / 128}, s);
    }
    case QuantScheme::kInt8PerToken:
    case QuantScheme::kW8A16:
      MOEKIT_RETURN_IF_ERROR(weight(DType::kI8));
      fill_bytes(*g.w, seed, stream, [](uint64_t r) { return static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(r % 129) - 64)); });
      if (p.quant == QuantScheme::kInt8PerToken) return scale(DType::kF32, {EL, N}, target / kI8Rms);
      return scale(DType::kF32, {EL, N, K / gs}, target / kI8Rms);
    case QuantScheme::kW4A16:
    case QuantScheme::kW4A8:
      MOEKIT_RETURN_IF_ERROR(weight(DType::kI4));
      fill_bytes(*g.w, seed, stream, [](uint64_t r) { return static_cast<uint8_t>(r); });
      MOEKIT_RETURN_IF_ERROR(scale(DType::kF32, {EL, N, K / gs}, target / kI4Rms));
      if (p.quant == QuantScheme::kW4A8) {
        // A static activation scale: inputs are O(1) with tails near 4, so 4 maps to e4m3's 448.
        MOEKIT_RETURN_IF_ERROR(keep(alloc(DType::kF32, {}), g.input_scale));
        fill_constant(*g.input_scale, 4.0 / 448.0);
      }
      return Status::Ok();
    case QuantScheme::kMxfp4:
    case QuantScheme::kMxfp4Mxfp8:
      MOEKIT_RETURN_IF_ERROR(weight(DType::kE2M1));
      fill_bytes(*g.w, seed, stream, [](uint64_t r) { return static_cast<uint8_t>(r); });
      return scale(DType::kE8M0, {EL, N, K / 32}, target / kE2m1Rms);
    case QuantScheme::kNvfp4:
      MOEKIT_RETURN_IF_ERROR(weight(DType::kE2M1));
      fill_bytes(*g.w, seed, stream, [](uint64_t r) { return static_cast<uint8_t>(r); });
      // ue4m3 block scales near 1 and the magnitude in the fp32 global scale.
      MOEKIT_RETURN_IF_ERROR(scale(DType::kUE4M3, {EL, N, K / 16}, 1.0));
      MOEKIT_RETURN_IF_ERROR(keep(alloc(DType::kF32, {EL}), g.global_scale));
      fill_constant(*g.global_scale, target / kE2m1Rms);
      MOEKIT_RETURN_IF_ERROR(keep(alloc(DType::kF32, {}), g.input_scale));
      fill_constant(*g.input_scale, 4.0 / (448.0 * 6.0));
      return Status::Ok();
  }
  return Status::Internal("make_weight: unknown scheme");
}

Status make_inputs(RandomLayer& L, const RandomLayerOptions& o) {
  const MoeProblem& p = L.problem;
  const int64_t T = o.num_tokens, E = p.num_experts, K = p.top_k, H = p.hidden, EL = p.local_experts();
  const DType act = p.activation_dtype;
  const uint64_t s = o.seed;
  auto make = [](Tensor& into, DType t, std::vector<int64_t> shape) -> Status {
    auto r = alloc(t, std::move(shape));
    if (!r.ok()) return r.status();
    into = std::move(r).value();
    return Status::Ok();
  };
  const std::vector<int64_t> out_shape = p.no_combine ? std::vector<int64_t>{T, K, H} : std::vector<int64_t>{T, H};
  switch (p.input_format) {
    case InputFormat::kStandard:
      MOEKIT_RETURN_IF_ERROR(make(L.router_logits, DType::kF32, {T, E}));
      fill_uniform(L.router_logits, 3.0, s, 101);
      if (p.routing.method == RoutingMethod::kDeepSeekV3) {
        MOEKIT_RETURN_IF_ERROR(make(L.e_score_correction_bias, DType::kF32, {E}));
        fill_uniform(L.e_score_correction_bias, 0.3, s, 102);
      }
      [[fallthrough]];
    case InputFormat::kPreRouted:
      MOEKIT_RETURN_IF_ERROR(make(L.hidden, act, {T, H}));
      MOEKIT_RETURN_IF_ERROR(make(L.out, act, out_shape));
      if (p.input_format == InputFormat::kPreRouted) {
        MOEKIT_RETURN_IF_ERROR(make(L.topk_ids, DType::kI32, {T, K}));
        MOEKIT_RETURN_IF_ERROR(make(L.topk_weights, DType::kF32, {T, K}));
        std::vector<int32_t> perm(static_cast<size_t>(E));
        for (int64_t t = 0; t < T; ++t) {
          // K distinct experts: a seeded partial Fisher-Yates shuffle.
          std::iota(perm.begin(), perm.end(), 0);
          for (int64_t k = 0; k < K; ++k) {
            const int64_t j = k + static_cast<int64_t>(bits_at(s, 103, static_cast<uint64_t>(t * K + k)) % static_cast<uint64_t>(E - k));
            std::swap(perm[k], perm[j]);
            L.topk_ids.data_as<int32_t>()[t * K + k] = perm[k];
            L.topk_weights.data_as<float>()[t * K + k] = static_cast<float>(0.55 + 0.45 * uniform_at(s, 104, t * K + k));
          }
        }
      }
      break;
    case InputFormat::kMasked: {
      MOEKIT_RETURN_IF_ERROR(make(L.hidden, act, {EL, T, H}));
      MOEKIT_RETURN_IF_ERROR(make(L.out, act, {EL, T, H}));
      MOEKIT_RETURN_IF_ERROR(make(L.masked_m, DType::kI32, {EL}));
      for (int64_t e = 0; e < EL; ++e) L.masked_m.data_as<int32_t>()[e] = static_cast<int32_t>(bits_at(s, 105, e) % (T + 1));
      break;
    }
    case InputFormat::kIndexed: {
      // Each token goes to K distinct local experts (or all of them when K > E_local).
      MOEKIT_RETURN_IF_ERROR(make(L.hidden, act, {T, H}));
      MOEKIT_RETURN_IF_ERROR(make(L.out, act, {T, H}));
      const int64_t per_token = std::min<int64_t>(K, EL);
      std::vector<std::vector<int32_t>> rows(static_cast<size_t>(EL));
      for (int64_t t = 0; t < T; ++t)
        for (int64_t k = 0; k < per_token; ++k) rows[static_cast<size_t>((k + static_cast<int64_t>(bits_at(s, 106, t) % EL)) % EL)].push_back(static_cast<int32_t>(t));
      int64_t R = 0;
      for (const auto& r : rows) R += static_cast<int64_t>(r.size());
      MOEKIT_RETURN_IF_ERROR(make(L.expert_offsets, DType::kI32, {EL + 1}));
      MOEKIT_RETURN_IF_ERROR(make(L.gather_index, DType::kI32, {R}));
      MOEKIT_RETURN_IF_ERROR(make(L.row_weights, DType::kF32, {R}));
      int32_t n = 0;
      for (int64_t e = 0; e < EL; ++e) {
        L.expert_offsets.data_as<int32_t>()[e] = n;
        for (int32_t t : rows[static_cast<size_t>(e)]) {
          L.gather_index.data_as<int32_t>()[n] = t;
          L.row_weights.data_as<float>()[n] = static_cast<float>(0.55 + 0.45 * uniform_at(s, 107, n));
          ++n;
        }
      }
      L.expert_offsets.data_as<int32_t>()[EL] = n;
      break;
    }
  }
  fill_uniform(L.hidden, std::sqrt(3.0), s, 100);
  return Status::Ok();
}

}  // namespace

void fill_uniform(const TensorView& t, double scale, uint64_t seed, uint64_t stream) {
  const int64_t n = t.numel();
  if (t.dtype() == DType::kBF16) {
    // Truncating a float to its top 16 bits is a valid bf16 with the same distribution.
    auto* p = t.data_as<uint16_t>();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const float f = static_cast<float>(scale * uniform_at(seed, stream, static_cast<uint64_t>(i)));
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      p[i] = static_cast<uint16_t>(bits >> 16);
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) store_element(t.data(), t.dtype(), i, scale * uniform_at(seed, stream, static_cast<uint64_t>(i)));
}

MoeInputs RandomLayer::inputs() const {
  return {.hidden = hidden.view(),
          .router_logits = router_logits.view(),
          .e_score_correction_bias = e_score_correction_bias.view(),
          .topk_ids = topk_ids.view(),
          .topk_weights = topk_weights.view(),
          .masked_m = masked_m.view(),
          .expert_offsets = expert_offsets.view(),
          .gather_index = gather_index.view(),
          .row_weights = row_weights.view()};
}

MoeOutputs RandomLayer::outputs() const {
  MoeOutputs o;
  o.out = out.view();
  return o;
}

Result<RandomLayer> make_random_layer(const MoeProblem& problem, const RandomLayerOptions& o) {
  MOEKIT_RETURN_IF_ERROR(cpu::validate_problem(problem));
  if (o.num_tokens < 0) return Status::InvalidArgument(fmt::format("num_tokens={} must be >= 0", o.num_tokens));
  RandomLayer L;
  L.problem = problem;
  const MoeProblem& p = problem;
  MoeWeights& w = L.weights;
  const Device wdev = o.weights_device;
  if (!wdev.is_cpu() && !o.inputs_only && p.quant != QuantScheme::kNone)
    return Status::Unsupported(fmt::format("make_random_layer: weights_device={} needs quant=none (the {} scheme's weights are made on the host only)",
                                           wdev.to_string(), quant_scheme_name(p.quant)));
  if (!o.inputs_only) {
    MOEKIT_RETURN_IF_ERROR(make_weight(L, {p.gemm1_rows(), p.hidden, &w.w13, &w.w13_scale, &w.w13_global_scale, &w.w13_input_scale}, o.seed, 1, wdev));
    MOEKIT_RETURN_IF_ERROR(make_weight(L, {p.hidden, p.intermediate, &w.w2, &w.w2_scale, &w.w2_global_scale, &w.w2_input_scale}, o.seed, 2, wdev));
  }
  if (o.biases && !o.inputs_only) {
    for (auto [view, n, stream] : {std::tuple{&w.w13_bias, int64_t{p.gemm1_rows()}, 3}, std::tuple{&w.w2_bias, int64_t{p.hidden}, 4}}) {
      auto t = alloc(DType::kF32, {p.local_experts(), n}, wdev);
      if (!t.ok()) return t.status();
      MOEKIT_RETURN_IF_ERROR(fill_uniform_at(t->view(), 0.5, o.seed, static_cast<uint64_t>(stream)));
      *view = t->view();
      L.storage.push_back(std::move(t).value());
    }
  }
  if (!o.weights_only) MOEKIT_RETURN_IF_ERROR(make_inputs(L, o));
  return L;
}

}  // namespace moekit
