// The whole MoE layer for a few tokens (T = 2 .. kDecodeTokensMax) as weight-streaming GEMVs, in two
// launches, each routed expert's weights streamed once for all the tokens routed to it:
//
//   sentinel_reset_kernel  (decode_gemv.cuh) fills the scratch's float rows with "not written yet".
//   decode_tokens_kernel   one CTA per SM, 16 warps:
//     routing   every CTA routes the T tokens itself (warp t routes token t) while the other warps
//               load the T hidden rows into shared memory; CTA 0 alone stores the ids and weights.
//     groups    warp 0 lists the pairs (token, slot) whose expert is local, grouped by expert in the
//               order of each expert's first slot (token-major), at most kMaxT pairs a group: a
//               routing picks an expert at most once per token, so a group is one expert's tokens;
//               PreRouted ids that repeat an expert within a token give it several groups.
//     gemm1     item (group g, output j): the gate and up rows j of g's expert, streamed once,
//               dotted with the hidden row of each of g's pairs; bias and activation; act[pair][j].
//     gemm2     item (group g, 4 or 8 rows h: gemm2_rows_per_item): those rows of W2, streamed once,
//               dotted with act[pair] for each pair; y[pair][h] (under no_combine: scaled, plus
//               bias, into out[slot][h]).
//     combine   item (token t, 4 outputs h): out[t][h] = the sum over t's local slots, in slot
//               order, of factor * (y[pair] + bias): no atomics, bitwise deterministic.
//
// The walk, the waits and why they cannot deadlock are the one-token kernel's (decode_token.cu):
// warp w of G takes items w, w + G, ... in the order gemm1, gemm2, combine; a consumer re-reads the
// values it needs until none is the sentinel; one CTA per SM, so every CTA is resident.
//
// Why: from T = 2 the stage pipeline runs the layer as six kernels, and at T = 8 on Qwen3-30B-A3B
// (53 experts hit, 1-2 tokens each) its stream GEMMs move the weights at 3.2-3.7 TB/s between a
// routing, an expand and a finalize launch (docs/perf-notes.md, step 21). Here the weight stream of
// both GEMMs runs in one kernel without a gap, as at T = 1.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda/common/device_utils.cuh"
#include "cuda/moe/activation.cuh"
#include "cuda/moe/decode_gemv.cuh"
#include "cuda/moe/expert_bias.cuh"
#include "cuda/moe/grouped_gemm.cuh"
#include "cuda/moe/launch_utils.cuh"
#include "cuda/moe/moe_launch.h"
#include "cuda/moe/pdl.cuh"
#include "cuda/moe/routing_device.cuh"

