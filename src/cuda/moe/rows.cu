// Row-wise stages: expand (gather), the unfused activation, finalize (the fixed-order combine) and
// the f32 accumulator's conversion after the atomic gemm2 + finalize. Rows past the routed count
// (expert_offsets[E_local], read on the device) do nothing, so grids are sized by R_max.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "cuda/common/device_utils.cuh"
#include "cuda/moe/activation.cuh"
#include "cuda/moe/expert_bias.cuh"
#include "cuda/moe/launch_utils.cuh"
#include "cuda/moe/moe_launch.h"
#include "cuda/moe/pdl.cuh"

namespace moekit::cuda::moe {
namespace {

using detail::from_float;
using detail::to_float;

constexpr int kThreads = 256;

// A block's walk over the dest rows [begin, end) of one token or output row, kPassRows at a time:
// before each pass the block's threads call stage(i, r) for the pass's i-th dest row r, which puts
// what the pass needs of it into shared arrays; then body(n) runs over the pass's n rows, whose loads
// no longer wait on one another (expand by token and finalize).
template <int kPassRows, class Stage, class Body>
__device__ __forceinline__ void in_staged_passes(const int64_t* dest_rows, int64_t begin, int64_t end, Stage stage, Body body) {
  for (int64_t base = begin; base < end; base += kPassRows) {
    const int n = end - base < kPassRows ? static_cast<int>(end - base) : kPassRows;
    __syncthreads();  // the previous pass has read the shared arrays
    for (int i = static_cast<int>(threadIdx.x); i < n; i += blockDim.x) stage(i, dest_rows[base + i]);
    __syncthreads();
    body(n);
  }
}

// ---- expand ----------------------------------------------------------------------------------------
// A 16-byte chunk of eight 16-bit elements, each multiplied by w (apply_router_weight_on_input).
template <typename T>
__device__ __forceinline__ uint4 scaled(uint4 v, float w) {
  static_assert(sizeof(T) == 2, "eight elements a 16-byte chunk");
  T* e = reinterpret_cast<T*>(&v);
#pragma unroll
  for (int i = 0; i < 8; ++i) e[i] = from_float<T>(to_float(e[i]) * w);
  return v;
}

// One block per row; 16-byte chunks (H % 8 == 0 is a CUDA-backend requirement).
template <typename T>
__global__ void expand_kernel(ExpandArgs a) {
  pdl_enter();
  const int64_t r = blockIdx.x;
  if (r >= *a.total_rows) return;
  const int64_t H = a.hidden_size;
  const uint4* src = reinterpret_cast<const uint4*>(static_cast<const T*>(a.hidden) + a.row_source[r] * H);
  uint4* dst = reinterpret_cast<uint4*>(static_cast<T*>(a.out) + r * H);
  const float w = a.weight_on_input ? a.row_weight[r] : 1.0f;
  for (int64_t c = threadIdx.x; c < H / 8; c += blockDim.x) dst[c] = a.weight_on_input ? scaled<T>(src[c], w) : src[c];
}

// By token: a block per token reads the token's row once and writes it to each row routed from it.
// The row-major kernel above reads a token once per routed row (top_k times), and in expert order the
// tokens come in no order, so wherever the hidden states exceed L2 each of those reads went to DRAM:
// DeepSeek-V3 T=16384 (235 MB of hidden states, 1.9 GB of rows) spent 890 us in expand on the H200;
// at T=4096 on an H100 this kernel takes 198 us where that one took 284 (docs/perf-notes.md step 16).
constexpr int kExpandRows = 64;  // destination rows staged per pass

template <typename T>
__global__ void expand_by_token_kernel(ExpandArgs a) {
  __shared__ int64_t dst_row[kExpandRows];
  __shared__ float weight[kExpandRows];
  pdl_enter();
  const int64_t t = blockIdx.x;
  const int64_t g = a.out_rows_per_token;
  const int64_t begin = a.dest_offsets[t * g], end = a.dest_offsets[(t + 1) * g];
  const int64_t H = a.hidden_size;
  const uint4* src = reinterpret_cast<const uint4*>(static_cast<const T*>(a.hidden) + t * H);
  in_staged_passes<kExpandRows>(
      a.dest_rows, begin, end,
      [&](int i, int64_t r) {
        dst_row[i] = r;
        weight[i] = a.weight_on_input ? a.row_weight[r] : 1.0f;
      },
      [&](int n) {
        for (int64_t c = threadIdx.x; c < H / 8; c += blockDim.x) {
          const uint4 v = src[c];
          for (int i = 0; i < n; ++i)
            reinterpret_cast<uint4*>(static_cast<T*>(a.out) + dst_row[i] * H)[c] = a.weight_on_input ? scaled<T>(v, weight[i]) : v;
        }
      });
}

// ---- activation ------------------------------------------------------------------------------------
// TIn: float (the mma.sync and stream tiles' rows) or T (the sm_90a kernel's). Blocks (row, column
// chunk), so that a few long rows (decode) still spread over SMs. Each thread computes kActCols
// consecutive outputs (I % 8 == 0 is a CUDA-backend requirement): 16-byte loads and one 16-byte
// store, so a thread has its gate and up chunks in flight at once. One output a thread, with two
// 2-byte loads and a 2-byte store, streamed 1.1 TB/s on the H200 (Qwen3 T=4096: 137 us for 151 MB).
// The arithmetic per element is unchanged, and so are the bits.
constexpr int kActCols = 8;

// N consecutive row elements from p (16-byte aligned) as floats.
template <int N, typename TIn>
__device__ __forceinline__ void load_cols(const TIn* p, float (&f)[N]) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(TIn));  // elements per 16-byte load
  static_assert(N % kPer == 0);
#pragma unroll
  for (int q = 0; q < N / kPer; ++q) {
    float part[kPer];
    detail::load_floats<TIn, kPer>(p + q * kPer, part);
#pragma unroll
    for (int j = 0; j < kPer; ++j) f[q * kPer + j] = part[j];
  }
}

