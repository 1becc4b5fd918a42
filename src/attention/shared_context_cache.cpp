// SharedContextCache: the context K/V stored once, per-sequence buffers appended in place.
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "core/attention_checks.h"
#include "cuda/attention/attention_cuda.h"
#include "moekit/attention.h"

namespace moekit {
namespace {

using detail::check_attention_tensor;

Status check_config(const SharedContextCacheConfig& c) {
  if (c.batch < 1) return Status::InvalidArgument(fmt::format("config: batch={} must be >= 1", c.batch));
  if (c.max_context < 0) return Status::InvalidArgument(fmt::format("config: max_context={} must be >= 0", c.max_context));
  if (c.buffer_capacity < 0)
    return Status::InvalidArgument(fmt::format("config: buffer_capacity={} must be >= 0", c.buffer_capacity));
  // Heads, head dim and dtype: the attention call's own rules.
  const AttentionParams p{.batch = c.batch, .num_q_heads = c.num_kv_heads, .num_kv_heads = c.num_kv_heads, .q_len = 1,
                          .head_dim = c.head_dim, .softmax_scale = 0.0f, .dtype = c.dtype};
  return validate_attention_params(p).with_context("config");
}

// `t` on `device`: itself, or a synchronous copy into `staged`.
Result<TensorView> on_device(const TensorView& t, Device device, Tensor& staged) {
  if (t.device() == device) return t;
  auto s = Tensor::empty(t.dtype(), t.shape(), device);
  if (!s.ok()) return s.status();
  MOEKIT_RETURN_IF_ERROR(copy_tensor(*s, t));
  staged = std::move(*s);
  return staged.view();
}

}  // namespace

Result<int64_t> SharedContextCache::memory_bytes(const SharedContextCacheConfig& c) {
  MOEKIT_RETURN_IF_ERROR(check_config(c));
  const int64_t ctx = 2 * int64_t{c.num_kv_heads} * c.max_context * c.head_dim;
  const int64_t buf = 2 * int64_t{c.batch} * c.num_kv_heads * c.buffer_capacity * c.head_dim;
  return dtype_storage_bytes(c.dtype, ctx) + dtype_storage_bytes(c.dtype, buf) + 4 * int64_t{c.batch};
}

Result<int64_t> SharedContextCache::replicated_memory_bytes(const SharedContextCacheConfig& c) {
  MOEKIT_RETURN_IF_ERROR(check_config(c));
  const int64_t kv = 2 * int64_t{c.batch} * c.num_kv_heads * (c.max_context + c.buffer_capacity) * c.head_dim;
  return dtype_storage_bytes(c.dtype, kv) + 4 * int64_t{c.batch};
}

int64_t SharedContextCache::memory_bytes() const { return memory_bytes(config_).value(); }
int64_t SharedContextCache::replicated_memory_bytes() const { return replicated_memory_bytes(config_).value(); }

Result<SharedContextCache> SharedContextCache::create(const SharedContextCacheConfig& config) {
  MOEKIT_RETURN_IF_ERROR(check_config(config));
  SharedContextCache c;
  c.config_ = config;
  const int64_t B = config.batch, Hkv = config.num_kv_heads, D = config.head_dim;
  for (Tensor* t : {&c.context_k_, &c.context_v_}) {
    auto r = Tensor::empty(config.dtype, {Hkv, config.max_context, D}, config.device);
    if (!r.ok()) return r.status().with_context("allocating the context");
    *t = std::move(*r);
  }
  for (Tensor* t : {&c.buffer_k_, &c.buffer_v_}) {
    auto r = Tensor::empty(config.dtype, {B, Hkv, config.buffer_capacity, D}, config.device);
    if (!r.ok()) return r.status().with_context("allocating the buffers");
    *t = std::move(*r);
  }
  auto lengths = Tensor::empty(DType::kI32, {B}, config.device);
  if (!lengths.ok()) return lengths.status().with_context("allocating the buffer lengths");
  c.lengths_device_ = std::move(*lengths);
  c.lengths_.assign(static_cast<size_t>(B), 0);
  MOEKIT_RETURN_IF_ERROR(c.reset());
  return c;
}

Status SharedContextCache::prefill(const TensorView& k, const TensorView& v) {
  const int64_t Hkv = config_.num_kv_heads, D = config_.head_dim;
  const int64_t shape[] = {Hkv, -1, D};
  MOEKIT_RETURN_IF_ERROR(check_attention_tensor("prefill: k", k, config_.dtype, "[Hkv, Nctx, D]", shape, "the cache's dtype"));
  const int64_t v_shape[] = {Hkv, k.size(1), D};
  MOEKIT_RETURN_IF_ERROR(
      check_attention_tensor("prefill: v", v, config_.dtype, "[Hkv, Nctx, D] (k's shape)", v_shape, "the cache's dtype"));
  const int64_t n = k.size(1);
  if (n > config_.max_context)
    return Status::InvalidArgument(fmt::format("prefill: context length Nctx={} exceeds max_context={}", n, config_.max_context));
  const int64_t dst_shape[] = {Hkv, n, D};
  MOEKIT_RETURN_IF_ERROR(copy_tensor(TensorView::create(context_k_.data(), config_.dtype, dst_shape, {}, config_.device).value(), k));
  MOEKIT_RETURN_IF_ERROR(copy_tensor(TensorView::create(context_v_.data(), config_.dtype, dst_shape, {}, config_.device).value(), v));
  context_len_ = n;
  return reset();
}

Status SharedContextCache::reset() {
  std::fill(lengths_.begin(), lengths_.end(), 0);
  return copy_tensor(lengths_device_, TensorView(lengths_.data(), DType::kI32, {config_.batch}));
}

Status SharedContextCache::append(const TensorView& k, const TensorView& v, std::span<const int32_t> counts, void* stream) {
  const int64_t B = config_.batch, Hkv = config_.num_kv_heads, D = config_.head_dim, cap = config_.buffer_capacity;
  const int64_t shape[] = {B, Hkv, -1, D};
  MOEKIT_RETURN_IF_ERROR(check_attention_tensor("append: k", k, config_.dtype, "[B, Hkv, L, D]", shape, "the cache's dtype"));
  const int64_t L = k.size(2);
  const int64_t v_shape[] = {B, Hkv, L, D};
  MOEKIT_RETURN_IF_ERROR(
      check_attention_tensor("append: v", v, config_.dtype, "[B, Hkv, L, D] (k's shape)", v_shape, "the cache's dtype"));
  if (!(k.device() == v.device()))
    return Status::InvalidArgument(fmt::format("append: k is on {} but v is on {}", k.device().to_string(), v.device().to_string()));
  if (!k.device().is_cpu() && !(k.device() == config_.device))
    return Status::InvalidArgument(fmt::format("append: k is on {}; the cache is on {} (give host or {} tensors)",
                                               k.device().to_string(), config_.device.to_string(), config_.device.to_string()));
  if (!counts.empty() && static_cast<int64_t>(counts.size()) != B)
    return Status::InvalidArgument(fmt::format("append: counts has {} entries, expected batch={}", counts.size(), B));
  auto count = [&](int64_t b) -> int64_t { return counts.empty() ? L : counts[static_cast<size_t>(b)]; };
  for (int64_t b = 0; b < B; ++b) {
    if (count(b) < 0 || count(b) > L)
      return Status::InvalidArgument(fmt::format("append: counts[{}]={} is outside [0, L={}]", b, count(b), L));
    if (lengths_[static_cast<size_t>(b)] + count(b) > cap)
      return Status::InvalidArgument(fmt::format(
          "append: sequence {} holds {} of its buffer_capacity={} entries; appending {} would exceed it (nothing was written)",
          b, lengths_[static_cast<size_t>(b)], cap, count(b)));
  }
  if (L == 0) return Status::Ok();

  if (config_.device.is_cuda()) {
    Tensor staged_k, staged_v;
    auto dk = on_device(k, config_.device, staged_k);
    if (!dk.ok()) return dk.status().with_context("append: copying k to the device");
    auto dv = on_device(v, config_.device, staged_v);
    if (!dv.ok()) return dv.status().with_context("append: copying v to the device");
    const int32_t* dcounts = nullptr;
    if (!counts.empty()) {
      if (!scratch_counts_.data()) {
        auto s = Tensor::empty(DType::kI32, {B}, config_.device);
        if (!s.ok()) return s.status().with_context("append: allocating the counts");
        scratch_counts_ = std::move(*s);
      }
      MOEKIT_RETURN_IF_ERROR(copy_tensor(scratch_counts_, TensorView(const_cast<int32_t*>(counts.data()), DType::kI32, {B})));
      dcounts = scratch_counts_.data_as<const int32_t>();
    }
    MOEKIT_RETURN_IF_ERROR(cuda::append_buffer(config_.dtype, config_.batch, config_.num_kv_heads, config_.head_dim, cap, L,
                                               dk->data(), dv->data(), dcounts, buffer_k_.data(), buffer_v_.data(),
                                               lengths_device_.data_as<int32_t>(), stream));
    // Synchronous when something was staged: the staged copies are freed when this call returns.
    if (staged_k.data() != nullptr) MOEKIT_RETURN_IF_ERROR(cuda::synchronize_stream(stream));
  } else {
    const size_t row = static_cast<size_t>(dtype_storage_bytes(config_.dtype, D));
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < Hkv; ++h) {
        const size_t src = static_cast<size_t>((b * Hkv + h) * L) * row;
        const size_t dst = static_cast<size_t>((b * Hkv + h) * cap + lengths_[static_cast<size_t>(b)]) * row;
        std::memcpy(buffer_k_.data_as<uint8_t>() + dst, k.data_as<const uint8_t>() + src, static_cast<size_t>(count(b)) * row);
        std::memcpy(buffer_v_.data_as<uint8_t>() + dst, v.data_as<const uint8_t>() + src, static_cast<size_t>(count(b)) * row);
      }
    }
  }
  for (int64_t b = 0; b < B; ++b) lengths_[static_cast<size_t>(b)] += static_cast<int32_t>(count(b));
  if (config_.device.is_cpu()) std::memcpy(lengths_device_.data(), lengths_.data(), lengths_.size() * sizeof(int32_t));
  return Status::Ok();
}

