// Shared-context decode attention: queries of a batch of sequences attend over one context K/V that
// every sequence shares (stored once, [Hkv, Nctx, D]) plus a short per-sequence buffer K/V
// ([B, Hkv, Nbuf_max, D], with a length per sequence). Seed 002 (autoregressive TabPFN decoding)
// is the origin; docs/attention.md has the semantics with worked examples and the memory math.
//
// Vocabulary: B sequences, Hq query heads, Hkv key/value heads (Hq a multiple of Hkv; query head
// qh reads kv head qh / (Hq / Hkv)), Lq queries per sequence, D head dim, Nctx context length,
// Nbuf_max buffer capacity per sequence, buf_len[b] the entries sequence b holds.
//
// What query i (0 <= i < Lq) of sequence b attends to:
//   - every context position 0 .. Nctx-1, always;
//   - buffer positions j with j < buf_len[b] and j <= buf_len[b] - Lq + i.
// The queries' own K/V are expected to be in the buffer already (append, then attend), so query i
// is buffer position buf_len[b] - Lq + i and sees itself and everything before it: teacher forcing
// with Lq queries equals Lq decode steps of one query each. For Lq = 1 the whole buffer is seen.
//
// out = softmax(scale * q.K^T) V over the attended keys, accumulated in float32 (CUDA) or float64
// (CPU reference). lse = log(sum exp(scale * q.k)) over the same keys, natural log. A query that
// attends to nothing (Nctx = 0 and no visible buffer entry) gets out = 0 and lse = -inf; no NaN.
//
// Errors: every entry point validates all of its inputs first and returns a Status naming the
// field and the value; on error nothing is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "moekit/dtype.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit {

struct AttentionParams {
  int batch = 0;               // B >= 0 (0: nothing to do)
  int num_q_heads = 0;         // Hq >= 1
  int num_kv_heads = 0;        // Hkv >= 1, Hq % Hkv == 0
  int q_len = 1;               // Lq >= 1
  int head_dim = 0;            // D: 16, 32, 64 or 128
  float softmax_scale = 0.0f;  // multiplies q.k; 0 means 1/sqrt(D)
  DType dtype = DType::kBF16;  // q, K, V and out: f32, f16 or bf16

  // softmax_scale, or 1/sqrt(head_dim) when it is 0.
  double scale() const;
  int group_size() const { return num_kv_heads > 0 ? num_q_heads / num_kv_heads : 0; }
};

// Contiguous tensors, all on one device (host for the CPU backends, CUDA for the CUDA backends).
struct AttentionInputs {
  TensorView q;               // [B, Hq, Lq, D], dtype
  TensorView context_k;       // [Hkv, Nctx, D], dtype; optional (not given = Nctx 0)
  TensorView context_v;       // [Hkv, Nctx, D], dtype; given together with context_k
  TensorView buffer_k;        // [B, Hkv, Nbuf_max, D], dtype; optional (not given = no buffer)
  TensorView buffer_v;        // [B, Hkv, Nbuf_max, D], dtype; given together with buffer_k
  TensorView buffer_lengths;  // [B] i32, 0 <= buf_len[b] <= Nbuf_max; required with a buffer

  int64_t context_len() const { return context_k.defined() && context_k.ndim() == 3 ? context_k.size(1) : 0; }
  int64_t buffer_capacity() const { return buffer_k.defined() && buffer_k.ndim() == 4 ? buffer_k.size(2) : 0; }
};

struct AttentionOutputs {
  TensorView out;  // [B, Hq, Lq, D], dtype
  TensorView lse;  // optional [B, Hq, Lq] f32: natural-log sum-exp of the scaled scores
};

enum class AttentionBackend : uint8_t {
  kAuto,          // kCuda for device tensors, kCpuReference for host tensors
  kCpuReference,  // host tensors; float64 accumulation; the oracle
  kCuda,          // device tensors; one kernel launch over the shared context and the buffers
  kReplicated,    // baseline: copies the context per sequence ([B, Hkv, Nctx + Nbuf_max, D] in the
                  // workspace) and runs ordinary attention over it; on host or device tensors
};
std::string_view attention_backend_name(AttentionBackend b);  // "auto", "cpu_reference", "cuda", "replicated"
std::optional<AttentionBackend> parse_attention_backend(std::string_view name);  // also "cpu"

struct AttentionRunInfo {
  AttentionBackend requested = AttentionBackend::kAuto;
  AttentionBackend backend = AttentionBackend::kAuto;  // the one that ran
  std::string warning;  // why `backend` differs from `requested`; empty when it does not
};

// Checks params and every tensor (shape, dtype, device, contiguity). Buffer length values are
// not read here (they may live in device memory); the CPU backends check them before computing.
Status validate_attention(const AttentionParams& params, const AttentionInputs& inputs, const AttentionOutputs& outputs);
// The same checks without the outputs (what the workspace query needs), and the params alone.
Status validate_attention_inputs(const AttentionParams& params, const AttentionInputs& inputs);
Status validate_attention_params(const AttentionParams& params);