// 8 outputs as one 16-byte store (p 16-byte aligned).
template <typename T>
__device__ __forceinline__ void store_cols(T* p, const float (&v)[kActCols]) {
  static_assert(kActCols == 8 && sizeof(T) == 2);
  *reinterpret_cast<uint4*>(p) = make_uint4(detail::pack2<T>(v[0], v[1]), detail::pack2<T>(v[2], v[3]), detail::pack2<T>(v[4], v[5]),
                                            detail::pack2<T>(v[6], v[7]));
}

template <typename T, typename TIn>
__global__ void activation_kernel(ActivationArgs a) {
  pdl_enter();
  const int64_t r = blockIdx.x;
  if (r >= *a.total_rows) return;
  const int64_t I = a.inter;
  const int64_t i = kActCols * (static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x);  // first output column
  if (i >= I) return;
  const bool gated = activation_is_gated_device(a.activation);
  const int64_t N = gated ? 2 * I : I;
  const TIn* h = static_cast<const TIn*>(a.in) + r * N;
  // The bias row of the row's expert (the same for the whole block).
  const ExpertBias& b = a.bias;
  const int64_t bias_base = b.data ? static_cast<int64_t>(expert_of_row(b.expert_offsets, b.experts, r)) * N : 0;
  auto add_bias = [&](float& x, int64_t n) {
    if (b.data) x += load_bias(b.data, b.type, bias_base + n);
  };
  float v[kActCols];
  if (gated && a.interleaved) {  // gate at 2j, up at 2j + 1
    float gu[2 * kActCols];
    load_cols<2 * kActCols>(h + 2 * i, gu);
#pragma unroll
    for (int j = 0; j < kActCols; ++j) {
      add_bias(gu[2 * j], 2 * (i + j));
      add_bias(gu[2 * j + 1], 2 * (i + j) + 1);
      v[j] = gated_act(a.activation, gu[2 * j], gu[2 * j + 1], a.alpha, a.limit);
    }
  } else if (gated) {  // gate at j, up at I + j
    float g[kActCols], u[kActCols];
    load_cols<kActCols>(h + i, g);
    load_cols<kActCols>(h + I + i, u);
#pragma unroll
    for (int j = 0; j < kActCols; ++j) {
      add_bias(g[j], i + j);
      add_bias(u[j], I + i + j);
      v[j] = gated_act(a.activation, g[j], u[j], a.alpha, a.limit);
    }
  } else {
    float x[kActCols];
    load_cols<kActCols>(h + i, x);
#pragma unroll
    for (int j = 0; j < kActCols; ++j) {
      add_bias(x[j], i + j);
      v[j] = plain_act(a.activation, x[j]);
    }
  }
  store_cols(static_cast<T*>(a.out) + r * I + i, v);
}

