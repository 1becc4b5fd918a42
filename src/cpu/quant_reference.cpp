// Reference quantization: validation of every scheme's weight/scale layout, weight dequantization,
// and activation quantize->dequantize. docs/quantization.md is the user-facing statement of what
// this file does; the two must agree.
//
// Exactness rules (so that a GPU kernel can reproduce the activation codes bit for bit):
//   * amax and scales are computed in fp32 from the row values cast to float (fmaxf-style max, so
//     NaN elements are ignored by the amax, as CUDA's fmaxf ignores them);
//   * the scaled value is static_cast<float>(x) / s in fp32, then encoded (round to nearest even,
//     saturating);
//   * the dequantized value decode(q) * s is computed in double (exact: both factors are short).
//   * a scale of 0 or below (zero amax, underflow, or a zero or negative static scale) gives
//     all-zero codes and values; nothing is ever divided by zero.
#include "cpu/quant_reference.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "moekit/float_formats.h"
#include "parallel.h"
#include "validate.h"

namespace moekit::cpu {
namespace {

// How the weight scales are laid out.
enum class WeightScale : uint8_t {
  kNone,        // no scales
  kPerTensor,   // [E_local]
  kPerChannel,  // [E_local, N]
  kBlock128,    // [E_local, ceil(N/128), ceil(K/128)]
  kGroup,       // [E_local, N, K/group] with group = problem.group_size, 32 (MX) or 16 (NVFP4)
};

// What happens to activations before the GEMM.
enum class ActQuant : uint8_t {
  kNone,           // left as they are (16-bit activation schemes)
  kFp8PerTensor,   // e4m3, static scale if *_input_scale is given, else dynamic over all rows
  kFp8PerRow,      // e4m3, dynamic per row
  kFp8Block128,    // e4m3, dynamic per row per 128 along K
  kInt8PerRow,     // int8, dynamic per row
  kMxfp8,          // e4m3 with an e8m0 scale per row per 32 along K
  kNvfp4,          // e2m1 with a ue4m3 scale per row per 16 along K and a static fp32 global scale
  kFp8Static,      // e4m3, static per-tensor scale (required)
};

enum class Need : uint8_t { kNo, kOptional, kRequired };

struct Spec {
  DType weight;  // unused for kNone (the activation dtype)
  WeightScale scale;
  int fixed_group;  // kGroup: 32 or 16 for MX/NVFP4; 0 means problem.group_size
  std::array<DType, 3> scale_dtypes;
  int num_scale_dtypes;
  Need zero_point;
  Need global_scale;
  Need input_scale;
  ActQuant act;
};

constexpr DType kF32 = DType::kF32;

Spec spec_of(QuantScheme q) {
  using enum QuantScheme;
  const std::array<DType, 3> f32{kF32, kF32, kF32};
  const std::array<DType, 3> float3{kF32, DType::kF16, DType::kBF16};
  switch (q) {
    case kNone: return {kF32, WeightScale::kNone, 0, f32, 0, Need::kNo, Need::kNo, Need::kNo, ActQuant::kNone};
    case kFp8PerTensor:
      return {DType::kE4M3, WeightScale::kPerTensor, 0, f32, 1, Need::kNo, Need::kNo, Need::kOptional,
              ActQuant::kFp8PerTensor};
    case kFp8PerToken:
      return {DType::kE4M3, WeightScale::kPerChannel, 0, f32, 1, Need::kNo, Need::kNo, Need::kNo, ActQuant::kFp8PerRow};
    case kFp8Block:
      return {DType::kE4M3, WeightScale::kBlock128, 0, f32, 1, Need::kNo, Need::kNo, Need::kNo, ActQuant::kFp8Block128};
    case kInt8PerToken:
      return {DType::kI8, WeightScale::kPerChannel, 0, f32, 1, Need::kNo, Need::kNo, Need::kNo, ActQuant::kInt8PerRow};
    case kW4A16:
      return {DType::kI4, WeightScale::kGroup, 0, float3, 3, Need::kOptional, Need::kNo, Need::kNo, ActQuant::kNone};
    case kW8A16:
      return {DType::kI8, WeightScale::kGroup, 0, float3, 3, Need::kOptional, Need::kNo, Need::kNo, ActQuant::kNone};
    case kMxfp4:
      return {DType::kE2M1, WeightScale::kGroup, 32, {DType::kE8M0, DType::kE8M0, DType::kE8M0}, 1, Need::kNo,
              Need::kNo, Need::kNo, ActQuant::kNone};
    case kMxfp4Mxfp8:
      return {DType::kE2M1, WeightScale::kGroup, 32, {DType::kE8M0, DType::kE8M0, DType::kE8M0}, 1, Need::kNo,
              Need::kNo, Need::kNo, ActQuant::kMxfp8};
    case kNvfp4:
      return {DType::kE2M1, WeightScale::kGroup, 16, {DType::kUE4M3, DType::kUE4M3, DType::kUE4M3}, 1, Need::kNo,
              Need::kRequired, Need::kRequired, ActQuant::kNvfp4};
    case kW4A8:
      return {DType::kI4, WeightScale::kGroup, 0, f32, 1, Need::kNo, Need::kNo, Need::kRequired, ActQuant::kFp8Static};
  }
  return {kF32, WeightScale::kNone, 0, f32, 0, Need::kNo, Need::kNo, Need::kNo, ActQuant::kNone};
}

// The tensors and dimensions of one GEMM.
struct GemmFields {
  std::string_view prefix;  // "w13" or "w2"
  std::string_view k_name;  // "H" or "I"
  const TensorView& w;
  const TensorView& scale;
  const TensorView& zero_point;
  const TensorView& global_scale;
  const TensorView& input_scale;
  const TensorView& pre_quant_scale;
  int64_t n;
  int64_t k;
};

GemmFields fields_of(const MoeProblem& p, const MoeWeights& w, Gemm g) {
  if (g == Gemm::k1)
    return {"w13", "H", w.w13, w.w13_scale, w.w13_zero_point, w.w13_global_scale, w.w13_input_scale,
            w.w13_pre_quant_scale, p.gemm1_rows(), p.hidden};
  return {"w2", "I", w.w2, w.w2_scale, w.w2_zero_point, w.w2_global_scale, w.w2_input_scale,
          w.w2_pre_quant_scale, p.hidden, p.intermediate};
}

int64_t group_of(const MoeProblem& p, const Spec& s) { return s.fixed_group > 0 ? s.fixed_group : p.group_size; }

std::string shape_str(std::span<const int64_t> s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// The weight-side shape message: "w13_scale: shape [8, 3] does not match [8, 24, 23] required by
// fp8_block ([E_local, ceil(N/128), ceil(K/128)])".
Status check_layout(std::string_view name, const TensorView& t, const std::vector<int64_t>& want, std::string_view by,
                    std::string_view layout) {
  return check_shape(name, t, want, fmt::format("{} required by {} ({})", shape_str(want), by, layout));
}

Status validate_gemm(const MoeProblem& p, const MoeWeights& weights, Gemm g) {
  const Spec spec = spec_of(p.quant);
  const std::string_view scheme = quant_scheme_name(p.quant);
  const GemmFields f = fields_of(p, weights, g);
  const int64_t E = p.local_experts(), N = f.n, K = f.k;
  const std::string w_name(f.prefix);
  const std::string s_name = fmt::format("{}_scale", f.prefix), z_name = fmt::format("{}_zero_point", f.prefix);
  const std::string gs_name = fmt::format("{}_global_scale", f.prefix);
  const std::string is_name = fmt::format("{}_input_scale", f.prefix);
  const std::string pq_name = fmt::format("{}_pre_quant_scale", f.prefix);

  // Placement first: nothing below may read a tensor that is not host memory.
  if (!f.w.defined()) return Status::InvalidArgument(fmt::format("{}: required but not given", w_name));
  const std::pair<const std::string*, const TensorView*> all[] = {{&w_name, &f.w},         {&s_name, &f.scale},
                                                                  {&z_name, &f.zero_point}, {&gs_name, &f.global_scale},
                                                                  {&is_name, &f.input_scale}, {&pq_name, &f.pre_quant_scale}};
  for (const auto& [name, t] : all)
    if (t->defined()) MOEKIT_RETURN_IF_ERROR(check_host_placement(*name, *t));

  // The weight.
  const DType w_dtype = p.quant == QuantScheme::kNone ? p.activation_dtype : spec.weight;
  const std::string by_w = p.quant == QuantScheme::kNone ? std::string("none (the activation dtype)") : std::string(scheme);
  MOEKIT_RETURN_IF_ERROR(check_dtype(w_name, f.w, {&w_dtype, 1}, by_w));
  MOEKIT_RETURN_IF_ERROR(check_layout(w_name, f.w, {E, N, K}, scheme,
                                      g == Gemm::k1 ? "[E_local, gemm1_rows, H]" : "[E_local, H, I]"));
  const int64_t group = spec.scale == WeightScale::kGroup ? group_of(p, spec) : 0;
  if (group > 0 && K % group != 0) {
    if (spec.fixed_group == 0)
      return Status::InvalidArgument(fmt::format("{}: K={}={} is not a multiple of group_size={} ({})", w_name,
                                                 f.k_name, K, group, scheme));
    return Status::InvalidArgument(fmt::format("{}: K={}={} is not a multiple of {}, the {} scale block", w_name,
                                               f.k_name, K, group, scheme));
  }

  // The weight scale.
  if (spec.scale == WeightScale::kNone) {
    if (f.scale.defined()) return Status::InvalidArgument(fmt::format("{}: given but {} has no weight scales", s_name, scheme));
  } else {
    if (!f.scale.defined()) return Status::InvalidArgument(fmt::format("{}: required by {} but not given", s_name, scheme));
    MOEKIT_RETURN_IF_ERROR(check_dtype(s_name, f.scale, {spec.scale_dtypes.data(), size_t(spec.num_scale_dtypes)}, scheme));
    switch (spec.scale) {
      case WeightScale::kPerTensor:
        MOEKIT_RETURN_IF_ERROR(check_layout(s_name, f.scale, {E}, scheme, "[E_local]"));
        break;
      case WeightScale::kPerChannel:
        MOEKIT_RETURN_IF_ERROR(check_layout(s_name, f.scale, {E, N}, scheme, "[E_local, N]"));
        break;
      case WeightScale::kBlock128:
        MOEKIT_RETURN_IF_ERROR(check_layout(s_name, f.scale, {E, (N + 127) / 128, (K + 127) / 128}, scheme,
                                            "[E_local, ceil(N/128), ceil(K/128)]"));
        break;
      case WeightScale::kGroup:
        MOEKIT_RETURN_IF_ERROR(check_layout(s_name, f.scale, {E, N, K / group}, scheme,
                                            fmt::format("[E_local, N, K/{}]", spec.fixed_group ? std::to_string(group)
                                                                                               : std::string("group_size"))));
        break;
      case WeightScale::kNone: break;
    }
  }

  // Zero points: same layout as the group scales; stored as floats (f32 or the scale dtype).
  if (f.zero_point.defined()) {
    if (spec.zero_point == Need::kNo)
      return Status::InvalidArgument(fmt::format("{}: given but {} has no zero points", z_name, scheme));
    const DType zd[] = {kF32, f.scale.dtype()};
    MOEKIT_RETURN_IF_ERROR(check_dtype(z_name, f.zero_point, zd, fmt::format("{} (f32 or the scale dtype)", scheme)));
    MOEKIT_RETURN_IF_ERROR(check_layout(z_name, f.zero_point, {E, N, K / group}, scheme, "[E_local, N, K/group_size]"));
  }

  if (f.global_scale.defined()) {
    if (spec.global_scale == Need::kNo)
      return Status::InvalidArgument(fmt::format("{}: given but {} has no global scales", gs_name, scheme));
    MOEKIT_RETURN_IF_ERROR(check_dtype(gs_name, f.global_scale, {&kF32, 1}, scheme));
    MOEKIT_RETURN_IF_ERROR(check_layout(gs_name, f.global_scale, {E}, scheme, "[E_local]"));
  } else if (spec.global_scale == Need::kRequired) {
    return Status::InvalidArgument(fmt::format("{}: required by {} but not given", gs_name, scheme));
  }

  if (f.input_scale.defined()) {
    if (spec.input_scale == Need::kNo)
      return Status::InvalidArgument(fmt::format("{}: given but {} has no static input scales", is_name, scheme));
    MOEKIT_RETURN_IF_ERROR(check_dtype(is_name, f.input_scale, {&kF32, 1}, scheme));
    if (f.input_scale.ndim() != 0) MOEKIT_RETURN_IF_ERROR(check_layout(is_name, f.input_scale, {E}, scheme, "[] or [E_local]"));
  } else if (spec.input_scale == Need::kRequired) {
    return Status::InvalidArgument(fmt::format("{}: required by {} but not given", is_name, scheme));
  }

  // AWQ pre-quant scale: any scheme.
  if (f.pre_quant_scale.defined()) {
    const DType pd[] = {kF32, DType::kF16, DType::kBF16};
    MOEKIT_RETURN_IF_ERROR(check_dtype(pq_name, f.pre_quant_scale, pd, "a pre-quant scale"));
    const std::string layout = fmt::format("[{0}] or [E_local, {0}]", f.k_name);
    if (f.pre_quant_scale.ndim() == 1) MOEKIT_RETURN_IF_ERROR(check_layout(pq_name, f.pre_quant_scale, {K}, scheme, layout));
    else MOEKIT_RETURN_IF_ERROR(check_layout(pq_name, f.pre_quant_scale, {E, K}, scheme, layout));
  }
  return Status::Ok();
}

// ---- activation quantization helpers -------------------------------------------------------------

enum class Codec : uint8_t { kE4M3, kI8, kE2M1 };

// decode(encode(v)) for the element codec; v is the fp32 quotient x/s.
double round_trip(Codec c, float v) {
  switch (c) {
    case Codec::kE4M3: return decode_e4m3(encode_e4m3(v, Overflow::kSaturate));
    case Codec::kI8: return encode_i8(v);
    case Codec::kE2M1: return decode_e2m1(encode_e2m1(v));
  }
  return 0;
}

// fmaxf semantics: a NaN element does not poison the amax.
float amax_of(const double* x, int64_t n) {
  float a = 0.0f;
  for (int64_t i = 0; i < n; ++i) a = std::fmax(a, std::fabs(static_cast<float>(x[i])));
  return a;
}

// x[i] <- decode(encode(float(x[i]) / s)) * s. A scale of 0 or below gives zeros (no 0/0; a
// negative static scale is not a valid scale, and would otherwise give back about x).
void fake_quant(double* x, int64_t n, float s, Codec c) {
  if (s <= 0.0f) {
    std::fill(x, x + n, 0.0);
    return;
  }
  for (int64_t i = 0; i < n; ++i) x[i] = round_trip(c, static_cast<float>(x[i]) / s) * static_cast<double>(s);
}

// Dynamic scales per row per `block` elements along K (block = K: per row); s = amax / qmax in fp32.
void quant_blocks(std::span<double> rows, int64_t K, int64_t block, float qmax, Codec c) {
  const int64_t R = static_cast<int64_t>(rows.size()) / K;
#pragma omp parallel for schedule(static) if (worth_parallel(R * K * kCostOfEncode))
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t b = 0; b < K; b += block) {
      double* x = rows.data() + r * K + b;
      const int64_t n = std::min(block, K - b);
      fake_quant(x, n, amax_of(x, n) / qmax, c);
    }
  }
}

// MXFP8: an e8m0 scale per 32, rounded up so that amax / scale <= 448 (nothing saturates).
void quant_mxfp8(std::span<double> rows, int64_t K) {
  const int64_t R = static_cast<int64_t>(rows.size()) / K;
#pragma omp parallel for schedule(static) if (worth_parallel(R * K * kCostOfEncode))
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t b = 0; b < K; b += 32) {
      double* x = rows.data() + r * K + b;
      const int64_t n = std::min<int64_t>(32, K - b);
      const uint8_t code = encode_e8m0(amax_of(x, n) / 448.0f, ScaleRounding::kUp, Overflow::kSaturate);
      const double scale = decode_e8m0(code);  // a power of two in [2^-127, 2^127]: exact as a float
      const float s = static_cast<float>(scale);
      for (int64_t i = 0; i < n; ++i) x[i] = decode_e4m3(encode_e4m3(static_cast<float>(x[i]) / s)) * scale;
    }
  }
}

