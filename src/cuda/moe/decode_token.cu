// The whole MoE layer for one token (decode at batch 1) as a weight-streaming GEMV, in two launches:
//
//   decode_token_reset_kernel  one warp: waits for the previous kernel, lets the next one start, and
//                              zeroes the count of finished gemm1 items.
//   decode_token_kernel        one CTA per SM, 16 warps, each warp on its own work items:
//     routing   every CTA routes the token itself (warp 0, routing_device.cuh) while the other
//               warps load the hidden row into shared memory: no kernel boundary between the router
//               and the first weight load. CTA 0 alone stores the ids and weights.
//     gemm1     item (local slot i, output j): the gate and up rows j of the slot's expert dotted with
//               the hidden row, 16-byte weight loads straight into registers (no shared memory
//               pipeline, no tensor cores: one token is one multiply-add per weight element), bias
//               and activation on lane 0, the float result into `act` (scratch, [slots][I]).
//     gemm2     item h: row h of W2 of every local slot's expert dotted with that slot's act row,
//               plus bias, summed in slot order with the factor (routed_scaling_factor * weight):
//               out[h], or out[slot][h] under no_combine. No atomics: bitwise deterministic.
//
// Work items are walked statically: warp w of the grid's G warps takes items w, w + G, w + 2G, ...,
// all gemm1 items first, then the gemm2 items (uniform items, so the walk is balanced; an atomic ticket
// per item measured 39.9 against 36.5 us on Qwen3-30B-A3B: every ticket is an atomic on one address).
// Before its CTA waits for gemm1, a warp loads the first rows of its first gemm2 item into registers
// (they do not depend on gemm1), so the weight stream keeps going through the hand-off. The CTA then
// waits until every gemm1 item is counted done, copies `act` into shared memory and runs its gemm2
// items. No deadlock: a gemm2 item waits only on gemm1 items, which never wait, and the grid is one
// CTA per SM that fits on an SM by itself, so every CTA runs once the kernel before it (PDL) leaves.
//
// Why a GEMV and why here: at T = 1 the stage pipeline's time was mostly around its weight stream
// (docs/perf-notes.md, steps 7-9): a routing kernel, a maps kernel, the hand-offs between kernels
// (about 2 us each), gemm2's CTAs starting only as gemm1's leave, and a finalize kernel. Here one
// kernel reads the logits, streams W13 then W2 without a gap, and writes the output.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "cuda/common/device_utils.cuh"
#include "cuda/moe/activation.cuh"
#include "cuda/moe/expert_bias.cuh"
#include "cuda/moe/grouped_gemm.cuh"
#include "cuda/moe/launch_utils.cuh"
#include "cuda/moe/moe_launch.h"
#include "cuda/moe/pdl.cuh"
#include "cuda/moe/routing_device.cuh"

namespace moekit::cuda::moe {
namespace {

constexpr int kThreads = 512;
// 16-byte weight chunks a lane has in flight per pass: gemm1 two rows (gate, up) of 8 chunks each;
// gemm2 four slots' rows of 4 chunks each. 16 loads = 256 bytes a lane, 128 KB an SM in flight.
constexpr int kG1Chunks = 8;
constexpr int kG2Rows = 4, kG2Chunks = 4;

// The scratch: a counter (in a 16-byte header), then the float act rows.
struct TokenScratch {
  int* done1;  // gemm1 items finished
  float* act;  // [slots][I]
};
constexpr int64_t kActOffsetWords = 4;

// Dynamic shared memory, in this order: the hidden row (float [H]), the act rows (float [K][I]),
// the slot tables (int slot[K], int expert[K], float factor[K]) and warp 0's routing scratch.
struct TokenSmemLayout {
  int64_t x, act, slot, expert, factor, route, bytes;
};
__host__ __device__ inline TokenSmemLayout token_smem_layout(int64_t hidden, int64_t inter, int top_k, size_t route_bytes) {
  TokenSmemLayout l;
  l.x = 0;
  l.act = (hidden * 4 + 15) / 16 * 16;
  l.slot = l.act + (top_k * inter * 4 + 15) / 16 * 16;
  l.expert = l.slot + top_k * 4;
  l.factor = l.expert + top_k * 4;
  l.route = (l.factor + top_k * 4 + 15) / 16 * 16;
  l.bytes = l.route + static_cast<int64_t>(route_bytes);
  return l;
}

__device__ __forceinline__ uint4 load_stream(const void* p, uint64_t policy) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p), "l"(policy));
  return v;
}