// ---- finalize --------------------------------------------------------------------------------------
// Output row o = sum over its dest rows, in dest order, of factor * gemm2_out[row]: kActCols columns
// per thread (16-byte loads of 16-bit rows), so one output element's sum is one thread's, in a fixed
// order. The block first reads the row's sources and factors into shared memory together, so that
// the row loads of the sum do not wait on one another (a handful of rows: decode is otherwise a chain
// of dependent loads). Blocks (o, column chunk): a few output rows still spread over several SMs.
// With a bias (after the sm_90a gemm2) each source row's term is factor * (row + bias of the row's
// expert), as in the epilogues.
constexpr int kFinalizeRows = 64;  // sources staged per pass

// TRow: float (the mma.sync and stream tiles' rows) or T (the sm_90a kernel's).
template <typename T, typename TRow>
__global__ void finalize_kernel(FinalizeArgs a) {
  __shared__ int64_t src[kFinalizeRows];
  __shared__ float factor[kFinalizeRows];
  __shared__ int64_t bias_base[kFinalizeRows];
  pdl_enter();
  const int64_t o = blockIdx.x;
  const int64_t begin = a.dest_offsets[o], end = a.dest_offsets[o + 1];
  if (a.skip_empty && begin == end) return;
  const int64_t H = a.hidden;
  const int64_t c = kActCols * (static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x);
  float acc[kActCols] = {};
  in_staged_passes<kFinalizeRows>(
      a.dest_rows, begin, end,
      [&](int i, int64_t r) {
        src[i] = r;
        factor[i] = a.scale * (a.use_weights ? a.row_weight[r] : 1.0f);
        if (a.bias.data) bias_base[i] = static_cast<int64_t>(expert_of_row(a.bias.expert_offsets, a.bias.experts, r)) * H;
      },
      [&](int n) {
        if (c >= H) return;  // after the staging: every thread helps stage and reaches the barriers
#pragma unroll 4
        for (int i = 0; i < n; ++i) {
          const float f = factor[i];
          float y[kActCols];
          load_cols<kActCols>(static_cast<const TRow*>(a.rows) + src[i] * H + c, y);
#pragma unroll
          for (int j = 0; j < kActCols; ++j) {
            if (a.bias.data) y[j] += load_bias(a.bias.data, a.bias.type, bias_base[i] + c + j);
            acc[j] = fmaf(f, y[j], acc[j]);
          }
        }
      });
  if (c < H) store_cols(static_cast<T*>(a.out) + o * H + c, acc);
}

template <typename T>
__global__ void convert_kernel(const float* acc, T* out, int64_t count4) {
  pdl_enter();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count4; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    detail::store4<T>(out + 4 * i, reinterpret_cast<const float4*>(acc)[i]);
}

// Calls launch(Out{}, In{}) with the kernel's element types: out bf16 or f16, in float or the same.
template <typename Launch>
Status with_row_types(const char* what, Elem out, Elem in, Launch launch) {
  if (in != Elem::kF32 && in != out) return Status::Internal(std::string(what) + ": rows are f32 or the output type");
  if (out == Elem::kBF16) return in == Elem::kF32 ? launch(__nv_bfloat16{}, float{}) : launch(__nv_bfloat16{}, __nv_bfloat16{});
  return in == Elem::kF32 ? launch(__half{}, float{}) : launch(__half{}, __half{});
}

unsigned row_threads(int64_t work) { return static_cast<unsigned>(std::clamp<int64_t>((work + 31) / 32 * 32, 32, kThreads)); }

}  // namespace

