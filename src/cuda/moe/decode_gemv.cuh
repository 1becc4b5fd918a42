// What the GEMV decode kernels share (decode_token.cu: one token; decode_tokens.cu: a few tokens):
// their float scratch rows, which start as a sentinel ("not written yet") so that a consumer waits on
// the values themselves rather than on a counter or a barrier, the relaxed loads and stores that
// read and write them, the streamed 16-byte weight load, and the 8-element dot product.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "cuda/moe/grouped_gemm.cuh"
#include "cuda/moe/launch_utils.cuh"
#include "cuda/moe/moe_launch.h"
#include "moekit/status.h"

namespace moekit::cuda::moe::gemv {

// The scratch: the float rows act [rows][I] and y [rows][H], each value the sentinel until written.
struct TokenScratch {
  float* act;
  float* y;
  int64_t words;  // act and y together
};
constexpr uint32_t kUnwritten = 0xFFFFFFFFu;

// A value as stored: never the sentinel's bits (a NaN stays a NaN).
__device__ __forceinline__ float storable(float v) { return __float_as_uint(v) == kUnwritten ? __uint_as_float(0x7FFFFFFFu) : v; }

__device__ __forceinline__ void store_relaxed(float* p, float v) {
  asm volatile("st.relaxed.gpu.global.f32 [%0], %1;\n" ::"l"(p), "f"(storable(v)) : "memory");
}
__device__ __forceinline__ float load_relaxed(const float* p) {
  float v;
  asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];\n" : "=f"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ float4 load_relaxed4(const float* p) {
  float4 v;
  asm volatile("ld.relaxed.gpu.global.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ bool written(const float4& v) {
  return (__float_as_uint(v.x) != kUnwritten) & (__float_as_uint(v.y) != kUnwritten) & (__float_as_uint(v.z) != kUnwritten) &
         (__float_as_uint(v.w) != kUnwritten);
}
// Fills act and y with the sentinel: a launch that waits for the previous kernel (which may still read
// them) and lets the next one start (decode_token.cu defines it).
Status launch_sentinel_reset(const TokenScratch& s, int sm_count, void* stream);

// What both GEMV launches check before anything runs: the scratch the plan carved (`need` bytes,
// 16-byte aligned), and `smem_bytes` of shared memory (`smem_what`) within what this GPU gives a block.
inline Status check_gemv_launch(const char* kernel, const DecodeLayerArgs& a, size_t need, int64_t smem_bytes, const char* smem_what) {
  if (a.scratch_bytes < need)
    return Status::Internal(std::string(kernel) + ": " + std::to_string(a.scratch_bytes) + " scratch bytes given, " + std::to_string(need) + " needed");
  if (reinterpret_cast<uintptr_t>(a.scratch) % 16 != 0) return Status::Internal(std::string(kernel) + ": scratch not 16-byte aligned");
  if (smem_bytes > max_smem_optin())
    return Status::Unsupported(std::string(kernel) + ": " + std::to_string(smem_bytes) + " bytes of shared memory (" + smem_what + ") > this GPU's " +
                               std::to_string(max_smem_optin()));
  return Status::Ok();
}

// The W2 rows the busiest warp streams when `lists` act rows (slots, groups) each split H into items
// of `rows` W2 rows, dealt round robin over `warps` warps: what both kernels' gemm2_rows_per_item weigh.
inline int64_t gemm2_busiest_rows(int64_t lists, int64_t hidden, int64_t rows, int64_t warps) {
  return ceil_div(lists * ceil_div(hidden, rows), warps) * rows;
}

// A streamed weight chunk: not kept in L1, and in L2 under `policy` (evict-first: a layer streams
// more weight bytes than L2 holds, and the kernels' code should stay there).
__device__ __forceinline__ uint4 load_stream(const void* p, uint64_t policy) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p), "l"(policy));
  return v;
}