// acc += the 8 elements of chunk w (type T) times x[0..8) (shared memory, 16-byte aligned).
template <typename T>
__device__ __forceinline__ float dot8(const uint4& w, const float* x, float acc) {
  const float4 x0 = reinterpret_cast<const float4*>(x)[0], x1 = reinterpret_cast<const float4*>(x)[1];
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

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, off);
  return v;
}

__global__ void decode_token_reset_kernel(TokenScratch s) {
  pdl_enter();
  if (threadIdx.x == 0) *s.done1 = 0;
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 1) decode_token_kernel(DecodeLayerArgs a, TokenScratch s, TokenSmemLayout L) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ int n_local_s, wants_g2_s;
  float* xs = reinterpret_cast<float*>(smem + L.x);
  float* acts = reinterpret_cast<float*>(smem + L.act);
  int* slot_of = reinterpret_cast<int*>(smem + L.slot);      // local slot i -> its slot in [0, K)
  int* expert_of = reinterpret_cast<int*>(smem + L.expert);  // local slot i -> its local expert
  float* factor = reinterpret_cast<float*>(smem + L.factor); // local slot i -> scale * weight
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int K = a.route.top_k;
  const int64_t H = a.hidden_size, I = a.inter, N1 = a.gated ? 2 * I : I;

  // ---- routing and the hidden row. Both read only the layer's inputs, which the kernel two launches
  // back (the caller's) has finished writing when this one starts (pdl.cuh's contract), so neither
  // waits for the reset kernel.
  float* weights = factor;  // the routing's weights land here; the compaction below turns them into factors
  if (warp == 0) {
    if (a.route_on_device) {
      unsigned char* rs = smem + L.route;
      // route_token_warp's `chosen` array holds the ids; ask for them in the slot table directly.
      route_token_warp(a.route, 0, rs, lane, blockIdx.x == 0, slot_of, weights);
    } else {
      for (int k = lane; k < K; k += 32) {
        slot_of[k] = a.topk_ids[k];
        weights[k] = a.topk_weights[k];
      }
    }
  } else {
    const T* x = static_cast<const T*>(a.hidden);
    for (int64_t c = tid - 32; c < H / 8; c += kThreads - 32) {
      const uint4 v = *reinterpret_cast<const uint4*>(x + 8 * c);
      float* d = xs + 8 * c;
      detail::unpack2<T>(v.x, d[0], d[1]);
      detail::unpack2<T>(v.y, d[2], d[3]);
      detail::unpack2<T>(v.z, d[4], d[5]);
      detail::unpack2<T>(v.w, d[6], d[7]);
    }
  }
  __syncthreads();
  // The local slots, in slot order: warp 0 compacts them, 32 slots a round.
  if (warp == 0) {
    int n = 0;
    for (int k0 = 0; k0 < K; k0 += 32) {
      const int k = k0 + lane;
      const int l = k < K ? local_expert_of(slot_of[k], a.route.experts, a.expert_map, a.local_begin, a.local_experts) : -1;
      const float f = k < K ? a.scale * weights[k] : 0.f;
      const unsigned local = __ballot_sync(0xFFFFFFFFu, l >= 0);
      __syncwarp();  // every lane has read its entry before any is overwritten (n + rank <= k)
      if (l >= 0) {
        const int at = n + __popc(local & ((1u << lane) - 1));
        slot_of[at] = k;
        expert_of[at] = l;
        factor[at] = f;
      }
      n += __popc(local);
      __syncwarp();
    }
    if (lane == 0) {
      n_local_s = n;
      wants_g2_s = 0;
    }
  }
  __syncthreads();
  const int nl = n_local_s;
  const int64_t n1 = static_cast<int64_t>(nl) * I, n_items = n1 + H;

  pdl_wait();  // the counters (the reset kernel), and every write below
  pdl_launch_dependents();

  const uint64_t policy = detail::l2_evict_first_policy();
  const T* W13 = static_cast<const T*>(a.w13);
  const T* W2 = static_cast<const T*>(a.w2);
  const int64_t c1 = H / 8, c2 = I / 8;  // 16-byte chunks per row of W13 and of W2
  int done = 0;
  const int64_t G = static_cast<int64_t>(gridDim.x) * (kThreads / 32);
  int64_t t = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + warp;  // this warp's first item

  // ---- gemm1 + activation
  while (t < n1) {
    const int i = static_cast<int>(t / I);
    const int64_t j = t % I;
    const int e = expert_of[i];
    const int64_t gate_row = a.gated ? gate_up_row(j, false, I, a.interleaved) : j;
    const int64_t up_row = a.gated ? gate_up_row(j, true, I, a.interleaved) : j;
    const T* wg = W13 + (static_cast<int64_t>(e) * N1 + gate_row) * H;
    const T* wu = W13 + (static_cast<int64_t>(e) * N1 + up_row) * H;
    float ag = 0.f, au = 0.f;
#pragma unroll 1
    for (int64_t c0 = 0; c0 < c1; c0 += 32 * kG1Chunks) {
      uint4 g[kG1Chunks], u[kG1Chunks];
#pragma unroll
      for (int q = 0; q < kG1Chunks; ++q) {
        const int64_t c = c0 + lane + 32 * q;
        g[q] = c < c1 ? load_stream(wg + 8 * c, policy) : make_uint4(0, 0, 0, 0);
        u[q] = c < c1 && a.gated ? load_stream(wu + 8 * c, policy) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int q = 0; q < kG1Chunks; ++q) {
        const int64_t c = c0 + lane + 32 * q;
        if (c >= c1) continue;
        ag = dot8<T>(g[q], xs + 8 * c, ag);
        au = dot8<T>(u[q], xs + 8 * c, au);
      }
    }
    ag = warp_sum(ag);
    au = warp_sum(au);
    if (lane == 0) {
      if (a.w13_bias) {
        ag += load_bias(a.w13_bias, a.w13_bias_type, static_cast<int64_t>(e) * N1 + gate_row);
        if (a.gated) au += load_bias(a.w13_bias, a.w13_bias_type, static_cast<int64_t>(e) * N1 + up_row);
      }
      s.act[static_cast<int64_t>(i) * I + j] = a.gated ? gated_act(a.activation, ag, au, a.alpha, a.limit) : plain_act(a.activation, ag);
    }
    ++done;
    t += G;
  }

  // gemm2 loads: the 16-byte chunks [c0, c0 + 32 kG2Chunks) of the rows of local slots [i0, i0 + kG2Rows)
  // at output h, into v (zeros past the ends).
  uint4 v[kG2Rows][kG2Chunks];
  auto load_group = [&](int64_t h, int i0, int64_t c0) {
#pragma unroll
    for (int r = 0; r < kG2Rows; ++r) {
      const T* w = i0 + r < nl ? W2 + (static_cast<int64_t>(expert_of[i0 + r]) * H + h) * I : nullptr;
#pragma unroll
      for (int q = 0; q < kG2Chunks; ++q) {
        const int64_t c = c0 + lane + 32 * q;
        v[r][q] = w && c < c2 ? load_stream(w + 8 * c, policy) : make_uint4(0, 0, 0, 0);
      }
    }
  };
  // ---- the hand-off: this warp's gemm1 count, its first gemm2 rows into registers, then the CTA
  // waits for every gemm1 item.
  if (lane == 0 && done > 0) {
    __threadfence();  // this warp's act stores before its count
    atomicAdd(s.done1, done);
  }
  bool preloaded = false;
  if (t < n_items) {
    load_group(t - n1, 0, 0);
    preloaded = true;
    if (lane == 0) wants_g2_s = 1;
  }
  __syncthreads();
  if (!wants_g2_s) return;  // the whole CTA: no gemm2 item here
  if (tid == 0)
    while (detail::load_acquire(s.done1) < n1) __nanosleep(32);
  __syncthreads();
  for (int64_t f = tid; f < n1 / 4; f += kThreads)  // I is a multiple of 8
    reinterpret_cast<float4*>(acts)[f] = __ldcg(reinterpret_cast<const float4*>(s.act) + f);
  __syncthreads();

  // ---- gemm2 + combine
  T* out = static_cast<T*>(a.out);
  while (t < n_items) {
    const int64_t h = t - n1;
    float sum = 0.f;
#pragma unroll 1
    for (int i0 = 0; i0 < nl; i0 += kG2Rows) {
      float acc[kG2Rows] = {};
#pragma unroll 1
      for (int64_t c0 = 0; c0 < c2; c0 += 32 * kG2Chunks) {
        if (!preloaded) load_group(h, i0, c0);
        preloaded = false;
#pragma unroll
        for (int r = 0; r < kG2Rows; ++r)
#pragma unroll
          for (int q = 0; q < kG2Chunks; ++q) {
            const int64_t c = c0 + lane + 32 * q;
            if (i0 + r < nl && c < c2) acc[r] = dot8<T>(v[r][q], acts + (i0 + r) * I + 8 * c, acc[r]);
          }
      }
#pragma unroll
      for (int r = 0; r < kG2Rows; ++r) acc[r] = warp_sum(acc[r]);
      if (lane == 0) {
#pragma unroll
        for (int r = 0; r < kG2Rows; ++r) {
          if (i0 + r >= nl) continue;
          float y = acc[r];
          if (a.w2_bias) y += load_bias(a.w2_bias, a.w2_bias_type, static_cast<int64_t>(expert_of[i0 + r]) * H + h);
          if (a.no_combine)
            out[static_cast<int64_t>(slot_of[i0 + r]) * H + h] = detail::from_float<T>(fmaf(factor[i0 + r], y, 0.f));
          else
            sum = fmaf(factor[i0 + r], y, sum);
        }
      }
    }
    preloaded = false;  // nl == 0: nothing was consumed
    if (lane == 0) {
      if (!a.no_combine) {
        out[h] = detail::from_float<T>(sum);
      } else {
        // The rows of slots whose expert is not local are zeros.
        for (int k = 0, i = 0; k < K; ++k) {
          if (i < nl && slot_of[i] == k) {
            ++i;
            continue;
          }
          out[static_cast<int64_t>(k) * H + h] = detail::from_float<T>(0.f);
        }
      }
    }
    t += G;
  }
}

