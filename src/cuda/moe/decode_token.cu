// The whole MoE layer for one token (decode at batch 1) as a weight-streaming GEMV, in two launches:
//
//   sentinel_reset_kernel      waits for the previous kernel, lets the next one start, and fills the
//                              scratch's float rows (act, y) with a sentinel: "not written yet".
//   decode_token_kernel        one CTA per SM, 16 warps, each warp on its own work items:
//     routing   every CTA routes the token itself (warp 0, routing_device.cuh) while the other
//               warps load the hidden row into shared memory: no kernel boundary between the router
//               and the first weight load. DeepSeek-V3's grouped routing takes a warp per group
//               first (routing_grouped.cuh). CTA 0 alone stores the ids and weights.
//     gemm1     item (local slot i, output j): the gate and up rows j of the slot's expert dotted with
//               the hidden row, 16-byte weight loads straight into registers (no shared memory
//               pipeline, no tensor cores: one token is one multiply-add per weight element), bias
//               and activation on lane 0, the float result into act[i][j]. A warp's next item's
//               loads go out chunk by chunk as this item's registers are used (rolled).
//     gemm2     item (local slot i, R outputs h, R = 4 or 6): rows h..h+R-1 of W2 of the slot's
//               expert dotted with act[i], into y[i][h..h+R-1] (under no_combine: scaled, plus bias,
//               into out[slot][h]).
//     combine   item (4 outputs h): out[h] = the sum over local slots, in slot order, of
//               factor * (y[i][h] + bias): no atomics, bitwise deterministic.
//
// Work items are walked statically: warp w of the grid's G warps takes items w, w + G, w + 2G, ...
// in the order gemm1, gemm2 (slot-major), combine (uniform items, so the walk is balanced; an atomic
// ticket per item measured 39.9 against 36.5 us on Qwen3-30B-A3B: every ticket is an atomic on one
// address). A consumer waits on the data itself, not on a counter: every float of act and y starts as
// the sentinel (a NaN bit pattern no producer stores: a result with those bits is stored as another
// NaN), a producer stores each value once, and a consumer re-reads (relaxed, from L2) until none of
// its values is the sentinel. So a gemm2 item starts as soon as its slot's act row is complete,
// with its weight loads already in flight, and no fence or barrier sits between the phases. No
// deadlock: an item waits only on items of earlier phases, which every warp walks first, and the
// grid is one CTA per SM that fits on an SM by itself, so every CTA runs once the kernel before it
// (PDL) leaves.
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
#include "cuda/moe/decode_gemv.cuh"
#include "cuda/moe/grouped_gemm.cuh"
#include "cuda/moe/launch_utils.cuh"
#include "cuda/moe/moe_launch.h"
#include "cuda/moe/pdl.cuh"
#include "cuda/moe/routing_device.cuh"
#include "cuda/moe/routing_grouped.cuh"

namespace moekit::cuda::moe {
namespace {

using namespace gemv;  // NOLINT: the GEMV helpers (decode_gemv.cuh)

constexpr int kThreads = 512;
constexpr int kWarpsPerCta = kThreads / 32;
// gemm2's (rows x chunks) are the kernel's template parameters (gemm2_rows_per_item); gemm1's chunks
// per pass are decode_gemv.cuh's kG1Chunks.
constexpr int kCombineOutputs = 4;  // outputs per combine item (a lane each)

// Dynamic shared memory, in this order: the hidden row (float [H]), the slot tables (int slot[K],
// int expert[K], float factor[K]) and warp 0's routing scratch.
struct TokenSmemLayout {
  int64_t x, slot, expert, factor, route, bytes;
};
__host__ __device__ inline TokenSmemLayout token_smem_layout(int64_t hidden, int top_k, size_t route_bytes) {
  TokenSmemLayout l;
  l.x = 0;
  l.slot = (hidden * 4 + 15) / 16 * 16;
  l.expert = l.slot + top_k * 4;
  l.factor = l.expert + top_k * 4;
  l.route = (l.factor + top_k * 4 + 15) / 16 * 16;
  l.bytes = l.route + static_cast<int64_t>(route_bytes);
  return l;
}

template <typename T, int kG2Rows, int kG2Chunks>
__global__ void __launch_bounds__(kThreads, 1) decode_token_kernel(DecodeLayerArgs a, TokenScratch s, TokenSmemLayout L) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ int n_local_s;
  __shared__ int early_s[32];  // slot -> expert id as soon as the routing settles it; -1 before
  __shared__ int routed_s;     // warp 0 is past the routing and the slot table
  float* xs = reinterpret_cast<float*>(smem + L.x);
  int* slot_of = reinterpret_cast<int*>(smem + L.slot);      // local slot i -> its slot in [0, K)
  int* expert_of = reinterpret_cast<int*>(smem + L.expert);  // local slot i -> its local expert
  float* factor = reinterpret_cast<float*>(smem + L.factor); // local slot i -> scale * weight
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int K = a.route.top_k;
  const int64_t H = a.hidden_size, I = a.inter, N1 = a.gated ? 2 * I : I;

