// The decode layer's first launch (decode_layer.cuh): one CTA routes the tokens, lists the active local
// experts with their routed rows and zeroes the layer kernel's counters; then the entry point that
// launches both kernels.
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <string>

#include "cuda/moe/decode_layer.cuh"
#include "cuda/moe/launch_utils.cuh"
#include "cuda/moe/pdl.cuh"
#include "cuda/moe/routing_device.cuh"

namespace moekit::cuda::moe {

Status launch_decode_gemms_bf16(const DecodeLayerArgs& a, const DecodeScratch& s, void* stream);
Status launch_decode_gemms_f16(const DecodeLayerArgs& a, const DecodeScratch& s, void* stream);

namespace {

constexpr int kPlanThreads = 256;
constexpr int kPlanItems = 4;  // slots per thread in the scan
constexpr int kSlotBits = 10;  // a slot index below kDecodeMaxSlots
static_assert(kPlanThreads * kPlanItems == kDecodeMaxSlots && (1 << kSlotBits) == kDecodeMaxSlots);
constexpr int kMaxRouteWarps = kPlanThreads / 32;
constexpr uint32_t kRemote = 0xFFFFFFFFu;  // the key of a slot whose expert is not local: sorts last

using PlanScan = cub::BlockScan<int, kPlanThreads>;

struct PlanSmem {
  uint32_t keys[kDecodeMaxSlots];    // (local expert << kSlotBits) | slot, in slot order
  uint32_t sorted[kDecodeMaxSlots];  // the local ones, ascending: rows grouped by expert, slot order inside
  typename PlanScan::TempStorage scan;
  int local_rows;
};

__global__ void __launch_bounds__(kPlanThreads) decode_plan_kernel(DecodeLayerArgs a, DecodeScratch s, int route_warps, size_t per_warp) {
  extern __shared__ __align__(16) unsigned char route_smem[];
  __shared__ PlanSmem p;
  pdl_enter();
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int T = static_cast<int>(a.route.tokens), K = a.route.top_k, n = T * K;
  for (int64_t i = tid; i < s.counter_words; i += kPlanThreads) s.done1[i] = 0;
  if (tid == 0) p.local_rows = 0;
  if (a.route_on_device && warp < route_warps)
    for (int t = warp; t < T; t += route_warps) route_token_warp(a.route, t, route_smem + warp * per_warp, lane);
  __syncthreads();  // the routing's global writes are visible to the whole block

  int mine = 0;
  for (int f = tid; f < n; f += kPlanThreads) {
    const int l = local_expert_of(a.topk_ids[f], a.route.experts, a.expert_map, a.local_begin, a.local_experts);
    p.keys[f] = l >= 0 ? (static_cast<uint32_t>(l) << kSlotBits) | static_cast<uint32_t>(f) : kRemote;
    s.row_of_slot[f] = -1;
    mine += l >= 0;
  }
  if (mine > 0) atomicAdd(&p.local_rows, mine);
  __syncthreads();
  // The keys are unique, so a key's place is the number of keys below it (n is small).
  for (int f = tid; f < n; f += kPlanThreads) {
    const uint32_t key = p.keys[f];
    if (key == kRemote) continue;
    int rank = 0;
    for (int j = 0; j < n; ++j) rank += p.keys[j] < key;
    p.sorted[rank] = key;
  }
  __syncthreads();
  const int rows = p.local_rows;
  // Active experts in ascending order: a row starts one where its expert differs from the row before.
  int starts[kPlanItems], index[kPlanItems];
#pragma unroll
  for (int j = 0; j < kPlanItems; ++j) {
    const int i = tid * kPlanItems + j;
    starts[j] = i < rows && (i == 0 || (p.sorted[i] >> kSlotBits) != (p.sorted[i - 1] >> kSlotBits));
  }
  int active = 0;
  PlanScan(p.scan).ExclusiveSum(starts, index, active);
#pragma unroll
  for (int j = 0; j < kPlanItems; ++j) {
    const int i = tid * kPlanItems + j;
    if (i >= rows) continue;
    const int slot = static_cast<int>(p.sorted[i] & ((1u << kSlotBits) - 1));
    s.slot_of_row[i] = slot;
    s.row_of_slot[slot] = i;
    if (starts[j]) {
      s.expert_of_active[index[j]] = static_cast<int>(p.sorted[i] >> kSlotBits);
      s.active_offsets[index[j]] = i;
    }
  }
  if (tid == 0) {
    s.active_offsets[active] = rows;
    *s.n_active = active;
  }
}

}  // namespace

size_t decode_layer_scratch_bytes(int64_t tokens, int top_k, int64_t hidden, int split) {
  return static_cast<size_t>(decode_layout(tokens, top_k, hidden, split).words()) * 4;
}

int decode_default_split(int64_t hidden, int64_t inter) {
  const int64_t kt1 = ceil_div(hidden, kDecodeKTile), kt2 = ceil_div(inter, kDecodeKTile);
  const int64_t split = std::clamp<int64_t>(kt2 / std::max<int64_t>(kt1, 1), 1, kDecodeMaxSplit);
  return static_cast<int>(split_without_empty_ranks(kt2, split));
}

bool decode_split_is_legal(int64_t inter, int split) {
  return split >= 1 && split <= kDecodeMaxSplit && split_leaves_no_empty_rank(ceil_div(inter, kDecodeKTile), split);
}

Status launch_decode_layer(const DecodeLayerArgs& a, void* stream) {
  const int64_t T = a.route.tokens, slots = T * a.route.top_k;
  if (T == 0) return Status::Ok();
  if (T > kDecodeMaxTokens || slots > kDecodeMaxSlots)
    return Status::Unsupported("decode layer: T=" + std::to_string(T) + ", T*K=" + std::to_string(slots) + " (at most " +
                               std::to_string(kDecodeMaxTokens) + " tokens and " + std::to_string(kDecodeMaxSlots) + " slots)");
  if (!decode_split_is_legal(a.inter, a.split))
    return Status::InvalidArgument("decode layer: split=" + std::to_string(a.split) + " leaves a rank without k tiles (I=" +
                                   std::to_string(a.inter) + ")");
  const DecodeLayout layout = decode_layout(T, a.route.top_k, a.hidden_size, a.split);
  if (a.scratch_bytes < static_cast<size_t>(layout.words()) * 4)
    return Status::Internal("decode layer: " + std::to_string(a.scratch_bytes) + " scratch bytes given, " + std::to_string(layout.words() * 4) + " needed");
  const DecodeScratch s = DecodeScratch::carve(a.scratch, layout);

  size_t per_warp = 0;
  int warps = 0;
  if (a.route_on_device) {
    per_warp = route_smem_per_warp(a.route.experts, a.route.n_group);
    const int64_t room = max_smem_optin() - static_cast<int64_t>(sizeof(PlanSmem)) - 1024;
    MOEKIT_RETURN_IF_ERROR(check_route_fits(a.route.experts, a.route.n_group, room));
    warps = static_cast<int>(std::clamp<int64_t>(room / static_cast<int64_t>(per_warp), 1, std::min<int64_t>(kMaxRouteWarps, T)));
  }
  const size_t smem = per_warp * warps;
  if (smem + sizeof(PlanSmem) > 48 * 1024)  // the static part counts against the default 48 KB too
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(decode_plan_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  MOEKIT_RETURN_IF_ERROR(launch_kernel("decode_plan_kernel", decode_plan_kernel, {dim3(1), dim3(kPlanThreads), smem}, stream, a, s, warps, per_warp));
  if (a.type == Elem::kBF16) return launch_decode_gemms_bf16(a, s, stream);
  if (a.type == Elem::kF16) return launch_decode_gemms_f16(a, s, stream);
  return Status::Unsupported("decode layer: the CUDA kernels take f16 or bf16 activations");
}

}  // namespace moekit::cuda::moe
