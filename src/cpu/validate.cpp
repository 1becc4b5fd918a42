// Validation of a whole layer call for the CPU backend: nothing runs until all of this passes.
#include "validate.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "moekit/cpu_reference.h"
#include "quant_reference.h"
#include "routing_reference.h"

namespace moekit::cpu {

namespace {

// Where the tensors being checked live. Host tensors are also checked by value (ids in range, masked
// counts, offsets); device tensors only by shape and dtype, since reading them would synchronize.
thread_local Residence g_residence = Residence::kHost;
bool reads_values() { return g_residence == Residence::kHost; }

class ResidenceScope {
 public:
  explicit ResidenceScope(Residence r) : previous_(g_residence) { g_residence = r; }
  ~ResidenceScope() { g_residence = previous_; }
  ResidenceScope(const ResidenceScope&) = delete;
  ResidenceScope& operator=(const ResidenceScope&) = delete;

 private:
  Residence previous_;
};

// The wanted shape as the messages print it.
std::string wanted(std::span<const int64_t> shape, std::string_view expected) {
  return expected.empty() ? fmt::format("[{}]", fmt::join(shape, ", ")) : std::string(expected);
}

}  // namespace

Status check_host_placement(std::string_view name, const TensorView& t) {
  if (g_residence == Residence::kCuda && !t.device().is_cuda())
    return Status::InvalidArgument(fmt::format("{}: {} is not a CUDA device tensor, which the CUDA backend needs", name, t.describe()));
  if (g_residence == Residence::kHost && !t.device().is_cpu())
    return Status::InvalidArgument(fmt::format("{}: {} is not a host (cpu) tensor, which the CPU reference needs", name, t.describe()));
  if (!t.is_contiguous())
    return Status::InvalidArgument(fmt::format("{}: {} with strides [{}] is not contiguous", name, t.describe(),
                                               fmt::join(t.strides(), ", ")));
  return Status::Ok();
}

Status check_dtype(std::string_view name, const TensorView& t, std::span<const DType> allowed, std::string_view by) {
  if (std::find(allowed.begin(), allowed.end(), t.dtype()) != allowed.end()) return Status::Ok();
  const std::string suffix = by.empty() ? std::string() : fmt::format(" {} {}", allowed.size() == 1 ? "required by" : "allowed by", by);
  if (allowed.size() == 1)
    return Status::InvalidArgument(fmt::format("{}: dtype {} does not match {}{}", name, dtype_name(t.dtype()),
                                               dtype_name(allowed[0]), suffix));
  std::vector<std::string_view> names;
  for (DType d : allowed) names.push_back(dtype_name(d));
  return Status::InvalidArgument(fmt::format("{}: dtype {} is not one of {}{}", name, dtype_name(t.dtype()),
                                             fmt::join(names, ", "), suffix));
}

Status check_shape(std::string_view name, const TensorView& t, std::span<const int64_t> shape, std::string_view expected) {
  bool ok = t.ndim() == static_cast<int>(shape.size());
  for (size_t d = 0; ok && d < shape.size(); ++d) ok = shape[d] < 0 || t.size(static_cast<int>(d)) == shape[d];
  if (ok) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("{}: shape [{}] does not match {}", name, fmt::join(t.shape(), ", "), wanted(shape, expected)));
}

Status check_host_tensor(std::string_view name, const TensorView& t, std::initializer_list<DType> dtypes,
                         std::span<const int64_t> shape, std::string_view expected) {
  if (!t.defined())
    return Status::InvalidArgument(fmt::format("{}: required but not given (expected {})", name, wanted(shape, expected)));
  MOEKIT_RETURN_IF_ERROR(check_host_placement(name, t));
  MOEKIT_RETURN_IF_ERROR(check_dtype(name, t, std::span<const DType>(dtypes.begin(), dtypes.size())));
  return check_shape(name, t, shape, expected);
}