AttentionInputs SharedContextCache::inputs(const TensorView& q) const {
  const int64_t ctx_shape[] = {config_.num_kv_heads, context_len_, config_.head_dim};
  const Device dev = config_.device;
  return AttentionInputs{
      .q = q,
      .context_k = TensorView::create(context_k_.data(), config_.dtype, ctx_shape, {}, dev).value(),
      .context_v = TensorView::create(context_v_.data(), config_.dtype, ctx_shape, {}, dev).value(),
      .buffer_k = buffer_k_.view(),
      .buffer_v = buffer_v_.view(),
      .buffer_lengths = lengths_device_.view(),
  };
}

AttentionParams SharedContextCache::params(int num_q_heads, int q_len, float softmax_scale) const {
  return AttentionParams{.batch = config_.batch,
                         .num_q_heads = num_q_heads,
                         .num_kv_heads = config_.num_kv_heads,
                         .q_len = q_len,
                         .head_dim = config_.head_dim,
                         .softmax_scale = softmax_scale,
                         .dtype = config_.dtype};
}

Result<AttentionRunInfo> SharedContextCache::attend(const TensorView& q, const AttentionOutputs& outputs, float softmax_scale,
                                                    AttentionBackend backend, void* stream) {
  if (q.ndim() != 4)
    return Status::InvalidArgument(fmt::format("q: expected 4 dims [B, Hq, Lq, D], got {} ([{}])", q.ndim(), fmt::join(q.shape(), ", ")));
  const AttentionParams p = params(static_cast<int>(q.size(1)), static_cast<int>(q.size(2)), softmax_scale);
  const AttentionInputs in = inputs(q);
  auto bytes = attention_workspace_size(p, in, backend);
  if (!bytes.ok()) return bytes.status();
  if (static_cast<size_t>(workspace_.storage_bytes()) < *bytes || !(workspace_.device() == q.device())) {
    auto ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(*bytes)}, q.device());
    if (!ws.ok()) return ws.status().with_context("attend: allocating the workspace");
    if (q.device().is_cuda()) {
      MOEKIT_RETURN_IF_ERROR(cuda::zero_device_memory(ws->data(), *bytes, stream));
    } else {
      std::memset(ws->data(), 0, *bytes);
    }
    workspace_ = std::move(*ws);
  }
  return shared_context_attention(p, in, outputs, backend, workspace_.data(), static_cast<size_t>(workspace_.storage_bytes()), stream);
}

}  // namespace moekit
