// The shared-context attention kernel: one launch computes the context part, the buffer part and
// the merge (attention_kernels.h describes the grid).
//
//   x < ctx_splits   context CTA: its 64 query rows (all of one kv head: GQA groups, sequences
//                    and queries alike) over one chunk of the shared context. Each K/V tile is
//                    loaded into shared memory once (cp.async, two stages) and serves all 64 rows.
//   otherwise        buffer CTA: one warp per query row over one split of that row's own buffer,
//                    read straight from global memory, with the causal rule of moekit/attention.h.
//   every CTA        writes (max, sum, unnormalized output) per row into its slot of the
//                    workspace, then counts itself in; the last of the (row block, kv head) merges
//                    all slots in a fixed order and resets the counter for the next launch.
#pragma once

#include <cmath>

#include "cuda/attention/attention_kernels.h"
#include "cuda/common/device_utils.cuh"
#include "cuda/attention/mma_rows.cuh"
#include "cuda/attention/simt_rows.cuh"

namespace moekit::cuda::detail {

// Row r of kv head h: sequence b, query index i, and the flat index of (b, h * G + g, i) over
// [B, Hq, Lq] (times D for its q and out rows).
struct RowCoord {
  int64_t b;
  int i;
  int64_t index;
};
__device__ __forceinline__ RowCoord row_coord(const SharedAttentionArgs& a, int h, int r) {
  const int gl = a.num_q_heads / a.num_kv_heads * a.q_len;
  const int b = r / gl, w = r % gl;
  return {b, w % a.q_len, (static_cast<int64_t>(b) * a.num_q_heads * a.q_len) + static_cast<int64_t>(h) * gl + w};
}

__device__ __forceinline__ int64_t slot_index(const SharedAttentionArgs& a, int h, int row, int slot) {
  return (static_cast<int64_t>(h) * a.rows + row) * (a.ctx_splits + a.buf_splits) + slot;
}

// Keys [key0, key0 + kTile) of one head's K and V ([N, D], valid below `end`) into shared tiles
// with row stride kLd; rows at and past `end` are zero-filled.
template <typename T, int D, int kTile, int kLd, int kThreads>
__device__ __forceinline__ void load_kv_tile(const T* gk, const T* gv, int64_t key0, int64_t end, T* ks, T* vs) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  constexpr int kPerRow = D / kVec;
  for (int idx = threadIdx.x; idx < kTile * kPerRow; idx += kThreads) {
    const int row = idx / kPerRow, c = (idx % kPerRow) * kVec;
    const bool valid = key0 + row < end;
    const int64_t src = valid ? (key0 + row) * D + c : 0;
    cp_async_16(ks + row * kLd + c, gk + src, valid);
    cp_async_16(vs + row * kLd + c, gv + src, valid);
  }
}