// acc += the 8 elements of chunk w (type T) times x0, x1.
template <typename T>
__device__ __forceinline__ float dot8(const uint4& w, const float4& x0, const float4& x1, float acc) {
  float a, b;
  detail::unpack2<T>(w.x, a, b);
  acc = fmaf(a, x0.x, acc);
  acc = fmaf(b, x0.y, acc);
  detail::unpack2<T>(w.y, a, b);
  acc = fmaf(a, x0.z, acc);
  acc = fmaf(b, x0.w, acc);
  detail::unpack2<T>(w.z, a, b);
  acc = fmaf(a, x1.x, acc);
  acc = fmaf(b, x1.y, acc);
  detail::unpack2<T>(w.w, a, b);
  acc = fmaf(a, x1.z, acc);
  acc = fmaf(b, x1.w, acc);
  return acc;
}
// The same with x[0..8) in shared memory (16-byte aligned).
template <typename T>
__device__ __forceinline__ float dot8(const uint4& w, const float* x, float acc) {
  return dot8<T>(w, reinterpret_cast<const float4*>(x)[0], reinterpret_cast<const float4*>(x)[1], acc);
}

// The 8 elements of a 16-byte chunk (type T) into d[0..8), in float.
template <typename T>
__device__ __forceinline__ void unpack8(const uint4& v, float* d) {
  detail::unpack2<T>(v.x, d[0], d[1]);
  detail::unpack2<T>(v.y, d[2], d[3]);
  detail::unpack2<T>(v.z, d[4], d[5]);
  detail::unpack2<T>(v.w, d[6], d[7]);
}

// gemm2, one pass: chunks c0 + lane + 32 q (q < C) of W2 rows h0..h0+R-1 of one expert (`w2`, its
// [H][I] block), zeros past the last row or the row end (c2 chunks a row).
template <typename T, int R, int C>
__device__ __forceinline__ void load_w2_pass(const T* w2, int64_t h0, int64_t H, int64_t I, int64_t c0, int64_t c2, int lane, uint64_t policy,
                                             uint4 (&v)[R][C]) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const T* w = w2 + (h0 + r) * I;
#pragma unroll
    for (int q = 0; q < C; ++q) {
      const int64_t c = c0 + lane + 32 * q;
      v[r][q] = h0 + r < H && c < c2 ? load_stream(w + 8 * c, policy) : make_uint4(0, 0, 0, 0);
    }
  }
}
// The act chunks that pass meets (an act row of c2 chunks), all loads out before any check (one L2
// round trip, not one per chunk), re-read until none is the sentinel.
template <int C>
__device__ __forceinline__ void wait_act_pass(const float* act, int64_t c0, int64_t c2, int lane, float4 (&x)[C][2]) {
  const float* p[C];
#pragma unroll
  for (int q = 0; q < C; ++q) {
    const int64_t c = c0 + lane + 32 * q;
    p[q] = act + 8 * (c < c2 ? c : 0);
  }
  bool ready = false;
  while (!ready) {
#pragma unroll
    for (int q = 0; q < C; ++q) {
      x[q][0] = load_relaxed4(p[q]);
      x[q][1] = load_relaxed4(p[q] + 4);
    }
    ready = true;
#pragma unroll
    for (int q = 0; q < C; ++q) ready = ready && written(x[q][0]) && written(x[q][1]);
    if (!ready) __nanosleep(32);
  }
}
// acc[r] += row r's chunks of the pass times the act chunks.
template <typename T, int R, int C>
__device__ __forceinline__ void dot_w2_pass(const uint4 (&v)[R][C], const float4 (&x)[C][2], int64_t c0, int64_t c2, int lane, float (&acc)[R]) {
#pragma unroll
  for (int q = 0; q < C; ++q) {
    if (c0 + lane + 32 * q >= c2) continue;
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = dot8<T>(v[r][q], x[q][0], x[q][1], acc[r]);
  }
}
// The combine: up to 8 values of one column (`col` + row * stride for each row >= 0; 0 for a row < 0),
// all loads out before any check, re-read until none is the sentinel.
__device__ __forceinline__ void wait_column8(const float* col, const int (&row)[8], int64_t stride, float (&y)[8]) {
  bool ready = false;
  while (!ready) {
#pragma unroll
    for (int w = 0; w < 8; ++w) y[w] = row[w] >= 0 ? load_relaxed(col + static_cast<int64_t>(row[w]) * stride) : 0.f;
    ready = true;
#pragma unroll
    for (int w = 0; w < 8; ++w) ready = ready && __float_as_uint(y[w]) != kUnwritten;
    if (!ready) __nanosleep(32);
  }
}