  // Early starts: when every expert is local (no map, the full range), local slot i is slot i and its
  // expert is the routed id, so a warp whose first item's slot the routing has already settled
  // (early_s: route_on_logits, route_grouped_finish) issues that item's weight loads before the CTA's
  // barrier. Only where the routing settles slots early (the logits' fast path, DeepSeek-V3's grouped
  // routing): elsewhere (Expert parallelism, PreRouted, the one-warp full path) the warps wait for
  // the slot table rather than poll beside warp 0. Not in the 6-row kernel: it spilled registers
  // with the early loads, and GPT-OSS-120B measured 1.6 us slower (docs/perf-notes.md, step 12).
  // The fast path's condition below restates try_route_on_logits's: as a shared predicate there,
  // the route + maps kernels (build_maps.cu) were allocated differently and one of them spilled
  // (ptxas: a 32-byte stack frame where there was none).
  constexpr bool kEarly = kG2Rows == 4;
  const auto method = static_cast<RoutingMethod>(a.route.method);
  // DeepSeek-V3's grouped routing runs a group per warp (routing_grouped.cuh); warp 0 then finishes
  // it, settling a slot each round.
  const bool grouped = a.route_on_device && grouped_routing_fits(a.route, kWarpsPerCta);
  const bool early_ok = kEarly && a.route_on_device && a.expert_map == nullptr && a.local_begin == 0 && a.local_experts == a.route.experts &&
                        K < 32 && a.route.experts <= 512 &&
                        (grouped || method == RoutingMethod::kTopKSoftmax || (method == RoutingMethod::kSoftmaxTopK && a.route.renormalize));
  if constexpr (kEarly) {
    if (tid < 32) early_s[tid] = -1;
    if (tid == 0) routed_s = 0;
    __syncthreads();
  }

  // ---- routing and the hidden row. Both read only the layer's inputs, which the kernel two launches
  // back (the caller's) has finished writing when this one starts (pdl.cuh's contract), so neither
  // waits for the reset kernel; nor do the early weight loads.
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kWarpsPerCta + warp;  // this warp's first item
  uint4 g[kG1Chunks], u[kG1Chunks];  // gemm1's weight chunks in flight (see gemm1 below)
  const T* preloaded = nullptr;      // the gate row whose first pass g and u hold, if any
  float* weights = factor;  // the routing's weights land here; the compaction below turns them into factors
  if (warp == 0) {
    if (a.route_on_device) {
      unsigned char* rs = smem + L.route;
      // The routing's ids land in the slot table directly.
      if (grouped) {
        route_grouped_phase1(a.route, 0, rs, 0, lane);
        route_grouped_finish(a.route, 0, rs, lane, blockIdx.x == 0, slot_of, weights, early_ok ? early_s : nullptr);
      } else {
        route_token_warp(a.route, 0, rs, lane, blockIdx.x == 0, slot_of, weights, early_ok ? early_s : nullptr);
      }
    } else {
      for (int k = lane; k < K; k += 32) {
        slot_of[k] = a.topk_ids[k];
        weights[k] = a.topk_weights[k];
      }
    }
  } else {
    if (grouped && warp < a.route.n_group) route_grouped_phase1(a.route, 0, smem + L.route, warp, lane);
    const T* x = static_cast<const T*>(a.hidden);
    for (int64_t c = tid - 32; c < H / 8; c += kThreads - 32) {
      unpack8<T>(*reinterpret_cast<const uint4*>(x + 8 * c), xs + 8 * c);
    }
    if (early_ok && t0 < static_cast<int64_t>(K) * I) {
      const volatile int* ready = early_s;
      const volatile int* routed = &routed_s;
      int e;
      while ((e = ready[t0 / I]) < 0 && *routed == 0) __nanosleep(32);
      if (e >= 0) {
        const G1Step<T> st = gemm1_step<T>(t0, static_cast<int64_t>(K) * I, a, expert_of, static_cast<const T*>(a.w13), I, N1, H, e);
        issue_gemm1(st, H / 8, a.gated, lane, detail::l2_evict_first_policy(), g, u);
        preloaded = st.wg;
      }
    }
  }
  // The local slots, in slot order: warp 0 compacts them, 32 slots a round, before the CTA's one
  // barrier (a second barrier cost about 0.1 us on the path to the first weight load).
  if (warp == 0) {
    __syncwarp();  // every lane's slot entry is in
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
      *static_cast<volatile int*>(&routed_s) = 1;
    }
  }
  __syncthreads();
  const int nl = n_local_s;
  const int64_t HB = (H + kG2Rows - 1) / kG2Rows, HC = (H + kCombineOutputs - 1) / kCombineOutputs;  // gemm2, combine blocks
  const int64_t n1 = static_cast<int64_t>(nl) * I, n2 = n1 + static_cast<int64_t>(nl) * HB, n_items = n2 + HC;