// NVFP4: a ue4m3 scale per 16 relative to the global dequant multiplier g.
void quant_nvfp4_row(double* x, int64_t K, float g) {
  for (int64_t b = 0; b < K; b += 16) {
    double* xb = x + b;
    const int64_t n = std::min<int64_t>(16, K - b);
    const float a = amax_of(xb, n);
    const uint8_t sf = a == 0.0f ? uint8_t{0} : encode_ue4m3(a / (6.0f * g));
    const double sf_value = decode_ue4m3(sf);
    const float d = static_cast<float>(sf_value) * g;  // fp32 divisor, as a kernel computes it
    for (int64_t i = 0; i < n; ++i) {
      // d == 0 (zero block, zero or negative g): all codes 0.
      const double q = d == 0.0f ? 0.0 : decode_e2m1(encode_e2m1(static_cast<float>(xb[i]) / d));
      xb[i] = q * sf_value * static_cast<double>(g);  // exact in double
    }
  }
}

}  // namespace

Status validate_quantization(const MoeProblem& problem, const MoeWeights& weights) {
  const DType a = problem.activation_dtype;
  if (a != DType::kF32 && a != DType::kF16 && a != DType::kBF16)
    return Status::InvalidArgument(fmt::format("activation_dtype: {} is not f32, f16 or bf16", dtype_name(a)));
  const Spec spec = spec_of(problem.quant);
  if (spec.scale == WeightScale::kGroup && spec.fixed_group == 0) {
    const int gs = problem.group_size;
    if (gs != 32 && gs != 64 && gs != 128)
      return Status::InvalidArgument(fmt::format("group_size={} is not 32, 64 or 128 (required by {})", gs,
                                                 quant_scheme_name(problem.quant)));
  }
  MOEKIT_RETURN_IF_ERROR(validate_gemm(problem, weights, Gemm::k1));
  return validate_gemm(problem, weights, Gemm::k2);
}

