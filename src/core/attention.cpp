// Shared-context attention: the parts every backend shares (names, the scale, validation).
// The backends live in moekit_cpu / moekit_cuda; the dispatcher and the cache in moekit_attention.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "moekit/attention.h"

#include "attention_checks.h"

namespace moekit {

double AttentionParams::scale() const {
  if (softmax_scale != 0.0f) return softmax_scale;
  return head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(head_dim)) : 0.0;
}

std::string_view attention_backend_name(AttentionBackend b) {
  switch (b) {
    case AttentionBackend::kAuto: return "auto";
    case AttentionBackend::kCpuReference: return "cpu_reference";
    case AttentionBackend::kCuda: return "cuda";
    case AttentionBackend::kReplicated: return "replicated";
  }
  return "unknown";
}

std::optional<AttentionBackend> parse_attention_backend(std::string_view name) {
  for (AttentionBackend b : {AttentionBackend::kAuto, AttentionBackend::kCpuReference, AttentionBackend::kCuda,
                             AttentionBackend::kReplicated})
    if (name == attention_backend_name(b)) return b;
  if (name == "cpu") return AttentionBackend::kCpuReference;
  return std::nullopt;
}

namespace {

bool supported_head_dim(int d) { return d == 16 || d == 32 || d == 64 || d == 128; }
bool supported_dtype(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

}  // namespace

Status validate_attention_params(const AttentionParams& p) {
  if (p.batch < 0) return Status::InvalidArgument(fmt::format("batch={} must be >= 0", p.batch));
  if (p.num_q_heads < 1) return Status::InvalidArgument(fmt::format("num_q_heads={} must be >= 1", p.num_q_heads));
  if (p.num_kv_heads < 1) return Status::InvalidArgument(fmt::format("num_kv_heads={} must be >= 1", p.num_kv_heads));
  if (p.num_q_heads % p.num_kv_heads != 0)
    return Status::InvalidArgument(
        fmt::format("num_q_heads={} is not a multiple of num_kv_heads={}", p.num_q_heads, p.num_kv_heads));
  if (p.q_len < 1) return Status::InvalidArgument(fmt::format("q_len={} must be >= 1", p.q_len));
  if (!supported_head_dim(p.head_dim))
    return Status::InvalidArgument(fmt::format("head_dim={} is not supported (16, 32, 64 or 128)", p.head_dim));
  if (!std::isfinite(p.softmax_scale))
    return Status::InvalidArgument(fmt::format("softmax_scale={} must be finite (0 means 1/sqrt(head_dim))", p.softmax_scale));
  if (!supported_dtype(p.dtype))
    return Status::InvalidArgument(fmt::format("dtype={} is not supported (f32, f16 or bf16)", dtype_name(p.dtype)));
  return Status::Ok();
}

namespace detail {

Status check_attention_tensor(std::string_view name, const TensorView& t, DType dtype, std::string_view dims,
                              std::span<const int64_t> expected, std::string_view dtype_source) {
  if (!t.defined())
    return Status::InvalidArgument(fmt::format("{}: required tensor is missing (expected {})", name, dims));
  if (t.ndim() != static_cast<int>(expected.size()))
    return Status::InvalidArgument(fmt::format("{}: expected {} dims {}, got {} ([{}])", name, expected.size(), dims,
                                               t.ndim(), fmt::join(t.shape(), ", ")));
  for (size_t d = 0; d < expected.size(); ++d) {
    if (expected[d] >= 0 && t.size(static_cast<int>(d)) != expected[d]) {
      std::vector<std::string> want;
      for (int64_t e : expected) want.push_back(e >= 0 ? std::to_string(e) : std::string("*"));
      return Status::InvalidArgument(fmt::format("{}: shape [{}] does not match {} = [{}]", name,
                                                 fmt::join(t.shape(), ", "), dims, fmt::join(want, ", ")));
    }
  }
  if (t.dtype() != dtype)
    return Status::InvalidArgument(
        fmt::format("{}: dtype {} does not match {}={}", name, dtype_name(t.dtype()), dtype_source, dtype_name(dtype)));
  if (!t.is_contiguous()) return Status::InvalidArgument(fmt::format("{}: tensor {} must be contiguous", name, t.describe()));
  return Status::Ok();
}

}  // namespace detail

namespace {

using detail::check_attention_tensor;

Status check_same_device(std::string_view name, const TensorView& t, const TensorView& q) {
  if (t.defined() && !(t.device() == q.device()))
    return Status::InvalidArgument(fmt::format("{}: on {} but q is on {}; all tensors must be on one device", name,
                                               t.device().to_string(), q.device().to_string()));
  return Status::Ok();
}

// A K/V pair that is optional as a whole: both given or neither.
Status check_pair_given(std::string_view k_name, const TensorView& k, std::string_view v_name, const TensorView& v) {
  if (k.defined() && !v.defined()) return Status::InvalidArgument(fmt::format("{}: missing while {} is given", v_name, k_name));
  if (!k.defined() && v.defined()) return Status::InvalidArgument(fmt::format("{}: missing while {} is given", k_name, v_name));
  return Status::Ok();
}

}  // namespace

Status validate_attention_inputs(const AttentionParams& p, const AttentionInputs& in) {
  MOEKIT_RETURN_IF_ERROR(validate_attention_params(p));
  const int64_t B = p.batch, Hq = p.num_q_heads, Hkv = p.num_kv_heads, Lq = p.q_len, D = p.head_dim;
  const int64_t q_shape[] = {B, Hq, Lq, D};
  MOEKIT_RETURN_IF_ERROR(check_attention_tensor("q", in.q, p.dtype, "[B, Hq, Lq, D]", q_shape, "params.dtype"));

  MOEKIT_RETURN_IF_ERROR(check_pair_given("context_k", in.context_k, "context_v", in.context_v));
  if (in.context_k.defined()) {
    const int64_t ctx_shape[] = {Hkv, -1, D};
    MOEKIT_RETURN_IF_ERROR(check_attention_tensor("context_k", in.context_k, p.dtype, "[Hkv, Nctx, D]", ctx_shape, "params.dtype"));
    const int64_t v_shape[] = {Hkv, in.context_k.size(1), D};
    MOEKIT_RETURN_IF_ERROR(check_attention_tensor("context_v", in.context_v, p.dtype, "[Hkv, Nctx, D] (context_k's shape)", v_shape,
                                        "params.dtype"));
  }

  MOEKIT_RETURN_IF_ERROR(check_pair_given("buffer_k", in.buffer_k, "buffer_v", in.buffer_v));
  if (in.buffer_k.defined()) {
    const int64_t buf_shape[] = {B, Hkv, -1, D};
    MOEKIT_RETURN_IF_ERROR(check_attention_tensor("buffer_k", in.buffer_k, p.dtype, "[B, Hkv, Nbuf_max, D]", buf_shape, "params.dtype"));
    const int64_t v_shape[] = {B, Hkv, in.buffer_k.size(2), D};
    MOEKIT_RETURN_IF_ERROR(check_attention_tensor("buffer_v", in.buffer_v, p.dtype, "[B, Hkv, Nbuf_max, D] (buffer_k's shape)",
                                        v_shape, "params.dtype"));
    const int64_t len_shape[] = {B};
    MOEKIT_RETURN_IF_ERROR(check_attention_tensor("buffer_lengths", in.buffer_lengths, DType::kI32, "[B]", len_shape, "the required dtype"));
  } else if (in.buffer_lengths.defined()) {
    return Status::InvalidArgument("buffer_lengths: given, but buffer_k and buffer_v are not");
  }
  const std::pair<std::string_view, const TensorView*> others[] = {{"context_k", &in.context_k},
                                                                   {"context_v", &in.context_v},
                                                                   {"buffer_k", &in.buffer_k},
                                                                   {"buffer_v", &in.buffer_v},
                                                                   {"buffer_lengths", &in.buffer_lengths}};
  for (const auto& [name, t] : others) MOEKIT_RETURN_IF_ERROR(check_same_device(name, *t, in.q));
  return Status::Ok();
}

Status validate_attention(const AttentionParams& p, const AttentionInputs& in, const AttentionOutputs& out) {
  MOEKIT_RETURN_IF_ERROR(validate_attention_inputs(p, in));
  const int64_t B = p.batch, Hq = p.num_q_heads, Lq = p.q_len, D = p.head_dim;
  const int64_t out_shape[] = {B, Hq, Lq, D};
  MOEKIT_RETURN_IF_ERROR(check_attention_tensor("out", out.out, p.dtype, "[B, Hq, Lq, D]", out_shape, "params.dtype"));
  if (out.lse.defined()) {
    const int64_t lse_shape[] = {B, Hq, Lq};
    MOEKIT_RETURN_IF_ERROR(check_attention_tensor("lse", out.lse, DType::kF32, "[B, Hq, Lq]", lse_shape, "the required dtype"));
  }

  MOEKIT_RETURN_IF_ERROR(check_same_device("out", out.out, in.q));
  MOEKIT_RETURN_IF_ERROR(check_same_device("lse", out.lse, in.q));
  return Status::Ok();
}

}  // namespace moekit