namespace moekit::cuda::moe {
namespace {

using namespace gemv;  // NOLINT: the GEMV helpers (decode_gemv.cuh)

constexpr int kThreads = 512;
constexpr int kWarpsPerCta = kThreads / 32;
constexpr int kCombineOutputs = 4;  // outputs per combine item (a lane each)

// Dynamic shared memory: the hidden rows ([T][H], in float where that fits kDecodeTokenSmemBudget,
// else in the activation dtype: chosen_tokens_layout), the slot and pair tables (S = T*K entries each;
// groups at most S), then one routing scratch per routing warp.
struct TokensSmemLayout {
  int64_t x, ids, wts, loc, lead, pos, gidx, pair_slot, pair_x, pair_factor, pair_expert, pair_of_slot, g_expert, g_begin, route, route_each, bytes;
  int x_bytes;  // the hidden rows' element size: 4 (float) or 2 (the activation dtype)
};
__host__ __device__ inline TokensSmemLayout tokens_smem_layout(int64_t tokens, int top_k, int64_t hidden, size_t route_bytes, int x_bytes) {
  TokensSmemLayout l;
  l.x_bytes = x_bytes;
  const int64_t S = tokens * top_k, table = (S * 4 + 15) / 16 * 16;
  l.x = 0;
  l.ids = (tokens * hidden * x_bytes + 15) / 16 * 16;
  l.wts = l.ids + table;
  l.loc = l.wts + table;
  l.lead = l.loc + table;
  l.pos = l.lead + table;
  l.gidx = l.pos + table;
  l.pair_slot = l.gidx + table;
  l.pair_x = l.pair_slot + table;
  l.pair_factor = l.pair_x + table;
  l.pair_expert = l.pair_factor + table;
  l.pair_of_slot = l.pair_expert + table;
  l.g_expert = l.pair_of_slot + table;
  l.g_begin = l.g_expert + table;
  l.route = l.g_begin + ((S + 1) * 4 + 15) / 16 * 16;
  l.route_each = static_cast<int64_t>(route_bytes);  // a multiple of 8 (route_smem_per_warp)
  l.bytes = l.route + tokens * l.route_each;
  return l;
}

// The layout the kernel runs: the hidden rows in float (no conversion in gemm1's loop) where that fits
// kDecodeTokenSmemBudget, else in the activation dtype (DeepSeek-V3's H = 7168 from T = 5).
inline TokensSmemLayout chosen_tokens_layout(int64_t tokens, int top_k, int64_t hidden, size_t route_bytes) {
  const TokensSmemLayout in_float = tokens_smem_layout(tokens, top_k, hidden, route_bytes, 4);
  return in_float.bytes <= kDecodeTokenSmemBudget ? in_float : tokens_smem_layout(tokens, top_k, hidden, route_bytes, 2);
}

// Chunk c of a hidden row in shared memory (float, or the activation dtype T), as 8 floats.
template <typename T, typename XS>
__device__ __forceinline__ void load_x8(const XS* row, int64_t c, float4& x0, float4& x1) {
  if constexpr (std::is_same_v<XS, float>) {
    x0 = reinterpret_cast<const float4*>(row + 8 * c)[0];
    x1 = reinterpret_cast<const float4*>(row + 8 * c)[1];
  } else {
    float f[8];
    unpack8<T>(*reinterpret_cast<const uint4*>(row + 8 * c), f);
    x0 = make_float4(f[0], f[1], f[2], f[3]);
    x1 = make_float4(f[4], f[5], f[6], f[7]);
  }
}

// Warp 0: the groups of pairs from the routed ids (see the file comment). S <= kDecodeTokensMaxSlots.
template <int kMaxT>
__device__ void list_groups(const DecodeLayerArgs& a, int S, unsigned char* smem, const TokensSmemLayout& L, int lane, int* n_groups) {
  const int* ids = reinterpret_cast<const int*>(smem + L.ids);
  const float* wts = reinterpret_cast<const float*>(smem + L.wts);
  int* loc = reinterpret_cast<int*>(smem + L.loc);
  int* lead = reinterpret_cast<int*>(smem + L.lead);
  int* pos = reinterpret_cast<int*>(smem + L.pos);
  int* gidx = reinterpret_cast<int*>(smem + L.gidx);
  int* pair_slot = reinterpret_cast<int*>(smem + L.pair_slot);
  int* pair_x = reinterpret_cast<int*>(smem + L.pair_x);
  float* pair_factor = reinterpret_cast<float*>(smem + L.pair_factor);
  int* pair_expert = reinterpret_cast<int*>(smem + L.pair_expert);
  int* pair_of_slot = reinterpret_cast<int*>(smem + L.pair_of_slot);
  int* g_expert = reinterpret_cast<int*>(smem + L.g_expert);
  int* g_begin = reinterpret_cast<int*>(smem + L.g_begin);
  for (int s = lane; s < S; s += 32) loc[s] = local_expert_of(ids[s], a.route.experts, a.expert_map, a.local_begin, a.local_experts);
  __syncwarp();
  // Each slot's rank among the earlier slots of its expert; its group's leader is the slot of rank
  // rank - rank % kMaxT, and the leader holds the group's size.
  for (int s = lane; s < S; s += 32) {
    const int l = loc[s];
    if (l < 0) {
      lead[s] = -1;
      continue;
    }
    int rank = 0, count = 0;
    for (int s2 = 0; s2 < S; ++s2) {
      const bool same = loc[s2] == l;
      rank += same && s2 < s;
      count += same;
    }
    const int lead_rank = rank - rank % kMaxT;
    int leader = s;
    for (int s2 = 0, seen = 0; s2 < S; ++s2) {
      if (loc[s2] != l) continue;
      if (seen == lead_rank) {
        leader = s2;
        break;
      }
      ++seen;
    }
    lead[s] = leader;
    pos[s] = rank - lead_rank;
    if (leader == s) gidx[s] = min(kMaxT, count - lead_rank);  // the group's size, until replaced below
  }
  __syncwarp();
  // Group numbers and first pairs: the leaders in slot order, 32 a round.
  int groups = 0, pairs = 0;
  for (int s0 = 0; s0 < S; s0 += 32) {
    const int s = s0 + lane;
    const bool is_lead = s < S && lead[s] == s;
    const int size = is_lead ? gidx[s] : 0;
    int inclusive = size;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xFFFFFFFFu, inclusive, o);
      if (lane >= o) inclusive += v;
    }
    const unsigned leads = __ballot_sync(0xFFFFFFFFu, is_lead);
    if (is_lead) {
      const int g = groups + __popc(leads & ((1u << lane) - 1));
      gidx[s] = g;
      g_expert[g] = loc[s];
      g_begin[g] = pairs + inclusive - size;
    }
    groups += __popc(leads);
    pairs += __shfl_sync(0xFFFFFFFFu, inclusive, 31);
  }
  if (lane == 0) {
    g_begin[groups] = pairs;
    *n_groups = groups;
  }
  __syncwarp();
  for (int s = lane; s < S; s += 32) {
    if (lead[s] < 0) {
      pair_of_slot[s] = -1;
      continue;
    }
    const int p = g_begin[gidx[lead[s]]] + pos[s];
    pair_slot[p] = s;
    pair_x[p] = s / a.route.top_k * static_cast<int>(a.hidden_size);
    pair_factor[p] = a.scale * wts[s];
    pair_expert[p] = loc[s];
    pair_of_slot[s] = p;
  }
}