  pdl_wait();  // the sentinels (the reset kernel), and every write below
  pdl_launch_dependents();

  const uint64_t policy = detail::l2_evict_first_policy();
  const T* W13 = static_cast<const T*>(a.w13);
  const T* W2 = static_cast<const T*>(a.w2);
  const int64_t c1 = H / 8, c2 = I / 8;  // 16-byte chunks per row of W13 and of W2
  const int64_t G = static_cast<int64_t>(gridDim.x) * kWarpsPerCta;
  int64_t t = t0;

  // ---- gemm1 + activation. A warp's gemm1 work is a sequence of steps (item, pass of 32 x kG1Chunks
  // chunks); each step's loads go out chunk by chunk as the step before it consumes its registers, so
  // a warp keeps its loads in flight across items instead of draining at the end of each item (when
  // every warp drains at once, the DRAM queues empty between rounds).
  {
    G1Step cur = gemm1_step<T>(t, n1, a, expert_of, W13, I, N1, H);
    // The early loads are this step's when the slot table agrees (it always should; checked anyway).
    if (!kEarly || !(cur.valid && preloaded == cur.wg)) issue_gemm1(cur, c1, a.gated, lane, policy, g, u);
    float ag = 0.f, au = 0.f;
    while (cur.valid) {
      const bool last_pass = cur.c0 + 32 * kG1Chunks >= c1;
      const G1Step nxt = last_pass ? gemm1_step<T>(cur.t + G, n1, a, expert_of, W13, I, N1, H) : cur.next_pass(32 * kG1Chunks);
#pragma unroll
      for (int q = 0; q < kG1Chunks; ++q) {
        const int64_t c = cur.c0 + lane + 32 * q;
        if (c < c1) {
          ag = dot8<T>(g[q], xs + 8 * c, ag);
          au = dot8<T>(u[q], xs + 8 * c, au);
        }
        load_gemm1_chunk(nxt, q, c1, a.gated, lane, policy, g[q], u[q]);
      }
      if (last_pass) {
        ag = detail::warp_sum(ag);
        au = detail::warp_sum(au);
        if (lane == 0) {
          const int e = expert_of[cur.i];
          if (a.w13_bias) {
            ag += load_bias(a.w13_bias, a.w13_bias_type, static_cast<int64_t>(e) * N1 + cur.gate_row);
            if (a.gated) au += load_bias(a.w13_bias, a.w13_bias_type, static_cast<int64_t>(e) * N1 + cur.up_row);
          }
          store_relaxed(s.act + static_cast<int64_t>(cur.i) * I + cur.j, a.gated ? gated_act(a.activation, ag, au, a.alpha, a.limit) : plain_act(a.activation, ag));
        }
        ag = au = 0.f;
      }
      cur = nxt;
    }
    t = cur.t;
  }
  // ---- gemm2: item (slot i, rows h0..h0+kG2Rows-1 of W2[expert]). The weight loads go out first;
  // then the act chunks they meet. (Rolled as gemm1's, Qwen3-30B-A3B measured 28.2-30.1 us against
  // 27.2: docs/perf-notes.md, step 12.)
  T* out = static_cast<T*>(a.out);
  while (t < n2) {
    const int i = static_cast<int>((t - n1) / HB);
    const int64_t h0 = (t - n1) % HB * kG2Rows;
    const int e = expert_of[i];
    const float* act = s.act + static_cast<int64_t>(i) * I;
    float acc[kG2Rows] = {};
#pragma unroll 1
    for (int64_t c0 = 0; c0 < c2; c0 += 32 * kG2Chunks) {
      uint4 v[kG2Rows][kG2Chunks];
      load_w2_pass<T>(W2 + static_cast<int64_t>(e) * H * I, h0, H, I, c0, c2, lane, policy, v);
      // The act chunks: usually written at once (the walk runs a slot's gemm1 items before its gemm2
      // items).
      float4 x[kG2Chunks][2];
      wait_act_pass(act, c0, c2, lane, x);
      dot_w2_pass<T>(v, x, c0, c2, lane, acc);
    }
#pragma unroll
    for (int r = 0; r < kG2Rows; ++r) acc[r] = detail::warp_sum(acc[r]);
    if (lane < kG2Rows && h0 + lane < H) {
      float y = acc[0];
#pragma unroll
      for (int r = 1; r < kG2Rows; ++r)
        if (lane == r) y = acc[r];
      const int64_t h = h0 + lane;
      if (a.no_combine) {
        if (a.w2_bias) y += load_bias(a.w2_bias, a.w2_bias_type, static_cast<int64_t>(e) * H + h);
        out[static_cast<int64_t>(slot_of[i]) * H + h] = detail::from_float<T>(fmaf(factor[i], y, 0.f));
      } else {
        store_relaxed(s.y + static_cast<int64_t>(i) * H + h, y);
      }
    }
    t += G;
  }

