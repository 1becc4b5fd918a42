// The CUDA backends of shared-context attention, as the dispatcher (src/attention/), the cache,
// the benchmark and the tests see them. Plain C++: no CUDA types, so the callers compile without
// the CUDA toolkit. In a build without CUDA, src/attention/attention_cuda_none.cpp answers every
// call with kUnsupported.
//
// All tensors are device tensors on one device, which must be the current device; `stream` is a
// cudaStream_t (nullptr: the default stream). No call allocates or synchronizes with the host
// unless it says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "moekit/attention.h"
#include "moekit/status.h"

namespace moekit::cuda {

// How the context tiles are multiplied: CUDA-core FMAs (every dtype) or tensor-core mma.sync
// (f16/bf16). kAuto picks kMma for f16/bf16 and kSimt for f32.
enum class ContextEngine : uint8_t { kAuto, kSimt, kMma };
inline std::string_view context_engine_name(ContextEngine e) {
  switch (e) {
    case ContextEngine::kAuto: return "auto";
    case ContextEngine::kSimt: return "simt";
    case ContextEngine::kMma: return "mma";
  }
  return "unknown";
}

struct AttentionOptions {
  ContextEngine engine = ContextEngine::kAuto;
};

// The launch the CUDA backend would make for these shapes (for `moekit bench` and the docs).
struct AttentionLaunchInfo {
  ContextEngine engine = ContextEngine::kAuto;
  int threads = 0;         // per CTA
  int ctas_per_sm = 0;     // occupancy
  int sm_count = 0;
  int row_blocks = 0;      // blocks of 64 query rows per kv head
  int context_splits = 0;  // CTAs along the context per row block
  int buffer_splits = 0;   // splits along each sequence's buffer
  int64_t grid_ctas = 0;
  size_t shared_memory_bytes = 0;
  size_t workspace_bytes = 0;
};
Result<AttentionLaunchInfo> shared_attention_launch_info(const AttentionParams& params, const AttentionInputs& inputs,
                                                         const AttentionOptions& options = {});

// The shared-context kernel: context, buffers and the merge of their partial softmaxes in one
// launch. The workspace (zeroed once after allocation) holds partial results and arrival counters.
Result<size_t> shared_attention_workspace_size(const AttentionParams& params, const AttentionInputs& inputs,
                                               const AttentionOptions& options = {});
Status shared_attention(const AttentionParams& params, const AttentionInputs& inputs, const AttentionOutputs& outputs,
                        void* workspace, size_t workspace_bytes, void* stream, const AttentionOptions& options = {});

// The replicated baseline: K and V copied to [B, Hkv, Nctx + Nbuf_max, D] (context first), then
// ordinary attention over that per-sequence cache (the same kernel with no shared context and the
// first Nctx positions of every sequence always visible). Workspace: the two copies, then the
// attention's partials and counters (zeroed once after allocation).
Result<size_t> replicated_workspace_size(const AttentionParams& params, const AttentionInputs& inputs);
Status replicated_attention(const AttentionParams& params, const AttentionInputs& inputs, const AttentionOutputs& outputs,
                            void* workspace, size_t workspace_bytes, void* stream);
// The two halves of replicated_attention, for timing the attention over an already built
// replicated cache: `materialize` writes the copies into the workspace; `attend_materialized`
// reads them (inputs must be the same as for materialize).
Status replicated_materialize(const AttentionParams& params, const AttentionInputs& inputs, void* workspace,
                              size_t workspace_bytes, void* stream);
Status replicated_attend_materialized(const AttentionParams& params, const AttentionInputs& inputs,
                                      const AttentionOutputs& outputs, void* workspace, size_t workspace_bytes, void* stream);

// The cache's append on the device: for every sequence b, copies new_k/new_v[b, :, 0:count_b, :]
// ([B, Hkv, L, D]) to buffer[b, :, len[b]:len[b]+count_b, :] and adds count_b to lengths[b] (device
// i32 [B]); count_b is counts[b] (device i32 [B]) or L when counts is null. One kernel; the caller
// has checked the capacity.
Status append_buffer(DType dtype, int batch, int num_kv_heads, int head_dim, int64_t capacity, int64_t new_len,
                     const void* new_k, const void* new_v, const int32_t* counts, void* buffer_k, void* buffer_v,
                     int32_t* lengths, void* stream);

// cudaMemsetAsync(ptr, 0, bytes, stream).
Status zero_device_memory(void* ptr, size_t bytes, void* stream);
// cudaStreamSynchronize(stream).
Status synchronize_stream(void* stream);

}  // namespace moekit::cuda