template <typename T, typename XS, int kMaxT, int kG2Rows, int kG2Chunks>
__global__ void __launch_bounds__(kThreads, 1) decode_tokens_kernel(DecodeLayerArgs a, TokenScratch s, TokensSmemLayout L) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ int n_groups_s;
  XS* xs = reinterpret_cast<XS*>(smem + L.x);
  int* ids = reinterpret_cast<int*>(smem + L.ids);
  float* wts = reinterpret_cast<float*>(smem + L.wts);
  const int* pair_slot = reinterpret_cast<const int*>(smem + L.pair_slot);
  const int* pair_x = reinterpret_cast<const int*>(smem + L.pair_x);  // a pair's hidden row in xs
  const float* pair_factor = reinterpret_cast<const float*>(smem + L.pair_factor);
  const int* pair_expert = reinterpret_cast<const int*>(smem + L.pair_expert);
  const int* pair_of_slot = reinterpret_cast<const int*>(smem + L.pair_of_slot);
  const int* g_expert = reinterpret_cast<const int*>(smem + L.g_expert);
  const int* g_begin = reinterpret_cast<const int*>(smem + L.g_begin);
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int K = a.route.top_k;
  const int Tn = static_cast<int>(a.route.tokens), S = Tn * K;
  const int64_t H = a.hidden_size, I = a.inter, N1 = a.gated ? 2 * I : I;

  // ---- routing and the hidden rows: both read only the layer's inputs (pdl.cuh's contract: the
  // caller's kernel, two launches back, has finished), so neither waits for the reset kernel.
  if (warp < Tn) {
    if (a.route_on_device) {
      route_token_warp(a.route, warp, smem + L.route + warp * L.route_each, lane, blockIdx.x == 0, ids + warp * K, wts + warp * K);
    } else {
      for (int k = lane; k < K; k += 32) {
        ids[warp * K + k] = a.topk_ids[warp * K + k];
        wts[warp * K + k] = a.topk_weights[warp * K + k];
      }
    }
  } else {
    const T* x = static_cast<const T*>(a.hidden);
    const int64_t chunks = static_cast<int64_t>(Tn) * H / 8;  // H is a multiple of 8
    for (int64_t c = tid - 32 * Tn; c < chunks; c += kThreads - 32 * Tn) {
      const uint4 v = *reinterpret_cast<const uint4*>(x + 8 * c);
      if constexpr (std::is_same_v<XS, float>) unpack8<T>(v, xs + 8 * c);
      else *reinterpret_cast<uint4*>(xs + 8 * c) = v;
    }
  }
  __syncthreads();
  if (warp == 0) list_groups<kMaxT>(a, S, smem, L, lane, &n_groups_s);
  __syncthreads();
  const int ng = n_groups_s;
  const int64_t HB = (H + kG2Rows - 1) / kG2Rows, HC = (H + kCombineOutputs - 1) / kCombineOutputs;  // gemm2, combine blocks
  const int64_t n1 = static_cast<int64_t>(ng) * I, n2 = n1 + static_cast<int64_t>(ng) * HB, n_items = n2 + static_cast<int64_t>(Tn) * HC;

  pdl_wait();  // the sentinels (the reset kernel), and every write below
  pdl_launch_dependents();

  const uint64_t policy = detail::l2_evict_first_policy();
  const T* W13 = static_cast<const T*>(a.w13);
  const T* W2 = static_cast<const T*>(a.w2);
  const int64_t c1 = H / 8, c2 = I / 8;  // 16-byte chunks per row of W13 and of W2
  const int64_t G = static_cast<int64_t>(gridDim.x) * kWarpsPerCta;
  int64_t t = static_cast<int64_t>(blockIdx.x) * kWarpsPerCta + warp;

  // ---- gemm1 + activation: the one-token kernel's rolled loads (each step's loads go out as the
  // step before it consumes its registers), each chunk dotted with every pair's hidden row.
  {
    G1Step cur = gemm1_step<T>(t, n1, a, g_expert, W13, I, N1, H);
    uint4 g[kG1Chunks], u[kG1Chunks];
    issue_gemm1(cur, c1, a.gated, lane, policy, g, u);
    float ag[kMaxT], au[kMaxT];
    const int* xrow = nullptr;  // the group's pairs' hidden rows in xs (pair_x + base: read per use, not held in registers)
    int np = 0, base = 0;
    auto pairs_of = [&](const G1Step<T>& st) {
      if (!st.valid) return;
      base = g_begin[st.i];
      np = g_begin[st.i + 1] - base;
      xrow = pair_x + base;
    };
    pairs_of(cur);
#pragma unroll
    for (int pp = 0; pp < kMaxT; ++pp) ag[pp] = au[pp] = 0.f;
    while (cur.valid) {
      const bool last_pass = cur.c0 + 32 * kG1Chunks >= c1;
      const G1Step nxt = last_pass ? gemm1_step<T>(cur.t + G, n1, a, g_expert, W13, I, N1, H) : cur.next_pass(32 * kG1Chunks);
#pragma unroll
      for (int q = 0; q < kG1Chunks; ++q) {
        const int64_t c = cur.c0 + lane + 32 * q;
        if (c < c1) {
#pragma unroll
          for (int pp = 0; pp < kMaxT; ++pp) {
            if (pp < np) {
              float4 x0, x1;
              load_x8<T>(xs + xrow[pp], c, x0, x1);
              ag[pp] = dot8<T>(g[q], x0, x1, ag[pp]);
              if (a.gated) au[pp] = dot8<T>(u[q], x0, x1, au[pp]);
            }
          }
        }
        load_gemm1_chunk(nxt, q, c1, a.gated, lane, policy, g[q], u[q]);
      }
      if (last_pass) {
        const int e = g_expert[cur.i];
        float bg = 0.f, bu = 0.f;
        if (a.w13_bias && lane == 0) {
          bg = load_bias(a.w13_bias, a.w13_bias_type, static_cast<int64_t>(e) * N1 + cur.gate_row);
          if (a.gated) bu = load_bias(a.w13_bias, a.w13_bias_type, static_cast<int64_t>(e) * N1 + cur.up_row);
        }
#pragma unroll
        for (int pp = 0; pp < kMaxT; ++pp) {
          if (pp < np) {
            const float sg = detail::warp_sum(ag[pp]) + bg;
            const float su = a.gated ? detail::warp_sum(au[pp]) + bu : 0.f;
            if (lane == 0)
              store_relaxed(s.act + static_cast<int64_t>(base + pp) * I + cur.j, a.gated ? gated_act(a.activation, sg, su, a.alpha, a.limit) : plain_act(a.activation, sg));
          }
          ag[pp] = au[pp] = 0.f;
        }
        pairs_of(nxt);
      }
      cur = nxt;
    }
    t = cur.t;
  }

  // ---- gemm2: item (group gi, rows h0..h0+kG2Rows-1 of W2[expert]). The weight loads go out first,
  // then each pair's act chunks they meet.
  T* out = static_cast<T*>(a.out);
  while (t < n2) {
    const int gi = static_cast<int>((t - n1) / HB);
    const int64_t h0 = (t - n1) % HB * kG2Rows;
    const int e = g_expert[gi], base = g_begin[gi], np = g_begin[gi + 1] - base;
    float acc[kMaxT][kG2Rows];
#pragma unroll
    for (int pp = 0; pp < kMaxT; ++pp)
#pragma unroll
      for (int r = 0; r < kG2Rows; ++r) acc[pp][r] = 0.f;
#pragma unroll 1
    for (int64_t c0 = 0; c0 < c2; c0 += 32 * kG2Chunks) {
      uint4 v[kG2Rows][kG2Chunks];
      load_w2_pass<T>(W2 + static_cast<int64_t>(e) * H * I, h0, H, I, c0, c2, lane, policy, v);
#pragma unroll
      for (int pp = 0; pp < kMaxT; ++pp) {
        if (pp >= np) continue;
        float4 x[kG2Chunks][2];
        wait_act_pass(s.act + static_cast<int64_t>(base + pp) * I, c0, c2, lane, x);
        dot_w2_pass<T>(v, x, c0, c2, lane, acc[pp]);
      }
    }
#pragma unroll
    for (int pp = 0; pp < kMaxT; ++pp) {
      if (pp >= np) continue;
      float y = 0.f;
#pragma unroll
      for (int r = 0; r < kG2Rows; ++r) {
        const float v = detail::warp_sum(acc[pp][r]);
        if (lane == r) y = v;
      }
      const int64_t h = h0 + lane;
      if (lane < kG2Rows && h < H) {
        if (a.no_combine) {
          if (a.w2_bias) y += load_bias(a.w2_bias, a.w2_bias_type, static_cast<int64_t>(e) * H + h);
          out[static_cast<int64_t>(pair_slot[base + pp]) * H + h] = detail::from_float<T>(fmaf(pair_factor[base + pp], y, 0.f));
        } else {
          store_relaxed(s.y + static_cast<int64_t>(base + pp) * H + h, y);
        }
      }
    }
    t += G;
  }

  // ---- combine: item (token tk, kCombineOutputs outputs), a lane per output.
  while (t < n_items) {
    const int tk = static_cast<int>((t - n2) / HC);
    const int64_t h = (t - n2) % HC * kCombineOutputs + lane;
    if (lane < kCombineOutputs && h < H) {
      const int* slot_pair = pair_of_slot + tk * K;
      if (a.no_combine) {
        // The rows of slots whose expert is not local are zeros (the local ones are gemm2's).
        for (int k = 0; k < K; ++k)
          if (slot_pair[k] < 0) out[(static_cast<int64_t>(tk) * K + k) * H + h] = detail::from_float<T>(0.f);
      } else {
        // The slots' values 8 at a time, all loads out before any check, then summed in slot order.
        float sum = 0.f;
        for (int k0 = 0; k0 < K; k0 += 8) {
          int p[8];
          float y[8];
#pragma unroll
          for (int w = 0; w < 8; ++w) p[w] = k0 + w < K ? slot_pair[k0 + w] : -1;
          wait_column8(s.y + h, p, H, y);
#pragma unroll
          for (int w = 0; w < 8; ++w) {
            if (p[w] < 0) continue;
            float v = y[w];
            if (a.w2_bias) v += load_bias(a.w2_bias, a.w2_bias_type, static_cast<int64_t>(pair_expert[p[w]]) * H + h);
            sum = fmaf(pair_factor[p[w]], v, sum);
          }
        }
        out[static_cast<int64_t>(tk) * H + h] = detail::from_float<T>(sum);
      }
    }
    t += G;
  }
}