  // ---- combine: item (kCombineOutputs outputs), a lane per output.
  while (t < n_items) {
    const int64_t h = (t - n2) * kCombineOutputs + lane;
    if (lane < kCombineOutputs && h < H) {
      if (a.no_combine) {
        // The rows of slots whose expert is not local are zeros (the local ones are gemm2's).
        for (int k = 0, i = 0; k < K; ++k) {
          if (i < nl && slot_of[i] == k) {
            ++i;
            continue;
          }
          out[static_cast<int64_t>(k) * H + h] = detail::from_float<T>(0.f);
        }
      } else {
        // The slots' values 8 at a time, all loads out before any check, then summed in slot order.
        float sum = 0.f;
        for (int i0 = 0; i0 < nl; i0 += 8) {
          int row[8];
#pragma unroll
          for (int u = 0; u < 8; ++u) row[u] = i0 + u < nl ? i0 + u : -1;
          float y[8];
          wait_column8(s.y + h, row, H, y);
#pragma unroll
          for (int u = 0; u < 8; ++u) {
            if (i0 + u >= nl) continue;
            float v = y[u];
            if (a.w2_bias) v += load_bias(a.w2_bias, a.w2_bias_type, static_cast<int64_t>(expert_of[i0 + u]) * H + h);
            sum = fmaf(factor[i0 + u], v, sum);
          }
        }
        out[h] = detail::from_float<T>(sum);
      }
    }
    t += G;
  }
}

// gemm2's rows per item, 4 or 6: the one that gives the busiest warp the fewest rows, counting K
// local slots (Expert parallelism hits fewer; the walk deals the items round robin). Measured on the
// H200 with the act loads one chunk at a time (call 11): GPT-OSS-120B T=1 57.4 us with 6 rows against
// 61.5 with 4 (2,880 items of 4 rows on 2,112 warps give some warps two); Qwen3-30B-A3B 29.0 with 4
// against 31.3 with 6 (4,096 items of 4 rows: two per warp, evenly).
int gemm2_rows_per_item(int top_k, int64_t hidden, int64_t warps) {
  return gemm2_busiest_rows(top_k, hidden, 6, warps) < gemm2_busiest_rows(top_k, hidden, 4, warps) ? 6 : 4;
}