// 16-byte weight chunks a lane has in flight per pass of gemm1: two rows (gate, up) of 8 chunks
// each, 16 loads = 256 bytes a lane, 128 KB an SM. gemm2's (rows x chunks) are the kernel's template
// parameters (gemm2_rows_per_item).
inline constexpr int kG1Chunks = 8;

// One step of a warp's gemm1 work: item t (row i of the scratch's weight list: a local slot in
// decode_token.cu, a group of pairs in decode_tokens.cu; output j), its gate and up rows, and the
// pass starting at chunk c0 (gemm1_step gives an item's first pass, next_pass the ones after it).
// t >= n1: no step (the warp's gemm1 items are done).
template <typename T>
struct G1Step {
  bool valid;
  int64_t t, j, c0, gate_row, up_row;
  int i;
  const T* wg;
  const T* wu;
  __device__ __forceinline__ G1Step next_pass(int64_t chunks) const {
    G1Step n = *this;
    n.c0 += chunks;
    return n;
  }
};
// `expert`: the local expert of item t's row i, or -1 to read it from expert_of.
template <typename T>
__device__ __forceinline__ G1Step<T> gemm1_step(int64_t t, int64_t n1, const DecodeLayerArgs& a, const int* expert_of, const T* W13,
                                                int64_t I, int64_t N1, int64_t H, int expert = -1) {
  G1Step<T> st{};
  st.valid = t < n1;
  st.t = t;
  st.c0 = 0;
  if (!st.valid) return st;
  st.i = static_cast<int>(t / I);
  st.j = t % I;
  st.gate_row = a.gated ? gate_up_row(st.j, false, I, a.interleaved) : st.j;
  st.up_row = a.gated ? gate_up_row(st.j, true, I, a.interleaved) : st.j;
  const int64_t e = expert >= 0 ? expert : expert_of[st.i];
  st.wg = W13 + (e * N1 + st.gate_row) * H;
  st.wu = W13 + (e * N1 + st.up_row) * H;
  return st;
}

// A gemm1 step's chunk q (chunk lane + 32 q of its gate and up rows) into g, u: zeros past the row,
// or for no step.
template <typename T>
__device__ __forceinline__ void load_gemm1_chunk(const G1Step<T>& st, int q, int64_t c1, bool gated, int lane, uint64_t policy, uint4& g, uint4& u) {
  const int64_t c = st.c0 + lane + 32 * q;
  g = st.valid && c < c1 ? load_stream(st.wg + 8 * c, policy) : make_uint4(0, 0, 0, 0);
  u = st.valid && c < c1 && gated ? load_stream(st.wu + 8 * c, policy) : make_uint4(0, 0, 0, 0);
}
// All of a gemm1 step's chunks.
template <typename T>
__device__ __forceinline__ void issue_gemm1(const G1Step<T>& st, int64_t c1, bool gated, int lane, uint64_t policy, uint4 (&g)[kG1Chunks],
                                            uint4 (&u)[kG1Chunks]) {
#pragma unroll
  for (int q = 0; q < kG1Chunks; ++q) load_gemm1_chunk(st, q, c1, gated, lane, policy, g[q], u[q]);
}

}  // namespace moekit::cuda::moe::gemv
