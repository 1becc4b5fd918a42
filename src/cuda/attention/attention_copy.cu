// Copy kernels of the attention layer: the replicated baseline's materialization and the cache's
// append. Both move whole rows of D elements as 16-byte vectors (D * sizeof(T) is a multiple of 16
// for every supported head dim and dtype; the launcher checks 16-byte alignment).
#include <cuda_runtime_api.h>

#include <algorithm>

#include "cuda/attention/attention_kernels.h"
#include "cuda/cuda_check.h"

namespace moekit::cuda {
namespace {

// Block (bh, y): the y-th slice of sequence b, head h of [B, Hkv, Nctx + cap, D]: the context of
// head h, then the buffer of (b, h).
__global__ void materialize_kernel(const uint4* ctx_k, const uint4* ctx_v, const uint4* buf_k, const uint4* buf_v, uint4* dst_k,
                                   uint4* dst_v, int num_kv_heads, int64_t ctx_vecs, int64_t buf_vecs) {
  const int64_t bh = blockIdx.x, h = bh % num_kv_heads, total = ctx_vecs + buf_vecs;
  for (int64_t i = blockIdx.y * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.y} * blockDim.x) {
    const bool ctx = i < ctx_vecs;
    const int64_t src = ctx ? h * ctx_vecs + i : bh * buf_vecs + (i - ctx_vecs);
    dst_k[bh * total + i] = ctx ? ctx_k[src] : buf_k[src];
    dst_v[bh * total + i] = ctx ? ctx_v[src] : buf_v[src];
  }
}

// Block b appends count_b rows of every head of sequence b and then advances lengths[b]; only this
// block touches lengths[b], and every thread reads it before the barrier that precedes the write.
__global__ void append_kernel(const uint4* new_k, const uint4* new_v, const int32_t* counts, uint4* buf_k, uint4* buf_v,
                              int32_t* lengths, int num_kv_heads, int64_t capacity, int64_t new_len, int row_vecs) {
  const int b = blockIdx.x;
  const int64_t len = lengths[b];
  int64_t count = counts != nullptr ? counts[b] : new_len;
  if (count > capacity - len) count = capacity - len;  // the host checked; never write past the buffer
  const int64_t per_head = count * row_vecs;
  for (int64_t i = threadIdx.x; i < num_kv_heads * per_head; i += blockDim.x) {
    const int64_t h = i / per_head, r = i % per_head;
    const int64_t bh = int64_t{b} * num_kv_heads + h;
    const int64_t src = bh * new_len * row_vecs + r, dst = (bh * capacity + len) * row_vecs + r;
    buf_k[dst] = new_k[src];
    buf_v[dst] = new_v[src];
  }
  __syncthreads();
  if (threadIdx.x == 0 && count > 0) lengths[b] = static_cast<int32_t>(len + count);
}

int row_vecs(DType dtype, int head_dim) { return head_dim * (dtype_bits(dtype) / 8) / 16; }

}  // namespace

Status launch_materialize(DType dtype, int batch, int num_kv_heads, int head_dim, int64_t ctx_len, int64_t capacity,
                          const void* ctx_k, const void* ctx_v, const void* buf_k, const void* buf_v, void* dst_k,
                          void* dst_v, void* stream) {
  const int64_t rv = row_vecs(dtype, head_dim), ctx_vecs = ctx_len * rv, buf_vecs = capacity * rv;
  if (int64_t{batch} * num_kv_heads == 0 || ctx_vecs + buf_vecs == 0) return Status::Ok();
  constexpr int kThreads = 256;
  const int slices = static_cast<int>(std::clamp<int64_t>((ctx_vecs + buf_vecs) / (kThreads * 8), 1, 1024));
  materialize_kernel<<<dim3(batch * num_kv_heads, slices), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4*>(ctx_k), static_cast<const uint4*>(ctx_v), static_cast<const uint4*>(buf_k),
      static_cast<const uint4*>(buf_v), static_cast<uint4*>(dst_k), static_cast<uint4*>(dst_v), num_kv_heads, ctx_vecs,
      buf_vecs);
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

Status launch_append(DType dtype, int batch, int num_kv_heads, int head_dim, int64_t capacity, int64_t new_len,
                     const void* new_k, const void* new_v, const int32_t* counts, void* buffer_k, void* buffer_v,
                     int32_t* lengths, void* stream) {
  if (batch == 0 || new_len == 0) return Status::Ok();
  append_kernel<<<batch, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4*>(new_k), static_cast<const uint4*>(new_v), counts, static_cast<uint4*>(buffer_k),
      static_cast<uint4*>(buffer_v), lengths, num_kv_heads, capacity, new_len, row_vecs(dtype, head_dim));
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::Ok();
}

}  // namespace moekit::cuda