// The context chunk of one split, pipelined over two shared-memory stages. `attend(ks, vs, n)`
// consumes one tile (n valid keys) between the two barriers.
template <typename T, int D, int kTile, int kLd, int kThreads, typename Attend>
__device__ __forceinline__ void stream_context(const SharedAttentionArgs& a, int split, int h, T* tiles, Attend&& attend) {
  const int64_t begin = split * a.ctx_chunk;
  const int64_t end = begin + a.ctx_chunk < a.ctx_len ? begin + a.ctx_chunk : a.ctx_len;
  const T* gk = static_cast<const T*>(a.ctx_k) + h * a.ctx_len * D;
  const T* gv = static_cast<const T*>(a.ctx_v) + h * a.ctx_len * D;
  const int ntiles = static_cast<int>((end - begin + kTile - 1) / kTile);
  constexpr int kStage = 2 * kTile * kLd;
  load_kv_tile<T, D, kTile, kLd, kThreads>(gk, gv, begin, end, tiles, tiles + kTile * kLd);
  cp_async_commit();
  for (int t = 0; t < ntiles; ++t) {
    if (t + 1 < ntiles) {
      T* next = tiles + ((t + 1) & 1) * kStage;
      load_kv_tile<T, D, kTile, kLd, kThreads>(gk, gv, begin + (t + 1) * int64_t{kTile}, end, next, next + kTile * kLd);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const T* ks = tiles + (t & 1) * kStage;
    const int64_t left = end - (begin + t * int64_t{kTile});
    attend(ks, ks + kTile * kLd, static_cast<int>(left < kTile ? left : kTile));
    __syncthreads();  // the stage is overwritten two tiles later
  }
}

// CUDA cores, every dtype: 8 warps of 8 rows; q of the whole block in shared memory as floats.
template <typename T, int D>
struct SimtEngine {
  static constexpr int kWarps = 8;
  static constexpr int kRowsPerWarp = kRowsPerBlock / kWarps;
  static constexpr int kKpl = D <= 64 ? 2 : 1;
  static constexpr int kTile = 32 * kKpl;
  static constexpr int kLd = D + 16 / static_cast<int>(sizeof(T));  // +16 bytes: conflict-free row reads
  using Rows = SimtRows<T, D, kRowsPerWarp, kKpl, (D >= 64 ? D / 32 : 2)>;
  static constexpr size_t kTileBytes = size_t{kTile} * kLd * sizeof(T);
  static constexpr size_t kSmemBytes =
      4 * kTileBytes + size_t{kRowsPerBlock} * D * sizeof(float) + size_t{kWarps} * kRowsPerWarp * kTile * sizeof(float);

  __device__ static void context(const SharedAttentionArgs& a, int split, int rb, int h, unsigned char* smem) {
    T* tiles = reinterpret_cast<T*>(smem);
    float* q_s = reinterpret_cast<float*>(smem + 4 * kTileBytes);
    float* p_s = q_s + kRowsPerBlock * D;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = rb * kRowsPerBlock;
    for (int idx = threadIdx.x; idx < kRowsPerBlock * D; idx += kWarps * 32) {
      const int row = row0 + idx / D;
      q_s[idx] = row < a.rows ? to_float(static_cast<const T*>(a.q)[row_coord(a, h, row).index * D + idx % D]) : 0.0f;
    }
    const int wrow0 = row0 + warp * kRowsPerWarp;
    const int active = a.rows - wrow0 < 0 ? 0 : (a.rows - wrow0 < kRowsPerWarp ? a.rows - wrow0 : kRowsPerWarp);
    Rows st;
    st.init();
    stream_context<T, D, kTile, kLd, kWarps * 32>(a, split, h, tiles, [&](const T* ks, const T* vs, int n) {
      st.tile(q_s + warp * kRowsPerWarp * D, ks, vs, kLd, n, active, a.scale_log2, p_s + warp * kRowsPerWarp * kTile, lane);
    });
    if (active > 0) {
      const int64_t slot = slot_index(a, h, wrow0, split), stride = a.ctx_splits + a.buf_splits;
      st.store(a.part_ml + 2 * slot, 2 * stride, a.part_acc + slot * D, stride * D, active, lane);
    }
  }
};

// Tensor cores, f16/bf16: 4 warps of 16 rows; q as mma fragments in registers.
template <typename T, int D>
struct MmaEngine {
  static constexpr int kWarps = 4;
  static constexpr int kRowsPerWarp = 16;
  static constexpr int kTile = 64;
  static constexpr int kLd = D + 8;  // +16 bytes: conflict-free fragment reads
  static_assert(kWarps * kRowsPerWarp == kRowsPerBlock, "one row block per CTA");
  using Rows = MmaRows<T, D, kTile>;
  static constexpr size_t kSmemBytes = 4 * size_t{kTile} * kLd * sizeof(T);

  __device__ static void context(const SharedAttentionArgs& a, int split, int rb, int h, unsigned char* smem) {
    T* tiles = reinterpret_cast<T*>(smem);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int wrow0 = rb * kRowsPerBlock + warp * kRowsPerWarp;
    const int lo = wrow0 + g, hi = wrow0 + g + 8;
    const bool lo_valid = lo < a.rows, hi_valid = hi < a.rows, warp_active = wrow0 < a.rows;
    const T* q = static_cast<const T*>(a.q);
    Rows st;
    st.init(lo_valid ? q + row_coord(a, h, lo).index * D : nullptr, hi_valid ? q + row_coord(a, h, hi).index * D : nullptr, t);
    stream_context<T, D, kTile, kLd, kWarps * 32>(a, split, h, tiles, [&](const T* ks, const T* vs, int n) {
      if (warp_active) st.template tile<kLd>(ks, vs, n, a.scale_log2, g, t);
    });
    if (warp_active) {
      const int64_t s_lo = slot_index(a, h, lo_valid ? lo : wrow0, split), s_hi = slot_index(a, h, hi_valid ? hi : wrow0, split);
      st.store(a.part_ml + 2 * s_lo, a.part_acc + s_lo * D, lo_valid, a.part_ml + 2 * s_hi, a.part_acc + s_hi * D, hi_valid, t);
    }
  }
};

// One warp per query row over keys [split * buf_chunk, ...) of the row's visible buffer prefix.
template <typename T, int D, int kWarps>
__device__ void buffer_phase(const SharedAttentionArgs& a, int idx, int rb, int h, unsigned char* smem) {
  const int split = idx / a.buf_ctas, sub = idx % a.buf_ctas;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = rb * kRowsPerBlock + sub * kWarps + warp;
  if (row >= a.rows) return;
  float* q_s = reinterpret_cast<float*>(smem) + warp * D;
  float* p_s = reinterpret_cast<float*>(smem) + kWarps * D + warp * kBufferTile;
  const RowCoord rc = row_coord(a, h, row);
  for (int d = lane; d < D; d += 32) q_s[d] = to_float(static_cast<const T*>(a.q)[rc.index * D + d]);
  __syncwarp();

  // Positions [0, buf_prefix) are always visible; after them query i sees len - Lq + i + 1.
  int64_t len = a.buf_len != nullptr ? a.buf_len[rc.b] : 0;
  const int64_t max_len = a.buf_capacity - a.buf_prefix;
  len = len < 0 ? 0 : (len > max_len ? max_len : len);
  const int64_t own = len - a.q_len + rc.i + 1;
  const int64_t visible = a.buf_prefix + (own > 0 ? own : 0);
  const int64_t begin = split * a.buf_chunk;
  const int64_t end = begin + a.buf_chunk < visible ? begin + a.buf_chunk : visible;

  const int64_t base = (rc.b * a.num_kv_heads + h) * a.buf_capacity * D;
  SimtRows<T, D, 1, 1, 16 / static_cast<int>(sizeof(T))> st;
  st.init();
  for (int64_t key0 = begin; key0 < end; key0 += kBufferTile) {
    const int n = static_cast<int>(end - key0 < kBufferTile ? end - key0 : kBufferTile);
    st.tile(q_s, static_cast<const T*>(a.buf_k) + base + key0 * D, static_cast<const T*>(a.buf_v) + base + key0 * D, D, n, 1,
            a.scale_log2, p_s, lane);
  }
  const int64_t slot = slot_index(a, h, row, a.ctx_splits + split);
  st.store(a.part_ml + 2 * slot, 0, a.part_acc + slot * D, 0, 1, lane);
}

// Combines the slots of each row of the block: out = sum_s 2^(m_s - M) acc_s / sum_s 2^(m_s - M) l_s,
// in three steps over all threads (no row waits on another's loads): the (max, sum) pairs into
// shared memory; per row the weights 2^(m_s - M) and 1 / sum; then 4 output columns per thread.
// Partials come from other CTAs: read through L2 (ld.global.cg), never a stale L1 line.
inline constexpr size_t kMergeSmemBytes = size_t{kRowsPerBlock} * kMaxSlots * sizeof(float2) + 2 * kRowsPerBlock * sizeof(float);

template <typename T, int D, int kThreads>
__device__ void merge(const SharedAttentionArgs& a, int rb, int h, unsigned char* smem) {
  const int slots = a.ctx_splits + a.buf_splits;
  const int row0 = rb * kRowsPerBlock;
  const int nrows = a.rows - row0 < kRowsPerBlock ? a.rows - row0 : kRowsPerBlock;
  float2* w = reinterpret_cast<float2*>(smem);  // [nrows][slots]: (max, sum), then (weight, sum)
  float* row_inv = reinterpret_cast<float*>(w + kRowsPerBlock * kMaxSlots);
  // The rows of a block are consecutive in the workspace, each with its `slots` pairs.
  const float2* ml = reinterpret_cast<const float2*>(a.part_ml) + slot_index(a, h, row0, 0);
  for (int i = threadIdx.x; i < nrows * slots; i += kThreads) w[i] = __ldcg(ml + i);
  __syncthreads();

  for (int r = threadIdx.x; r < nrows; r += kThreads) {
    float2* row = w + r * slots;
    float mx = -INFINITY;
    for (int s = 0; s < slots; ++s) mx = fmaxf(mx, row[s].x);
    float sum = 0.0f;  // stays 0 when nothing was attended (mx = -inf): out = 0, lse = -inf
    for (int s = 0; s < slots; ++s) {
      const float weight = row[s].x == -INFINITY ? 0.0f : exp2f(row[s].x - mx);
      sum += row[s].y * weight;
      row[s].x = weight;
    }
    row_inv[r] = sum > 0.0f ? 1.0f / sum : 0.0f;
    if (a.lse != nullptr)
      a.lse[row_coord(a, h, row0 + r).index] = sum > 0.0f ? (mx + log2f(sum)) * 0.69314718055994531f : -INFINITY;
  }
  __syncthreads();

  constexpr int kQuads = D / 4;
  for (int i = threadIdx.x; i < nrows * kQuads; i += kThreads) {
    const int r = i / kQuads, c = (i % kQuads) * 4;
    const float2* row = w + r * slots;
    const float4* acc = reinterpret_cast<const float4*>(a.part_acc + slot_index(a, h, row0 + r, 0) * D + c);
    float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 4
    for (int s = 0; s < slots; ++s) {
      const float weight = row[s].x;
      const float4 v = __ldcg(acc + s * kQuads);
      x.x = fmaf(weight, v.x, x.x);
      x.y = fmaf(weight, v.y, x.y);
      x.z = fmaf(weight, v.z, x.z);
      x.w = fmaf(weight, v.w, x.w);
    }
    const float inv = row_inv[r];
    store4<T>(static_cast<T*>(a.out) + row_coord(a, h, row0 + r).index * D + c, make_float4(x.x * inv, x.y * inv, x.z * inv, x.w * inv));
  }
}

// Dynamic shared memory of a kernel: its phase or the merge, whichever needs more.
template <typename Engine>
constexpr size_t kernel_smem_bytes() {
  return Engine::kSmemBytes > kMergeSmemBytes ? Engine::kSmemBytes : kMergeSmemBytes;
}

template <typename T, int D, typename Engine>
__global__ void __launch_bounds__(Engine::kWarps * 32)
    shared_attention_kernel(const __grid_constant__ SharedAttentionArgs a) {
  static_assert(Engine::kSmemBytes >= size_t{Engine::kWarps} * (D + kBufferTile) * sizeof(float), "buffer phase scratch");
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ int is_last;
  const int x = blockIdx.x, rb = blockIdx.y, h = blockIdx.z;
  if (x < a.ctx_splits) {
    Engine::context(a, x, rb, h, smem);
  } else {
    buffer_phase<T, D, Engine::kWarps>(a, x - a.ctx_splits, rb, h, smem);
  }

  // Publish this CTA's partials, then count it in. The counter goes back to zero as soon as the
  // last CTA sees it, so the next launch on this workspace starts from zero too.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    int* counter = a.counters + static_cast<int64_t>(h) * a.row_blocks + rb;
    const int total = a.ctx_splits + a.buf_splits * a.buf_ctas;
    is_last = atomicAdd(counter, 1) == total - 1;
    if (is_last) atomicExch(counter, 0);
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  merge<T, D, Engine::kWarps * 32>(a, rb, h, smem);  // the phase is done with shared memory (barrier above)
}

}  // namespace moekit::cuda::detail