// Phase 1: the workspace bytes `backend` needs for these shapes (0 for the CPU reference). The
// backend is resolved as shared_context_attention resolves it (fallbacks included). The CUDA
// backend keeps arrival counters in its workspace: zero the workspace once after allocating it
// (cudaMemset); every call leaves the counters zero again. One call at a time per workspace.
Result<size_t> attention_workspace_size(const AttentionParams& params, const AttentionInputs& inputs,
                                        AttentionBackend backend = AttentionBackend::kAuto);

// Phase 2: computes out (and lse when given). `workspace` is memory on the tensors' device (host
// memory for the CPU backends) of at least attention_workspace_size() bytes. `stream` is a
// cudaStream_t (nullptr: the default stream), ignored by the CPU backends. The CUDA backends do not
// allocate, do not synchronize with the host and launch asynchronously (the CUDA backend launches
// exactly one kernel), so a call can be captured in a CUDA graph; they do not read buffer_lengths
// on the host and clamp out-of-range values to [0, Nbuf_max] instead of reporting them.
// A backend that cannot run here falls back with a warning in the result: kCuda (or kAuto) with
// host tensors, in a build without CUDA or without a GPU, runs kCpuReference. kCpuReference with
// device tensors is an error (it cannot read device memory).
Result<AttentionRunInfo> shared_context_attention(const AttentionParams& params, const AttentionInputs& inputs,
                                                  const AttentionOutputs& outputs, AttentionBackend backend,
                                                  void* workspace, size_t workspace_bytes, void* stream = nullptr);

// ---- The cache -----------------------------------------------------------------------------------

struct SharedContextCacheConfig {
  int batch = 0;                // B >= 1
  int num_kv_heads = 0;         // Hkv >= 1
  int head_dim = 0;             // D: 16, 32, 64 or 128
  int64_t max_context = 0;      // capacity of the shared context (Nctx <= max_context)
  int64_t buffer_capacity = 0;  // Nbuf_max: entries per sequence
  DType dtype = DType::kBF16;   // f32, f16 or bf16
  Device device = Device::cpu();
};

// Owns the context K/V ([Hkv, Nctx, D], written once by prefill) and the per-sequence buffers
// ([B, Hkv, Nbuf_max, D] plus lengths [B] i32) on the host or a CUDA device. Memory is
// O(Nctx + B * Nbuf_max) instead of the O(B * (Nctx + Nbuf_max)) of a replicated cache.
class SharedContextCache {
 public:
  static Result<SharedContextCache> create(const SharedContextCacheConfig& config);

  // Bytes a cache of this configuration allocates (context at max_context, buffers, lengths), and
  // what a replicated cache of the same capacity would ([B, Hkv, max_context + Nbuf_max, D] for K
  // and V, plus lengths). Both are pure arithmetic: nothing is allocated.
  static Result<int64_t> memory_bytes(const SharedContextCacheConfig& config);
  static Result<int64_t> replicated_memory_bytes(const SharedContextCacheConfig& config);
  int64_t memory_bytes() const;
  int64_t replicated_memory_bytes() const;

  // Writes the context ([Hkv, Nctx, D], dtype, Nctx <= max_context, on any device) and empties
  // every buffer. Synchronous.
  Status prefill(const TensorView& k, const TensorView& v);

  // Appends new entries: k, v are [B, Hkv, L, D] (dtype, contiguous, on the host or the cache's
  // device). Sequence b receives counts[b] entries (k[b, :, 0:counts[b]]), or all L when `counts`
  // is empty. If any sequence would exceed Nbuf_max the call fails, naming the sequence and the
  // capacity, and writes nothing. On a device cache with device k/v and no counts the copy is one
  // kernel on `stream` (a cudaStream_t) and the call does not wait for it; otherwise it is
  // synchronous.
  Status append(const TensorView& k, const TensorView& v, std::span<const int32_t> counts = {}, void* stream = nullptr);

  // Empties every buffer (the context stays). Synchronous.
  Status reset();

  const SharedContextCacheConfig& config() const { return config_; }
  int64_t context_len() const { return context_len_; }
  std::span<const int32_t> buffer_lengths() const { return {lengths_.data(), lengths_.size()}; }  // host copy of buf_len

  // Views for the attention call: context [Hkv, Nctx, D], buffers, lengths (on the cache's device).
  AttentionInputs inputs(const TensorView& q) const;
  AttentionParams params(int num_q_heads, int q_len, float softmax_scale = 0.0f) const;

  // Convenience: runs shared_context_attention on q ([B, Hq, Lq, D]) with a workspace the cache
  // owns (allocated, and zeroed, on first use or when a larger one is needed).
  Result<AttentionRunInfo> attend(const TensorView& q, const AttentionOutputs& outputs, float softmax_scale = 0.0f,
                                  AttentionBackend backend = AttentionBackend::kAuto, void* stream = nullptr);

 private:
  SharedContextCacheConfig config_{};
  int64_t context_len_ = 0;
  Tensor context_k_, context_v_;  // [Hkv, max_context, D]; the first Hkv * Nctx * D elements are used
  Tensor buffer_k_, buffer_v_;    // [B, Hkv, Nbuf_max, D]
  Tensor lengths_device_;         // [B] i32 on the cache's device (the host copy below for a CPU cache)
  Tensor scratch_counts_;         // [B] i32 on the device, for append with per-sequence counts
  Tensor workspace_;              // attend()'s workspace
  std::vector<int32_t> lengths_;
};

}  // namespace moekit