int local_expert_of(const MoeProblem& p, const MoeWeights& w, int g) {
  if (w.expert_map.data() != nullptr) return w.expert_map.data_as<const int32_t>()[g];
  const int local = g - p.local_expert_begin;
  return (local >= 0 && local < p.local_experts()) ? local : -1;
}

namespace {

Status check_problem(const MoeProblem& p) {
  if (p.num_experts < 1) return Status::InvalidArgument(fmt::format("num_experts={} must be at least 1", p.num_experts));
  if (p.hidden < 1) return Status::InvalidArgument(fmt::format("hidden={} must be at least 1", p.hidden));
  if (p.intermediate < 1) return Status::InvalidArgument(fmt::format("intermediate={} must be at least 1", p.intermediate));
  const bool routed = p.input_format == InputFormat::kStandard || p.input_format == InputFormat::kPreRouted;
  if (routed && p.top_k < 1) return Status::InvalidArgument(fmt::format("top_k={} must be at least 1", p.top_k));
  if (routed && p.top_k > p.num_experts)
    return Status::InvalidArgument(fmt::format("top_k={} exceeds num_experts={}", p.top_k, p.num_experts));
  if (p.num_local_experts == 0 || p.num_local_experts < -1)
    return Status::InvalidArgument(fmt::format("num_local_experts={} must be positive (or -1 for all)", p.num_local_experts));
  if (p.local_expert_begin < 0 || p.local_expert_begin + p.local_experts() > p.num_experts)
    return Status::InvalidArgument(fmt::format("local experts [{}, {}) are not within num_experts={}", p.local_expert_begin,
                                               p.local_expert_begin + p.local_experts(), p.num_experts));
  if (p.activation_dtype != DType::kF32 && p.activation_dtype != DType::kF16 && p.activation_dtype != DType::kBF16)
    return Status::InvalidArgument(fmt::format("activation_dtype={} must be f32, f16 or bf16", dtype_name(p.activation_dtype)));
  if (p.apply_router_weight_on_input && p.top_k != 1)
    return Status::InvalidArgument(fmt::format("apply_router_weight_on_input requires top_k=1, got top_k={}", p.top_k));
  if (p.apply_router_weight_on_input && !routed)
    return Status::InvalidArgument(fmt::format("apply_router_weight_on_input needs routing weights; input_format={} has none",
                                               input_format_name(p.input_format)));
  if (p.no_combine && !routed)
    return Status::InvalidArgument(fmt::format("no_combine is defined for the standard and pre_routed formats, not input_format={}",
                                               input_format_name(p.input_format)));
  if (p.activation.kind == Activation::kSwiGLUClamped && !(p.activation.limit > 0))
    return Status::InvalidArgument(fmt::format("activation.limit={} must be positive", p.activation.limit));
  return Status::Ok();
}

Status check_routing(const MoeProblem& p, const MoeInputs& in, int64_t T) {
  const int64_t E = p.num_experts, K = p.top_k;
  if (p.input_format == InputFormat::kStandard) {
    const int64_t logits_shape[] = {T, E};
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("router_logits", in.router_logits, {DType::kF32, DType::kBF16}, logits_shape));
    MOEKIT_RETURN_IF_ERROR(validate_routing_params(p.routing, p.num_experts, p.top_k).with_context("routing"));
    if (p.routing.method == RoutingMethod::kDeepSeekV3) {
      const int64_t bias_shape[] = {E};
      MOEKIT_RETURN_IF_ERROR(check_host_tensor("e_score_correction_bias", in.e_score_correction_bias, {DType::kF32, DType::kBF16}, bias_shape));
    } else if (in.e_score_correction_bias.defined()) {
      return Status::InvalidArgument("e_score_correction_bias: given, but only routing method kDeepSeekV3 uses it");
    }
    return Status::Ok();
  }
  const int64_t topk_shape[] = {T, K};
  MOEKIT_RETURN_IF_ERROR(check_host_tensor("topk_ids", in.topk_ids, {DType::kI32}, topk_shape));
  MOEKIT_RETURN_IF_ERROR(check_host_tensor("topk_weights", in.topk_weights, {DType::kF32}, topk_shape));
  const auto* ids = in.topk_ids.data_as<const int32_t>();
  for (int64_t i = 0; reads_values() && i < T * K; ++i)
    if (ids[i] < 0 || ids[i] >= E)
      return Status::InvalidArgument(fmt::format("topk_ids[{}, {}]={} is outside [0, num_experts={})", i / K, i % K, ids[i], E));
  return Status::Ok();
}