Status launch_expand(const ExpandArgs& a, void* stream) {
  if (a.max_rows == 0) return Status::Ok();
  const unsigned threads = row_threads(a.hidden_size / 8);
  if (a.tokens > 0) {
    if (a.out_rows_per_token < 1 || a.dest_offsets == nullptr || a.dest_rows == nullptr)
      return Status::Internal("expand by token: needs dest_offsets, dest_rows and out_rows_per_token >= 1 (got " +
                              std::to_string(a.out_rows_per_token) + ")");
    const LaunchShape shape{dim3(static_cast<unsigned>(a.tokens)), dim3(threads)};
    if (a.type == Elem::kBF16) return launch_kernel("expand_by_token_kernel", expand_by_token_kernel<__nv_bfloat16>, shape, stream, a);
    return launch_kernel("expand_by_token_kernel", expand_by_token_kernel<__half>, shape, stream, a);
  }
  const LaunchShape shape{dim3(static_cast<unsigned>(a.max_rows)), dim3(threads)};
  if (a.type == Elem::kBF16) return launch_kernel("expand_kernel", expand_kernel<__nv_bfloat16>, shape, stream, a);
  return launch_kernel("expand_kernel", expand_kernel<__half>, shape, stream, a);
}

Status launch_activation(const ActivationArgs& a, void* stream) {
  if (a.max_rows == 0) return Status::Ok();
  // With I % 8 == 0 every row starts 16-byte aligned (N = I or 2I elements of 2 or 4 bytes) in
  // 16-byte aligned buffers (the workspace's are 256-byte aligned).
  if (a.inter % kActCols != 0 || reinterpret_cast<uintptr_t>(a.in) % 16 != 0 || reinterpret_cast<uintptr_t>(a.out) % 16 != 0)
    return Status::Internal("activation: needs I % 8 == 0 and 16-byte aligned rows (I=" + std::to_string(a.inter) + ")");
  const unsigned threads = row_threads(a.inter / kActCols);
  const dim3 grid(static_cast<unsigned>(a.max_rows), static_cast<unsigned>(ceil_div(a.inter / kActCols, threads)));
  const LaunchShape shape{grid, dim3(threads)};
  return with_row_types("activation", a.type, a.in_type, [&](auto out, auto in) {
    return launch_kernel("activation_kernel", activation_kernel<decltype(out), decltype(in)>, shape, stream, a);
  });
}

Status launch_finalize(const FinalizeArgs& a, void* stream) {
  if (a.out_rows == 0) return Status::Ok();
  // H % 8 == 0 (a CUDA-backend requirement): every row starts 16-byte aligned in 16-byte aligned buffers.
  if (a.hidden % kActCols != 0 || reinterpret_cast<uintptr_t>(a.rows) % 16 != 0 || reinterpret_cast<uintptr_t>(a.out) % 16 != 0)
    return Status::Internal("finalize: needs H % 8 == 0 and 16-byte aligned rows (H=" + std::to_string(a.hidden) + ")");
  const unsigned threads = row_threads(std::min<int64_t>(a.hidden / kActCols, 128));
  const dim3 grid(static_cast<unsigned>(a.out_rows), static_cast<unsigned>(ceil_div(a.hidden / kActCols, threads)));
  const LaunchShape shape{grid, dim3(threads)};
  return with_row_types("finalize", a.type, a.rows_type, [&](auto out, auto in) {
    return launch_kernel("finalize_kernel", finalize_kernel<decltype(out), decltype(in)>, shape, stream, a);
  });
}

Status launch_convert(const float* acc, void* out, Elem type, int64_t count, void* stream) {
  const int64_t count4 = count / 4;  // H % 8 == 0, so count is a multiple of 4
  if (count4 == 0) return Status::Ok();
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(count4, kThreads), 132 * 16));
  const LaunchShape shape{dim3(blocks), dim3(kThreads)};
  if (type == Elem::kBF16) return launch_kernel("convert_kernel", convert_kernel<__nv_bfloat16>, shape, stream, acc, static_cast<__nv_bfloat16*>(out), count4);
  return launch_kernel("convert_kernel", convert_kernel<__half>, shape, stream, acc, static_cast<__half*>(out), count4);
}

}  // namespace moekit::cuda::moe