void dequantize_weight_row(const MoeProblem& problem, const MoeWeights& weights, Gemm g, int e, int64_t n, double* out,
                           int64_t stride) {
  const Spec spec = spec_of(problem.quant);
  const GemmFields f = fields_of(problem, weights, g);
  const int64_t N = f.n, K = f.k;
  const int64_t row = (static_cast<int64_t>(e) * N + n) * K;  // first element of the row
  const void* sd = f.scale.data();
  const DType st = f.scale.dtype();
  // One scale for the whole row (1 for kNone); the block and group scales change along k.
  double row_scale = 1.0;
  if (spec.scale == WeightScale::kPerTensor) row_scale = load_element(sd, st, e);
  if (spec.scale == WeightScale::kPerChannel) row_scale = load_element(sd, st, static_cast<int64_t>(e) * N + n);
  const int64_t group = spec.scale == WeightScale::kGroup ? group_of(problem, spec) : 128;
  const int64_t G = K / group;
  const bool has_zero = f.zero_point.defined();
  // NVFP4's global scale; 1 otherwise. All products below are exact in double.
  const double global = f.global_scale.defined() ? load_element(f.global_scale.data(), f.global_scale.dtype(), e) : 1.0;

  // The row is decoded in chunks of 128 codes (a multiple of every group and the fp8 block), so a
  // chunk never straddles a scale block and the buffer stays on the stack.
  constexpr int64_t kChunk = 128;
  double q[kChunk];
  for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
    const int64_t c = std::min(kChunk, K - k0);
    load_elements(f.w.data(), f.w.dtype(), row + k0, c, q);
    double* o = out + k0 * stride;
    switch (spec.scale) {
      case WeightScale::kNone:
        for (int64_t i = 0; i < c; ++i) o[i * stride] = q[i];
        break;
      case WeightScale::kPerTensor:
      case WeightScale::kPerChannel:
        for (int64_t i = 0; i < c; ++i) o[i * stride] = q[i] * row_scale;
        break;
      case WeightScale::kBlock128: {
        const int64_t kb = (K + 127) / 128;
        const double s = load_element(sd, st, (static_cast<int64_t>(e) * ((N + 127) / 128) + n / 128) * kb + k0 / 128);
        for (int64_t i = 0; i < c; ++i) o[i * stride] = q[i] * s;
        break;
      }
      case WeightScale::kGroup:
        for (int64_t g0 = 0; g0 < c; g0 += group) {
          const int64_t si = (static_cast<int64_t>(e) * N + n) * G + (k0 + g0) / group;
          const double z = has_zero ? load_element(f.zero_point.data(), f.zero_point.dtype(), si) : 0.0;
          const double s = load_element(sd, st, si);
          for (int64_t i = g0; i < g0 + group; ++i) o[i * stride] = (q[i] - z) * s * global;
        }
        break;
    }
  }
}