// gemm2's W2 rows per item, 4 or 8: 8 unless its busiest warp streams over 1.25 times the rows of
// 4's, counting the groups the routing is expected to give (each local expert hit with probability
// 1 - (1 - K/E)^T). Measured on the H200 (docs/perf-notes.md, step 21, calls 5-7), 8 rows against
// 4: Qwen3-30B-A3B T = 3..8 -3..-5%, DeepSeek-V3 T = 2 and 4 -5% and -4%, GPT-OSS-120B T = 4 and 8
// -1.5% and -0.6%, Mixtral-8x7B T=8 -8%; slower where 8-row items leave warps idle: Mixtral T = 3
// and 4 (about 5 groups: 2,560 items on 2,112 warps, the busiest warp 16 rows against 12; +5.5% and
// +1.3%), and at GPT-OSS T=3 (+4%, equal rows). A strict comparison (call 6) gave Qwen3 T = 5 and 8
// 4 rows for 10% fewer rows on the busiest warp, and lost the 8-row gain there.
int gemm2_rows_per_item(const DecodeLayerArgs& a, int64_t warps) {
  const double K = a.route.top_k, E = std::max(a.route.experts, 1);
  const double hit = 1.0 - std::pow(std::max(0.0, 1.0 - K / E), static_cast<double>(a.route.tokens));
  const int64_t groups = std::max<int64_t>(1, std::llround(a.local_experts * hit));
  return 4 * gemm2_busiest_rows(groups, a.hidden_size, 8, warps) <= 5 * gemm2_busiest_rows(groups, a.hidden_size, 4, warps) ? 8 : 4;
}

