// Attention test problems on the host: shapes, per-sequence buffer lengths and random data.
// Shared by tests/cpu/test_attention_reference.cpp and tests/gpu/test_attention_cuda.cu.
#pragma once

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "moekit/attention.h"
#include "moekit/float_formats.h"
#include "moekit/tensor.h"

namespace moekit::testing {

struct AttnCase {
  int batch = 1, q_heads = 1, kv_heads = 1, q_len = 1, head_dim = 16;
  int64_t ctx = 0;  // Nctx
  int64_t cap = 0;  // Nbuf_max
  DType dtype = DType::kF32;
  float scale = 0.0f;

  std::string name() const {  // (no fmt: this header is compiled by nvcc too)
    return "B=" + std::to_string(batch) + " Hq=" + std::to_string(q_heads) + " Hkv=" + std::to_string(kv_heads) +
           " Lq=" + std::to_string(q_len) + " D=" + std::to_string(head_dim) + " Nctx=" + std::to_string(ctx) +
           " Nbuf_max=" + std::to_string(cap) + " " + std::string(dtype_name(dtype));
  }
  AttentionParams params() const {
    return {.batch = batch, .num_q_heads = q_heads, .num_kv_heads = kv_heads, .q_len = q_len, .head_dim = head_dim,
            .softmax_scale = scale, .dtype = dtype};
  }
};

// Different lengths per sequence, covering full, empty and partial buffers: cap, cap - 13, ... mod (cap + 1).
inline std::vector<int32_t> case_lengths(const AttnCase& c) {
  std::vector<int32_t> lens;
  for (int b = 0; b < c.batch; ++b) lens.push_back(static_cast<int32_t>(((c.cap - 13 * b) % (c.cap + 1) + (c.cap + 1)) % (c.cap + 1)));
  return lens;
}

inline void fill_uniform(const TensorView& t, std::mt19937& rng, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) store_element(t.data(), t.dtype(), i, u(rng));
}

// All bits set: NaN in f32, f16 and bf16.
inline void poison(const TensorView& t) {
  if (t.defined()) std::memset(t.data(), 0xFF, static_cast<size_t>(t.storage_bytes()));
}

inline Tensor host_tensor(DType dtype, std::initializer_list<int64_t> shape) { return Tensor::empty(dtype, shape).value(); }

// Host tensors for one case; context and buffer are always given (possibly with zero length).
struct HostAttention {
  AttnCase c;
  Tensor q, ctx_k, ctx_v, buf_k, buf_v, lens, out, lse;

  AttentionInputs inputs() const {
    return {.q = q, .context_k = ctx_k, .context_v = ctx_v, .buffer_k = buf_k, .buffer_v = buf_v, .buffer_lengths = lens};
  }
  AttentionOutputs outputs() const { return {.out = out, .lse = lse}; }
};

inline HostAttention make_host_attention(const AttnCase& c, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  HostAttention h{.c = c,
                  .q = host_tensor(c.dtype, {c.batch, c.q_heads, c.q_len, c.head_dim}),
                  .ctx_k = host_tensor(c.dtype, {c.kv_heads, c.ctx, c.head_dim}),
                  .ctx_v = host_tensor(c.dtype, {c.kv_heads, c.ctx, c.head_dim}),
                  .buf_k = host_tensor(c.dtype, {c.batch, c.kv_heads, c.cap, c.head_dim}),
                  .buf_v = host_tensor(c.dtype, {c.batch, c.kv_heads, c.cap, c.head_dim}),
                  .lens = host_tensor(DType::kI32, {c.batch}),
                  .out = host_tensor(c.dtype, {c.batch, c.q_heads, c.q_len, c.head_dim}),
                  .lse = host_tensor(DType::kF32, {c.batch, c.q_heads, c.q_len})};
  std::mt19937 rng(seed);
  for (const Tensor* t : {&h.q, &h.ctx_k, &h.ctx_v, &h.buf_k, &h.buf_v}) fill_uniform(*t, rng, lo, hi);
  const auto lens = case_lengths(c);
  if (!lens.empty()) std::memcpy(h.lens.data(), lens.data(), lens.size() * sizeof(int32_t));
  poison(h.out);
  poison(h.lse);
  return h;
}

}  // namespace moekit::testing