template <typename T>
Status launch_typed(const DecodeLayerArgs& a, const TokenScratch& s, const TokenSmemLayout& L, void* stream) {
  auto kernel = decode_token_kernel<T>;
  MOEKIT_RETURN_IF_ERROR(allow_dynamic_smem(kernel, static_cast<size_t>(L.bytes)));
  // One CTA per SM: more would only wait for a slot (the items are handed out dynamically anyway).
  const LaunchShape shape{dim3(static_cast<unsigned>(std::max(a.sm_count, 1))), dim3(kThreads), static_cast<size_t>(L.bytes)};
  return launch_kernel("decode_token_kernel", kernel, shape, stream, a, s, L);
}

}  // namespace

size_t decode_token_scratch_bytes(int top_k, int64_t inter) { return static_cast<size_t>(kActOffsetWords + top_k * inter) * 4; }

int64_t decode_token_smem_bytes(int experts, int n_group, int top_k, int64_t hidden, int64_t inter) {
  return token_smem_layout(hidden, inter, top_k, route_smem_per_warp(experts, n_group)).bytes;
}

Status launch_decode_token(const DecodeLayerArgs& a, void* stream) {
  const int K = a.route.top_k;
  if (a.route.tokens != 1)
    return Status::Unsupported("decode token kernel: T=" + std::to_string(a.route.tokens) + " (it runs exactly one token)");
  if (K > kDecodeTokenMaxSlots)
    return Status::Unsupported("decode token kernel: top_k=" + std::to_string(K) + " > " + std::to_string(kDecodeTokenMaxSlots));
  if (a.scratch_bytes < decode_token_scratch_bytes(K, a.inter))
    return Status::Internal("decode token kernel: " + std::to_string(a.scratch_bytes) + " scratch bytes given, " +
                            std::to_string(decode_token_scratch_bytes(K, a.inter)) + " needed");
  const size_t route_bytes = a.route_on_device ? route_smem_per_warp(a.route.experts, a.route.n_group) : 0;
  const TokenSmemLayout L = token_smem_layout(a.hidden_size, a.inter, K, route_bytes);
  if (L.bytes > max_smem_optin())
    return Status::Unsupported("decode token kernel: " + std::to_string(L.bytes) + " bytes of shared memory (hidden row, act rows, routing) > this GPU's " +
                               std::to_string(max_smem_optin()));
  int* w = static_cast<int*>(a.scratch);
  const TokenScratch s{w, reinterpret_cast<float*>(w + kActOffsetWords)};
  MOEKIT_RETURN_IF_ERROR(launch_kernel("decode_token_reset_kernel", decode_token_reset_kernel, {dim3(1), dim3(32), 0}, stream, s));
  if (a.type == Elem::kBF16) return launch_typed<__nv_bfloat16>(a, s, L, stream);
  if (a.type == Elem::kF16) return launch_typed<__half>(a, s, L, stream);
  return Status::Unsupported("decode token kernel: the CUDA kernels take f16 or bf16 activations");
}

}  // namespace moekit::cuda::moe