Status check_format(const MoeProblem& p, const MoeInputs& in, const MoeOutputs& out) {
  const DType act = p.activation_dtype;
  const int64_t H = p.hidden, EL = p.local_experts(), K = p.top_k;
  if (p.input_format == InputFormat::kMasked) {
    if (in.hidden.ndim() != 3) return Status::InvalidArgument(fmt::format("hidden: masked format needs [E_local, max_m, H], got {}", in.hidden.describe()));
    const int64_t max_m = in.hidden.size(1);
    const int64_t shape[] = {EL, max_m, H};
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("hidden", in.hidden, {act}, shape));
    const int64_t m_shape[] = {EL};
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("masked_m", in.masked_m, {DType::kI32}, m_shape));
    for (int64_t e = 0; reads_values() && e < EL; ++e) {
      const int32_t m = in.masked_m.data_as<const int32_t>()[e];
      if (m < 0 || m > max_m) return Status::InvalidArgument(fmt::format("masked_m[{}]={} is outside [0, max_m={}]", e, m, max_m));
    }
    return check_host_tensor("out", out.out, {act}, shape);
  }
  if (in.hidden.ndim() != 2) return Status::InvalidArgument(fmt::format("hidden: expected [T, H={}], got {}", H, in.hidden.describe()));
  const int64_t T = in.hidden.size(0);
  const int64_t hidden_shape[] = {T, H};
  MOEKIT_RETURN_IF_ERROR(check_host_tensor("hidden", in.hidden, {act}, hidden_shape));
  if (p.input_format == InputFormat::kIndexed) {
    const int64_t off_shape[] = {EL + 1};
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("expert_offsets", in.expert_offsets, {DType::kI32}, off_shape));
    if (!reads_values()) {
      // R is on the device: gather_index and row_weights are the [R_max] buffers the rows come from.
      const int64_t any[] = {-1};
      MOEKIT_RETURN_IF_ERROR(check_host_tensor("gather_index", in.gather_index, {DType::kI32}, any));
      const int64_t r_shape[] = {in.gather_index.size(0)};
      MOEKIT_RETURN_IF_ERROR(check_host_tensor("row_weights", in.row_weights, {DType::kF32}, r_shape));
    } else {
    const auto* off = in.expert_offsets.data_as<const int32_t>();
    if (off[0] != 0) return Status::InvalidArgument(fmt::format("expert_offsets[0]={} must be 0", off[0]));
    for (int64_t e = 0; e < EL; ++e)
      if (off[e + 1] < off[e])
        return Status::InvalidArgument(fmt::format("expert_offsets[{}]={} is below expert_offsets[{}]={}", e + 1, off[e + 1], e, off[e]));
    const int64_t R = off[EL];
    const int64_t r_shape[] = {R};
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("gather_index", in.gather_index, {DType::kI32}, r_shape));
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("row_weights", in.row_weights, {DType::kF32}, r_shape));
    for (int64_t r = 0; r < R; ++r) {
      const int32_t t = in.gather_index.data_as<const int32_t>()[r];
      if (t < 0 || t >= T) return Status::InvalidArgument(fmt::format("gather_index[{}]={} is outside [0, T={})", r, t, T));
    }
    }
  } else {
    MOEKIT_RETURN_IF_ERROR(check_routing(p, in, T));
  }
  if (p.no_combine) {
    const int64_t shape[] = {T, K, H};
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("out", out.out, {act}, shape).with_context("no_combine output"));
  } else {
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("out", out.out, {act}, hidden_shape));
  }
  const bool routed_here = p.input_format == InputFormat::kStandard;
  const int64_t topk_shape[] = {T, K};
  if (out.topk_ids.defined()) {
    if (!routed_here) return Status::InvalidArgument("outputs.topk_ids: given, but only the standard format routes");
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("outputs.topk_ids", out.topk_ids, {DType::kI32}, topk_shape));
  }
  if (out.topk_weights.defined()) {
    if (!routed_here) return Status::InvalidArgument("outputs.topk_weights: given, but only the standard format routes");
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("outputs.topk_weights", out.topk_weights, {DType::kF32}, topk_shape));
  }
  return Status::Ok();
}

