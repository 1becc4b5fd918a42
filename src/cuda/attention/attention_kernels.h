// What the host launcher (attention_launcher.cpp, kernel_table.cpp) and the kernels (*.cu) share: the kernel
// argument block, the table of compiled kernels, and the copy kernels' launch functions.
// Plain C++ so that the launcher is compiled by the host compiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/attention/attention_cuda.h"
#include "moekit/dtype.h"
#include "moekit/status.h"

namespace moekit::cuda {

// Query rows per CTA row block. Row r of kv head h is (b, g, i) with r = (b * G + g) * Lq + i, i.e.
// query head h * G + g, query i of sequence b; a block covers 64 consecutive rows.
inline constexpr int kRowsPerBlock = 64;
// Keys per warp step in the buffer phase (one key per lane).
inline constexpr int kBufferTile = 32;
// Partial results per query row (context splits + buffer splits); the merge keeps a row block's
// (max, sum) pairs in shared memory.
inline constexpr int kMaxSlots = 64;

// The kernel's arguments (by value). Grid: x = context_splits + buffer_splits * buffer_ctas,
// y = row_blocks, z = Hkv. CTA x < context_splits attends its row block over context keys
// [x * context_chunk, ...); the others attend one warp per row over one split of the rows' buffers.
// The last CTA of a (row block, kv head) to finish merges the partials of all splits.
struct SharedAttentionArgs {
  const void* q;      // [B, Hq, Lq, D]
  const void* ctx_k;  // [Hkv, Nctx, D]
  const void* ctx_v;
  const void* buf_k;  // [B, Hkv, buf_capacity, D]
  const void* buf_v;
  const int32_t* buf_len;  // [B] or null (all 0)
  void* out;               // [B, Hq, Lq, D]
  float* lse;              // [B, Hq, Lq] or null
  int batch, num_q_heads, num_kv_heads, q_len;
  int64_t ctx_len;       // Nctx of the shared context
  int64_t buf_capacity;  // rows per (sequence, kv head) in buf_k / buf_v
  int64_t buf_prefix;    // leading buffer positions visible to every query (replicated: Nctx); buf_len counts after them
  float scale_log2;      // softmax scale * log2(e): scores are kept in base 2
  // Geometry (attention_launcher.cpp: plan()).
  int rows;              // B * G * Lq query rows per kv head
  int row_blocks;        // ceil(rows / kRowsPerBlock)
  int ctx_splits;        // 0 when Nctx == 0
  int64_t ctx_chunk;     // context keys per split, a multiple of the engine's tile
  int buf_splits;        // >= 1
  int64_t buf_chunk;     // buffer keys per split, a multiple of kBufferTile
  int buf_ctas;          // buffer CTAs per (row block, split): kRowsPerBlock / warps per CTA
  // Workspace.
  int* counters;         // [Hkv, row_blocks]: CTAs arrived; zero before and after each launch
  float* part_ml;        // [Hkv, rows, slots, 2]: running max (base 2) and sum per split
  float* part_acc;       // [Hkv, rows, slots, D]: unnormalized output per split
};

// One compiled instantiation of the kernel.
struct KernelEntry {
  DType dtype;
  int head_dim;
  ContextEngine engine;
  int threads;
  int context_tile;  // context keys per pipeline stage
  size_t smem_bytes;  // dynamic shared memory: the larger of the phase's and the merge's
  const void* function;
};
// The instantiation for (dtype, head_dim, engine) with engine kSimt or kMma; null if none.
const KernelEntry* find_kernel(DType dtype, int head_dim, ContextEngine engine);
// The instantiations of one dtype (shared_attention_<dtype>.cu), added to the table.
void add_f32_kernels(std::vector<KernelEntry>& v);
void add_f16_kernels(std::vector<KernelEntry>& v);
void add_bf16_kernels(std::vector<KernelEntry>& v);

// Sets the kernel's shared-memory limit and returns the CTAs per SM it reaches on `device` and the
// device's SM count. Cached per device and kernel, so that later calls (inside a stream capture,
// too) make no CUDA call at all.
struct KernelOccupancy {
  int ctas_per_sm = 0;
  int sm_count = 0;
};
Result<KernelOccupancy> prepare_kernel(const KernelEntry& k, int device);

Status launch_kernel(const KernelEntry& k, const SharedAttentionArgs& args, int grid_x, int grid_y, int grid_z, void* stream);

// Copy kernels (attention_copy.cu). dst_k/dst_v: [B, Hkv, Nctx + cap, D], context first.
Status launch_materialize(DType dtype, int batch, int num_kv_heads, int head_dim, int64_t ctx_len, int64_t capacity,
                          const void* ctx_k, const void* ctx_v, const void* buf_k, const void* buf_v, void* dst_k,
                          void* dst_v, void* stream);
Status launch_append(DType dtype, int batch, int num_kv_heads, int head_dim, int64_t capacity, int64_t new_len,
                     const void* new_k, const void* new_v, const int32_t* counts, void* buffer_k, void* buffer_v,
                     int32_t* lengths, void* stream);

}  // namespace moekit::cuda