void dequantize_weight(const MoeProblem& problem, const MoeWeights& weights, Gemm g, int e, std::vector<double>& out) {
  const GemmFields f = fields_of(problem, weights, g);
  out.resize(static_cast<size_t>(f.n * f.k));
  for (int64_t n = 0; n < f.n; ++n) dequantize_weight_row(problem, weights, g, e, n, out.data() + n * f.k, 1);
}

void quantize_activations(const MoeProblem& problem, const MoeWeights& weights, Gemm g, std::span<double> rows,
                          int64_t K, std::span<const int32_t> row_expert) {
  if (K <= 0 || rows.empty()) return;
  const Spec spec = spec_of(problem.quant);
  const GemmFields f = fields_of(problem, weights, g);
  const int64_t R = static_cast<int64_t>(rows.size()) / K;
  // row_expert: one entry per row, or a single entry for all rows, or empty (expert 0).
  auto expert_of = [&](int64_t r) -> int64_t {
    if (row_expert.empty()) return 0;
    return row_expert.size() == 1 ? row_expert[0] : row_expert[static_cast<size_t>(r)];
  };
  // A static scalar [] or per-expert [E_local] fp32 scale.
  auto static_scale = [&](const TensorView& t, int64_t r) -> float {
    return static_cast<float>(load_element(t.data(), t.dtype(), t.ndim() == 0 ? 0 : expert_of(r)));
  };

  // AWQ first. The product of a 16- or 32-bit value and a 32-bit scale is exact in double, so
  // rounding it to float later is the same as an fp32 multiply.
  if (f.pre_quant_scale.defined()) {
    const TensorView& pq = f.pre_quant_scale;
#pragma omp parallel for schedule(static) if (worth_parallel(R * K))
    for (int64_t r = 0; r < R; ++r) {
      const int64_t off = pq.ndim() == 2 ? expert_of(r) * K : 0;
      for (int64_t k = 0; k < K; ++k) rows[r * K + k] *= load_element(pq.data(), pq.dtype(), off + k);
    }
  }

  switch (spec.act) {
    case ActQuant::kNone: return;
    case ActQuant::kFp8PerTensor:
      if (!f.input_scale.defined()) {
        // Dynamic: one scale for everything passed in. max is order-independent, so the parallel
        // per-row amax followed by a serial max is deterministic.
        std::vector<float> row_amax(static_cast<size_t>(R));
#pragma omp parallel for schedule(static) if (worth_parallel(R * K))
        for (int64_t r = 0; r < R; ++r) row_amax[r] = amax_of(rows.data() + r * K, K);
        float amax = 0.0f;
        for (float a : row_amax) amax = std::fmax(amax, a);
        const float s = amax / 448.0f;
#pragma omp parallel for schedule(static) if (worth_parallel(R * K * kCostOfEncode))
        for (int64_t r = 0; r < R; ++r) fake_quant(rows.data() + r * K, K, s, Codec::kE4M3);
        return;
      }
      [[fallthrough]];
    case ActQuant::kFp8Static:
#pragma omp parallel for schedule(static) if (worth_parallel(R * K * kCostOfEncode))
      for (int64_t r = 0; r < R; ++r) fake_quant(rows.data() + r * K, K, static_scale(f.input_scale, r), Codec::kE4M3);
      return;
    case ActQuant::kFp8PerRow: quant_blocks(rows, K, K, 448.0f, Codec::kE4M3); return;
    case ActQuant::kFp8Block128: quant_blocks(rows, K, 128, 448.0f, Codec::kE4M3); return;
    case ActQuant::kInt8PerRow: quant_blocks(rows, K, K, 127.0f, Codec::kI8); return;
    case ActQuant::kMxfp8: quant_mxfp8(rows, K); return;
    case ActQuant::kNvfp4:
#pragma omp parallel for schedule(static) if (worth_parallel(R * K * kCostOfEncode))
      for (int64_t r = 0; r < R; ++r) quant_nvfp4_row(rows.data() + r * K, K, static_scale(f.input_scale, r));
      return;
  }
}

}  // namespace moekit::cpu