Status check_weights(const MoeProblem& p, const MoeWeights& w) {
  const int64_t EL = p.local_experts(), H = p.hidden, I = p.intermediate, N1 = p.gemm1_rows();
  if (w.w13.ndim() != 3 || w.w13.size(0) != EL || w.w13.size(1) != N1 || w.w13.size(2) != H)
    return Status::InvalidArgument(fmt::format("w13: shape [{}] does not match [E_local={}, gemm1_rows={}, hidden={}]",
                                               fmt::join(w.w13.shape(), ", "), EL, N1, H));
  if (w.w2.ndim() != 3 || w.w2.size(0) != EL || w.w2.size(1) != H || w.w2.size(2) != I)
    return Status::InvalidArgument(fmt::format("w2: shape [{}] does not match [E_local={}, hidden={}, intermediate={}]",
                                               fmt::join(w.w2.shape(), ", "), EL, H, I));
  const std::initializer_list<DType> bias_types = {DType::kF32, DType::kF16, DType::kBF16};
  if (w.w13_bias.defined()) {
    const int64_t shape[] = {EL, N1};
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("w13_bias", w.w13_bias, bias_types, shape));
  }
  if (w.w2_bias.defined()) {
    const int64_t shape[] = {EL, H};
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("w2_bias", w.w2_bias, bias_types, shape));
  }
  if (w.expert_map.defined()) {
    const int64_t shape[] = {p.num_experts};
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("expert_map", w.expert_map, {DType::kI32}, shape));
    for (int g = 0; reads_values() && g < p.num_experts; ++g) {
      const int32_t l = w.expert_map.data_as<const int32_t>()[g];
      if (l < -1 || l >= EL) return Status::InvalidArgument(fmt::format("expert_map[{}]={} is outside [-1, E_local={})", g, l, EL));
    }
  }
  return validate_quantization(p, w);
}

}  // namespace

Status validate_problem(const MoeProblem& p) {
  MOEKIT_RETURN_IF_ERROR(check_problem(p));
  if (p.input_format == InputFormat::kStandard)
    MOEKIT_RETURN_IF_ERROR(validate_routing_params(p.routing, p.num_experts, p.top_k).with_context("routing"));
  return Status::Ok();
}

Status validate_weights(const MoeProblem& p, const MoeWeights& w) {
  MOEKIT_RETURN_IF_ERROR(check_problem(p));
  return check_weights(p, w);
}

Status validate_io(const MoeProblem& p, const MoeInputs& in, const MoeOutputs& out) { return check_format(p, in, out); }

Status validate_weights_on(const MoeProblem& p, const MoeWeights& w, Residence where) {
  const ResidenceScope scope(where);
  return validate_weights(p, w);
}

Status validate_io_on(const MoeProblem& p, const MoeInputs& in, const MoeOutputs& out, Residence where) {
  const ResidenceScope scope(where);
  return validate_io(p, in, out);
}

Status validate(const MoeProblem& p, const MoeWeights& w, const MoeInputs& in, const MoeOutputs& out) {
  MOEKIT_RETURN_IF_ERROR(check_problem(p));
  MOEKIT_RETURN_IF_ERROR(check_weights(p, w));
  return check_format(p, in, out);
}

}  // namespace moekit::cpu
