// Row-wise stages: expand (gather), the unfused activation, finalize (the fixed-order combine) and
// the f32 accumulator's conversion after the atomic gemm2 + finalize. Rows past the routed count
// (expert_offsets[E_local], read on the device) do nothing, so grids are sized by R_max.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
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

// ---- expand ----------------------------------------------------------------------------------------
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
  for (int64_t c = threadIdx.x; c < H / 8; c += blockDim.x) {
    uint4 v = src[c];
    if (a.weight_on_input) {
      T* e = reinterpret_cast<T*>(&v);
#pragma unroll
      for (int i = 0; i < 8; ++i) e[i] = from_float<T>(to_float(e[i]) * w);
    }
    dst[c] = v;
  }
}

// ---- activation ------------------------------------------------------------------------------------
// TIn: float (the mma.sync and stream tiles' rows) or T (the sm_90a kernel's).
template <typename T, typename TIn>
__global__ void activation_kernel(ActivationArgs a) {
  pdl_enter();
  const int64_t r = blockIdx.x;
  if (r >= *a.total_rows) return;
  const int64_t I = a.inter;
  const bool gated = activation_is_gated_device(a.activation);
  const int64_t N = gated ? 2 * I : I;
  const TIn* h = static_cast<const TIn*>(a.in) + r * N;
  T* out = static_cast<T*>(a.out) + r * I;
  // The bias row of the row's expert (the same for the whole block).
  const ExpertBias& b = a.bias;
  const int64_t bias_base = b.data ? static_cast<int64_t>(expert_of_row(b.expert_offsets, b.experts, r)) * N : 0;
  auto biased = [&](int64_t n) {
    const float x = to_float(h[n]);
    return b.data ? x + load_bias(b.data, b.type, bias_base + n) : x;
  };
  // Blocks (row, column chunk): one element per thread, so a few long rows (decode) spread over SMs.
  const int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (i < I) {
    float v;
    if (gated) {
      const float g = biased(a.interleaved ? 2 * i : i);
      const float u = biased(a.interleaved ? 2 * i + 1 : I + i);
      v = gated_act(a.activation, g, u, a.alpha, a.limit);
    } else {
      v = plain_act(a.activation, biased(i));
    }
    out[i] = from_float<T>(v);
  }
}

// ---- finalize --------------------------------------------------------------------------------------
// Output row o = sum over its dest rows, in dest order, of factor * gemm2_out[row]: four columns per
// thread, so one output element's sum is one thread's, in a fixed order. The block first reads the
// row's sources and factors into shared memory together, so that the row loads of the sum do not
// wait on one another (a handful of rows: decode is otherwise a chain of dependent loads). Blocks
// (o, column chunk): a few output rows still spread over several SMs. With a bias (after the sm_90a
// gemm2) each source row's term is factor * (row + bias of the row's expert), as in the epilogues.
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
  const int64_t c = 4 * (static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x);
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int64_t base = begin; base < end; base += kFinalizeRows) {
    const int n = end - base < kFinalizeRows ? static_cast<int>(end - base) : kFinalizeRows;
    __syncthreads();
    for (int i = static_cast<int>(threadIdx.x); i < n; i += blockDim.x) {
      const int64_t r = a.dest_rows[base + i];
      src[i] = r;
      factor[i] = a.scale * (a.use_weights ? a.row_weight[r] : 1.0f);
      if (a.bias.data) bias_base[i] = static_cast<int64_t>(expert_of_row(a.bias.expert_offsets, a.bias.experts, r)) * H;
    }
    __syncthreads();
    if (c >= H) continue;
#pragma unroll 4
    for (int i = 0; i < n; ++i) {
      const float f = factor[i];
      float yv[4];
      detail::load_floats<TRow, 4>(static_cast<const TRow*>(a.rows) + src[i] * H + c, yv);
      float4 y = make_float4(yv[0], yv[1], yv[2], yv[3]);
      if (a.bias.data) {
        const int64_t b = bias_base[i] + c;
        y.x += load_bias(a.bias.data, a.bias.type, b);
        y.y += load_bias(a.bias.data, a.bias.type, b + 1);
        y.z += load_bias(a.bias.data, a.bias.type, b + 2);
        y.w += load_bias(a.bias.data, a.bias.type, b + 3);
      }
      acc.x = fmaf(f, y.x, acc.x);
      acc.y = fmaf(f, y.y, acc.y);
      acc.z = fmaf(f, y.z, acc.z);
      acc.w = fmaf(f, y.w, acc.w);
    }
  }
  if (c < H) detail::store4<T>(static_cast<T*>(a.out) + o * H + c, acc);
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
  const LaunchShape shape{dim3(static_cast<unsigned>(a.max_rows)), dim3(threads)};
  if (a.type == Elem::kBF16) return launch_kernel("expand_kernel", expand_kernel<__nv_bfloat16>, shape, stream, a);
  return launch_kernel("expand_kernel", expand_kernel<__half>, shape, stream, a);
}

Status launch_activation(const ActivationArgs& a, void* stream) {
  if (a.max_rows == 0) return Status::Ok();
  const unsigned threads = row_threads(a.inter);
  const dim3 grid(static_cast<unsigned>(a.max_rows), static_cast<unsigned>(ceil_div(a.inter, threads)));
  const LaunchShape shape{grid, dim3(threads)};
  return with_row_types("activation", a.type, a.in_type, [&](auto out, auto in) {
    return launch_kernel("activation_kernel", activation_kernel<decltype(out), decltype(in)>, shape, stream, a);
  });
}

Status launch_finalize(const FinalizeArgs& a, void* stream) {
  if (a.out_rows == 0) return Status::Ok();
  const unsigned threads = row_threads(std::min<int64_t>(a.hidden / 4, 128));
  const dim3 grid(static_cast<unsigned>(a.out_rows), static_cast<unsigned>(ceil_div(a.hidden / 4, threads)));
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