// The most pairs a group holds (the accumulators live in registers): 2 at T = 2, else 4. A group is
// one expert's tokens, up to kMaxT of them; an expert with more takes several groups. Step 21 of
// docs/perf-notes.md: groups of up to 8 (their kernel spilled registers) ran T = 5..8 slower than
// groups of up to 4 do. gemm2's loads in flight per lane: 12 chunks at 4 rows, 16 or 8 at 8 rows
// (8 x 2 spilled with groups of 4).
template <typename T, typename XS>
Status launch_typed(const DecodeLayerArgs& a, const TokenScratch& s, const TokensSmemLayout& L, void* stream) {
  const bool rows8 = gemm2_rows_per_item(a, static_cast<int64_t>(std::max(a.sm_count, 1)) * kWarpsPerCta) == 8;
  auto kernel = a.route.tokens <= 2 ? (rows8 ? decode_tokens_kernel<T, XS, 2, 8, 2> : decode_tokens_kernel<T, XS, 2, 4, 3>)
                                    : (rows8 ? decode_tokens_kernel<T, XS, 4, 8, 1> : decode_tokens_kernel<T, XS, 4, 4, 3>);
  MOEKIT_RETURN_IF_ERROR(allow_dynamic_smem(kernel, static_cast<size_t>(L.bytes)));
  const LaunchShape shape{dim3(static_cast<unsigned>(std::max(a.sm_count, 1))), dim3(kThreads), static_cast<size_t>(L.bytes)};
  return launch_kernel("decode_tokens_kernel", kernel, shape, stream, a, s, L);
}

}  // namespace