template <typename T>
Status launch_typed(const DecodeLayerArgs& a, const TokenScratch& s, const TokenSmemLayout& L, void* stream) {
  const int rows = gemm2_rows_per_item(a.route.top_k, a.hidden_size, std::max(a.sm_count, 1) * kWarpsPerCta);
  auto kernel = rows == 6 ? decode_token_kernel<T, 6, 3> : decode_token_kernel<T, 4, 3>;
  MOEKIT_RETURN_IF_ERROR(allow_dynamic_smem(kernel, static_cast<size_t>(L.bytes)));
  // One CTA per SM (the walk needs every CTA resident; more would only wait for a slot).
  const LaunchShape shape{dim3(static_cast<unsigned>(std::max(a.sm_count, 1))), dim3(kThreads), static_cast<size_t>(L.bytes)};
  return launch_kernel("decode_token_kernel", kernel, shape, stream, a, s, L);
}

}  // namespace

size_t decode_token_scratch_bytes(int top_k, int64_t hidden, int64_t inter) { return static_cast<size_t>(top_k * (inter + hidden)) * 4; }

int64_t decode_token_smem_bytes(int experts, int n_group, int top_k, int64_t hidden) {
  return token_smem_layout(hidden, top_k, route_smem_per_warp(experts, n_group)).bytes;
}

Status launch_decode_token(const DecodeLayerArgs& a, void* stream) {
  const int K = a.route.top_k;
  if (a.route.tokens != 1)
    return Status::Unsupported("decode token kernel: T=" + std::to_string(a.route.tokens) + " (it runs exactly one token)");
  if (K > kDecodeTokenMaxSlots)
    return Status::Unsupported("decode token kernel: top_k=" + std::to_string(K) + " > " + std::to_string(kDecodeTokenMaxSlots));
  const size_t route_bytes = a.route_on_device ? route_smem_per_warp(a.route.experts, a.route.n_group) : 0;
  const TokenSmemLayout L = token_smem_layout(a.hidden_size, K, route_bytes);
  MOEKIT_RETURN_IF_ERROR(gemv::check_gemv_launch("decode token kernel", a, decode_token_scratch_bytes(K, a.hidden_size, a.inter), L.bytes,
                                                 "hidden row, slot tables, routing"));
  float* f = static_cast<float*>(a.scratch);
  const int64_t words = static_cast<int64_t>(K) * (a.inter + a.hidden_size);  // a multiple of 8: I and H are
  const TokenScratch s{f, f + static_cast<int64_t>(K) * a.inter, words};
  MOEKIT_RETURN_IF_ERROR(gemv::launch_sentinel_reset(s, a.sm_count, stream));
  if (a.type == Elem::kBF16) return launch_typed<__nv_bfloat16>(a, s, L, stream);
  if (a.type == Elem::kF16) return launch_typed<__half>(a, s, L, stream);
  return Status::Unsupported("decode token kernel: the CUDA kernels take f16 or bf16 activations");
}

namespace gemv {
namespace {
constexpr int kResetThreads = 256;

__global__ void __launch_bounds__(kResetThreads) sentinel_reset_kernel(TokenScratch s) {
  pdl_enter();  // the previous call's kernel may still read act and y
  uint4* w = reinterpret_cast<uint4*>(s.act);  // act and y are contiguous, 16-byte aligned
  const uint4 u = make_uint4(kUnwritten, kUnwritten, kUnwritten, kUnwritten);
  for (int64_t i = blockIdx.x * kResetThreads + threadIdx.x; i < s.words / 4; i += static_cast<int64_t>(gridDim.x) * kResetThreads) w[i] = u;
}
}  // namespace

Status launch_sentinel_reset(const TokenScratch& s, int sm_count, void* stream) {
  const int64_t ctas = std::clamp<int64_t>(ceil_div(s.words / 4, kResetThreads), 1, std::max(sm_count, 1));
  return launch_kernel("sentinel_reset_kernel", sentinel_reset_kernel, {dim3(static_cast<unsigned>(ctas)), dim3(kResetThreads), 0}, stream, s);
}
}  // namespace gemv

}  // namespace moekit::cuda::moe
