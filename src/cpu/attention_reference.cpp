// The CPU reference of shared-context attention: per query, the scores over the context and the
// visible buffer positions in float64, a max-subtracted softmax, and one rounding at the store.
// Threads split the (sequence, kv head) pairs; each query is computed by one thread in a fixed
// order, so the result does not depend on the thread count.
#include "attention_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "moekit/float_formats.h"

namespace moekit::cpu {
namespace {

void to_doubles(const void* base, DType t, int64_t first, int64_t n, double* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = load_element(base, t, first + i);
}

double dot(const double* a, const double* b, int64_t n) {
  double s = 0.0;
  for (int64_t d = 0; d < n; ++d) s += a[d] * b[d];
  return s;
}

Status check_host(const AttentionInputs& in, std::string_view backend) {
  if (!in.q.device().is_cpu())
    return Status::InvalidArgument(
        fmt::format("backend {} needs host tensors; q is on {}", backend, in.q.device().to_string()));
  return Status::Ok();
}

// The reference over `in`, whose buffer positions [0, prefix) are visible to every query (0 for
// the shared layout; Nctx for the replicated copy). buffer_lengths count the positions after the
// prefix and must lie in [0, Nbuf_max - prefix].
Status attend(const AttentionParams& p, const AttentionInputs& in, const AttentionOutputs& out, int64_t prefix) {
  const int64_t B = p.batch, Hq = p.num_q_heads, Hkv = p.num_kv_heads, Lq = p.q_len, D = p.head_dim;
  const int64_t G = Hq / Hkv, Nctx = in.context_len(), cap = in.buffer_capacity();
  const int32_t* lens = in.buffer_lengths.defined() ? in.buffer_lengths.data_as<const int32_t>() : nullptr;
  for (int64_t b = 0; lens != nullptr && b < B; ++b)
    if (lens[b] < 0 || lens[b] > cap - prefix)
      return Status::InvalidArgument(
          fmt::format("buffer_lengths[{}]={} is outside [0, Nbuf_max={}]", b, lens[b], cap - prefix));

  std::vector<double> ctx_k(static_cast<size_t>(Hkv * Nctx * D)), ctx_v(ctx_k.size());
  if (Nctx > 0) {
    to_doubles(in.context_k.data(), p.dtype, 0, Hkv * Nctx * D, ctx_k.data());
    to_doubles(in.context_v.data(), p.dtype, 0, Hkv * Nctx * D, ctx_v.data());
  }
  const double scale = p.scale();
  const double inf = std::numeric_limits<double>::infinity();

#pragma omp parallel
  {
    std::vector<double> buf_k, buf_v, q(static_cast<size_t>(D)), s, acc(static_cast<size_t>(D));
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < B * Hkv; ++bh) {
      const int64_t b = bh / Hkv, h = bh % Hkv;
      const int64_t len = lens != nullptr ? lens[b] : 0;
      const int64_t stored = prefix + len;  // positions of this sequence's buffer that hold data
      buf_k.resize(static_cast<size_t>(stored * D));
      buf_v.resize(buf_k.size());
      if (stored > 0) {
        to_doubles(in.buffer_k.data(), p.dtype, bh * cap * D, stored * D, buf_k.data());
        to_doubles(in.buffer_v.data(), p.dtype, bh * cap * D, stored * D, buf_v.data());
      }
      for (int64_t qh = h * G; qh < (h + 1) * G; ++qh) {
        for (int64_t i = 0; i < Lq; ++i) {
          // Query i is buffer position len - Lq + i: it sees positions <= that one.
          const int64_t visible = prefix + std::max<int64_t>(0, len - Lq + i + 1);
          const int64_t row = (b * Hq + qh) * Lq + i;
          to_doubles(in.q.data(), p.dtype, row * D, D, q.data());
          s.assign(static_cast<size_t>(Nctx + visible), 0.0);
          double m = -inf;
          for (int64_t j = 0; j < Nctx; ++j) m = std::max(m, s[j] = scale * dot(q.data(), &ctx_k[(h * Nctx + j) * D], D));
          for (int64_t j = 0; j < visible; ++j) m = std::max(m, s[Nctx + j] = scale * dot(q.data(), &buf_k[j * D], D));
          std::fill(acc.begin(), acc.end(), 0.0);
          double sum = 0.0;
          for (int64_t j = 0; j < Nctx + visible; ++j) {
            const double e = std::exp(s[j] - m);
            const double* v = j < Nctx ? &ctx_v[(h * Nctx + j) * D] : &buf_v[(j - Nctx) * D];
            sum += e;
            for (int64_t d = 0; d < D; ++d) acc[d] += e * v[d];
          }
          // Nothing attended: out = 0 and lse = -inf (not 0/0).
          for (int64_t d = 0; d < D; ++d) store_element(out.out.data(), p.dtype, row * D + d, sum > 0.0 ? acc[d] / sum : 0.0);
          if (out.lse.defined()) out.lse.data_as<float>()[row] = static_cast<float>(sum > 0.0 ? m + std::log(sum) : -inf);
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status attention_reference(const AttentionParams& params, const AttentionInputs& inputs, const AttentionOutputs& outputs) {
  MOEKIT_RETURN_IF_ERROR(validate_attention(params, inputs, outputs));
  MOEKIT_RETURN_IF_ERROR(check_host(inputs, "cpu_reference"));
  return attend(params, inputs, outputs, 0);
}

size_t attention_replicated_workspace_size(const AttentionParams& params, const AttentionInputs& inputs) {
  const int64_t rows = static_cast<int64_t>(params.batch) * params.num_kv_heads * (inputs.context_len() + inputs.buffer_capacity());
  return 2 * static_cast<size_t>(dtype_storage_bytes(params.dtype, rows * params.head_dim));
}

Status attention_replicated(const AttentionParams& params, const AttentionInputs& inputs, const AttentionOutputs& outputs,
                            void* workspace, size_t workspace_bytes) {
  MOEKIT_RETURN_IF_ERROR(validate_attention(params, inputs, outputs));
  MOEKIT_RETURN_IF_ERROR(check_host(inputs, "replicated"));
  const size_t needed = attention_replicated_workspace_size(params, inputs);
  if (workspace_bytes < needed || (needed > 0 && workspace == nullptr))
    return Status::InvalidArgument(
        fmt::format("workspace: {} bytes given, the replicated backend needs {}", workspace == nullptr ? 0 : workspace_bytes, needed));

  const int64_t B = params.batch, Hkv = params.num_kv_heads, D = params.head_dim;
  const int64_t Nctx = inputs.context_len(), cap = inputs.buffer_capacity(), total = Nctx + cap;
  const size_t es = static_cast<size_t>(dtype_bits(params.dtype) / 8);
  auto* rep_k = static_cast<uint8_t*>(workspace);
  auto* rep_v = rep_k + needed / 2;
  // Sequence b, head h: [context of h | buffer of (b, h)].
  for (int64_t bh = 0; bh < B * Hkv; ++bh) {
    const int64_t h = bh % Hkv;
    const size_t ctx_bytes = static_cast<size_t>(Nctx * D) * es, buf_bytes = static_cast<size_t>(cap * D) * es;
    const size_t dst = static_cast<size_t>(bh * total * D) * es;
    if (ctx_bytes > 0) {
      std::memcpy(rep_k + dst, inputs.context_k.data_as<const uint8_t>() + h * ctx_bytes, ctx_bytes);
      std::memcpy(rep_v + dst, inputs.context_v.data_as<const uint8_t>() + h * ctx_bytes, ctx_bytes);
    }
    if (buf_bytes > 0) {
      std::memcpy(rep_k + dst + ctx_bytes, inputs.buffer_k.data_as<const uint8_t>() + bh * buf_bytes, buf_bytes);
      std::memcpy(rep_v + dst + ctx_bytes, inputs.buffer_v.data_as<const uint8_t>() + bh * buf_bytes, buf_bytes);
    }
  }
  AttentionInputs rep{.q = inputs.q, .context_k = {}, .context_v = {}, .buffer_k = {}, .buffer_v = {}, .buffer_lengths = inputs.buffer_lengths};
  if (B > 0) {
    rep.buffer_k = TensorView(rep_k, params.dtype, {B, Hkv, total, D});
    rep.buffer_v = TensorView(rep_v, params.dtype, {B, Hkv, total, D});
  }
  return attend(params, rep, outputs, Nctx);
}

}  // namespace moekit::cpu
