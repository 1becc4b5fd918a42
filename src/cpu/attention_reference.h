// The CPU backends of shared-context attention (moekit/attention.h): the reference, and the
// replicated baseline. Host tensors only. The dispatcher (src/attention/) calls these after it has
// resolved the backend; each validates everything again, and on error writes nothing.
#pragma once

#include <cstddef>

#include "moekit/attention.h"
#include "moekit/status.h"

namespace moekit::cpu {

// Float64 accumulation; only the final stores round (out to params.dtype, nearest-even; lse to f32).
// Checks the buffer length values too (0 <= buf_len[b] <= Nbuf_max).
Status attention_reference(const AttentionParams& params, const AttentionInputs& inputs, const AttentionOutputs& outputs);

// The replicated baseline: copies the context in front of every sequence's buffer, K and V each
// [B, Hkv, Nctx + Nbuf_max, D] in `workspace`, and runs the reference over that copy (its first Nctx
// positions always visible). The same keys in the same order, so the result equals the reference.
size_t attention_replicated_workspace_size(const AttentionParams& params, const AttentionInputs& inputs);
Status attention_replicated(const AttentionParams& params, const AttentionInputs& inputs, const AttentionOutputs& outputs,
                            void* workspace, size_t workspace_bytes);

}  // namespace moekit::cpu