size_t decode_tokens_scratch_bytes(int64_t tokens, int top_k, int64_t hidden, int64_t inter) {
  return static_cast<size_t>(tokens * top_k * (inter + hidden)) * 4;
}

int64_t decode_tokens_smem_bytes(int64_t tokens, int experts, int n_group, int top_k, int64_t hidden) {
  const size_t route_bytes = route_smem_per_warp(experts, n_group);
  return chosen_tokens_layout(tokens, top_k, hidden, route_bytes).bytes;
}

Status launch_decode_tokens(const DecodeLayerArgs& a, void* stream) {
  const int K = a.route.top_k;
  const int64_t T_ = a.route.tokens;
  if (T_ < 2 || T_ > kDecodeTokensMax)
    return Status::Unsupported("decode tokens kernel: T=" + std::to_string(T_) + " (it runs 2.." + std::to_string(kDecodeTokensMax) + " tokens)");
  if (T_ * K > kDecodeTokensMaxSlots)
    return Status::Unsupported("decode tokens kernel: T*top_k=" + std::to_string(T_ * K) + " > " + std::to_string(kDecodeTokensMaxSlots));
  if (a.hidden_size % 8 != 0 || a.inter % 8 != 0)
    return Status::Unsupported("decode tokens kernel: H=" + std::to_string(a.hidden_size) + ", I=" + std::to_string(a.inter) +
                               ": rows are read 16 bytes at a time (multiples of 8)");
  const size_t route_bytes = a.route_on_device ? route_smem_per_warp(a.route.experts, a.route.n_group) : 0;
  const TokensSmemLayout L = chosen_tokens_layout(T_, K, a.hidden_size, route_bytes);
  MOEKIT_RETURN_IF_ERROR(gemv::check_gemv_launch("decode tokens kernel", a, decode_tokens_scratch_bytes(T_, K, a.hidden_size, a.inter), L.bytes,
                                                 "hidden rows, slot tables, routing"));
  float* f = static_cast<float*>(a.scratch);
  const int64_t slots = T_ * K;
  const TokenScratch s{f, f + slots * a.inter, slots * (a.inter + a.hidden_size)};  // act then y
  MOEKIT_RETURN_IF_ERROR(gemv::launch_sentinel_reset(s, a.sm_count, stream));
  if (a.type == Elem::kBF16) return L.x_bytes == 4 ? launch_typed<__nv_bfloat16, float>(a, s, L, stream) : launch_typed<__nv_bfloat16, __nv_bfloat16>(a, s, L, stream);
  if (a.type == Elem::kF16) return L.x_bytes == 4 ? launch_typed<__half, float>(a, s, L, stream) : launch_typed<__half, __half>(a, s, L, stream);
  return Status::Unsupported("decode tokens kernel: the CUDA kernels take f16 or bf16 activations");
}

}  // namespace moekit::cuda::moe
