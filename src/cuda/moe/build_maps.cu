// The prologue: the maps of moekit/stages.h (rows grouped by expert, stable in (token, slot) order;
// the dest CSR in (token, slot) order) from topk ids, masked counts or an Indexed layout.
//
//   one warp    T*K <= 32: a (token, slot) per lane; ballots give the dest CSR, ranks by counting
//               the smaller keys among the local lanes. Decode's path: little code, no block barrier.
//   single CTA  T*K < 512 (or <= 4096 with more local experts than the chunks take; and the fused
//               path below): one block ranks (up to 1024 keys) or sorts (expert << bits | flat) keys, which are unique, so the
//               order inside an expert is the flat (token, slot) order without relying on a stable
//               sort; a block scan of the "is local" flags places the dest CSR.
//   fused       the same block (or warp) routes the tokens first (a warp per token), for T <= 32.
//   chunked     T*K >= 512 with up to 2047 local experts: a block per 1024 (token, slot) entries,
//               two launches (the counts per chunk and expert, then each chunk's rows placed).
//   scalable    CUB's device radix sort (stable) of expert ids and a device scan, for any size.
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>

#include <string>

#include "cuda/moe/launch_utils.cuh"
#include "cuda/moe/moe_launch.h"
#include "cuda/moe/pdl.cuh"
#include "cuda/moe/routing_device.cuh"

namespace moekit::cuda::moe {
namespace {

constexpr int kMapsThreads = 1024;
constexpr int kMapsItems = 4;  // kMapsThreads * kMapsItems == kSingleCtaMapsMaxRows
constexpr int kMaxFlatBits = 12;  // a flat (token, slot) index below 4096
static_assert(kMapsThreads * kMapsItems == kSingleCtaMapsMaxRows && (1 << kMaxFlatBits) == kSingleCtaMapsMaxRows);
constexpr int kRankMaxRows = 1024;  // up to here the maps rank keys by counting instead of sorting

using BlockSort = cub::BlockRadixSort<uint32_t, kMapsThreads, kMapsItems>;
using BlockScan = cub::BlockScan<int, kMapsThreads>;

struct MapsSmem {
  union {
    typename BlockSort::TempStorage sort;
    typename BlockScan::TempStorage scan;
    uint32_t raw[1024];  // the small path's unsorted keys
  } tmp;
  uint32_t sorted[kSingleCtaMapsMaxRows];
  int prefix[kSingleCtaMapsMaxRows + 1];
};

int bits_for(int64_t x) {  // bits needed to hold values 0..x
  int b = 0;
  while ((int64_t{1} << b) <= x) ++b;
  return std::max(b, 1);
}

__device__ __forceinline__ int local_of(const TopkMapsArgs& a, int32_t g) {
  return local_expert_of(g, a.num_experts, a.expert_map, a.local_begin, a.local_experts);
}

template <typename Key>
__device__ __forceinline__ int64_t lower_bound(const Key* keys, int64_t n, Key value) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (keys[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// ---- one warp --------------------------------------------------------------------------------------
constexpr int kWarpMapsMaxRows = 32;
constexpr int kSmallRouteMaxWarps = 8;  // the fused one-warp-maps kernel routes with up to 8 warps

// The maps for n = T*K <= 32 rows, by one warp: lane f holds flat index f = t*K + k. Keys order as
// the block path's (local expert, f), so the result is the same bit for bit. `sorted_expert` is 32
// ints of shared memory.
__device__ void warp_topk_maps(const TopkMapsArgs& a, int* sorted_expert, int lane) {
  const int n = static_cast<int>(a.tokens * a.top_k);
  const int EL = a.local_experts, K = a.top_k;
  const int l = lane < n ? local_of(a, a.topk_ids[lane]) : -1;
  const unsigned local_mask = __ballot_sync(0xFFFFFFFFu, l >= 0);
  const int total = __popc(local_mask);
  const uint32_t key = (static_cast<uint32_t>(l) << 5) | static_cast<uint32_t>(lane);  // used by local lanes only
  int rank = 0;
  for (unsigned m = local_mask; m != 0; m &= m - 1) rank += __shfl_sync(0xFFFFFFFFu, key, __ffs(m) - 1) < key;
  const MapsOut& o = a.out;
  if (l >= 0) {
    const int t = lane / K;
    sorted_expert[rank] = l;
    o.row_source[rank] = t;
    o.row_weight[rank] = a.topk_weights[lane];
    o.row_dest[rank] = a.no_combine ? lane : t;
    o.dest_rows[__popc(local_mask & ((1u << lane) - 1))] = rank;
  }
  __syncwarp();
#pragma unroll 1
  for (int e = lane; e <= EL; e += 32) o.expert_offsets[e] = lower_bound<int>(sorted_expert, total, e);
  const int out_rows = a.no_combine ? n : static_cast<int>(a.tokens);
  for (int i = lane; i <= out_rows; i += 32) {
    const int f = a.no_combine ? i : i * K;  // f < 32 whenever i < out_rows
    o.dest_offsets[i] = i == out_rows ? total : __popc(local_mask & ((1u << f) - 1));
  }
}

__global__ void __launch_bounds__(32) warp_maps_kernel(TopkMapsArgs a) {
  pdl_enter();
  __shared__ int sorted_expert[kWarpMapsMaxRows];
  warp_topk_maps(a, sorted_expert, static_cast<int>(threadIdx.x));
}

// Routing by up to kSmallRouteMaxWarps warps (tokens round robin), then warp 0 builds the maps.
__global__ void __launch_bounds__(32 * kSmallRouteMaxWarps) route_warp_maps_kernel(RouteArgs r, TopkMapsArgs a, int route_warps, size_t per_warp) {
  pdl_enter();
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ int sorted_expert[kWarpMapsMaxRows];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  for (int64_t t = warp; t < r.tokens; t += route_warps) route_token_warp(r, t, smem + warp * per_warp, lane);
  if (route_warps > 1) __syncthreads();  // warp 0 reads the other warps' ids (global stores, visible after the barrier)
  if (warp == 0) warp_topk_maps(a, sorted_expert, lane);
}

// ---- single CTA ------------------------------------------------------------------------------------
// Keys are (local expert << flat_bits) | flat index, flat_bits just wide enough for n (fewer radix
// passes for small n).
__device__ void block_topk_maps(const TopkMapsArgs& a, MapsSmem& s, int flat_bits, int end_bit) {
  const int tid = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(a.tokens * a.top_k);
  const int EL = a.local_experts, K = a.top_k;
  const uint32_t pad = static_cast<uint32_t>(EL + 1) << flat_bits;
  uint32_t keys[kMapsItems];
  int flags[kMapsItems], excl[kMapsItems];
#pragma unroll
  for (int j = 0; j < kMapsItems; ++j) {
    const int f = tid * kMapsItems + j;
    if (f < n) {
      const int l = local_of(a, a.topk_ids[f]);
      keys[j] = (static_cast<uint32_t>(l >= 0 ? l : EL) << flat_bits) | static_cast<uint32_t>(f);
      flags[j] = l >= 0;
    } else {
      keys[j] = pad;
      flags[j] = 0;
    }
  }
  int total = 0;
  BlockScan(s.tmp.scan).ExclusiveSum(flags, excl, total);
#pragma unroll
  for (int j = 0; j < kMapsItems; ++j) s.prefix[tid * kMapsItems + j] = excl[j];
  if (tid == 0) s.prefix[n] = total;
  __syncthreads();
  if (n <= kRankMaxRows) {
    // Few rows (decode): the keys are unique, so each one's sorted position is the number of keys
    // below it; n comparisons per thread beat a radix sort's passes over the whole block.
    uint32_t* unsorted = s.tmp.raw;
#pragma unroll
    for (int j = 0; j < kMapsItems; ++j)
      if (tid * kMapsItems + j < n) unsorted[tid * kMapsItems + j] = keys[j];
    __syncthreads();
    for (int f = tid; f < n; f += kMapsThreads) {
      const uint32_t mine = unsorted[f];
      int rank = 0;
      for (int j = 0; j < n; ++j) rank += unsorted[j] < mine;
      s.sorted[rank] = mine;
    }
  } else {
    BlockSort(s.tmp.sort).Sort(keys, 0, end_bit);
#pragma unroll
    for (int j = 0; j < kMapsItems; ++j) s.sorted[tid * kMapsItems + j] = keys[j];
  }
  __syncthreads();

  const MapsOut& o = a.out;
  for (int e = tid; e <= EL; e += kMapsThreads) o.expert_offsets[e] = lower_bound<uint32_t>(s.sorted, n, static_cast<uint32_t>(e) << flat_bits);
  for (int r = tid; r < total; r += kMapsThreads) {
    const int f = static_cast<int>(s.sorted[r] & ((1u << flat_bits) - 1));
    const int t = f / K;
    o.row_source[r] = t;
    o.row_weight[r] = a.topk_weights[f];
    o.row_dest[r] = a.no_combine ? f : t;
    o.dest_rows[s.prefix[f]] = r;
  }
  const int out_rows = a.no_combine ? n : static_cast<int>(a.tokens);
  for (int i = tid; i <= out_rows; i += kMapsThreads) o.dest_offsets[i] = i == out_rows ? total : s.prefix[a.no_combine ? i : i * K];
}

__global__ void __launch_bounds__(kMapsThreads) single_cta_maps_kernel(TopkMapsArgs a, int flat_bits, int end_bit) {
  pdl_enter();
  extern __shared__ __align__(16) unsigned char smem[];
  block_topk_maps(a, *reinterpret_cast<MapsSmem*>(smem), flat_bits, end_bit);
}

// Routing (warps [0, route_warps) take tokens round robin) then the maps, in one block. The routing
// scratch and the maps' shared memory overlap: the barrier separates them.
// The next kernel (the expand, a block per token) is released only at the end, not at the start as
// the layer's other kernels release theirs: measured so, the layer took 1-1.5 us less (Qwen3-30B-A3B
// T = 16 and 32 on an H100, docs/perf-notes.md step 29 c). Why is not measured; the chunked maps'
// kernel gained nothing from the same change. The expand has nothing to do before the maps anyway.
__global__ void __launch_bounds__(kMapsThreads) route_maps_kernel(RouteArgs r, TopkMapsArgs a, int flat_bits, int end_bit, int route_warps,
                                                                  size_t per_warp) {
  pdl_wait();
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (warp < route_warps)
    for (int64_t t = warp; t < r.tokens; t += route_warps) route_token_warp(r, t, smem + warp * per_warp, lane);
  __syncthreads();
  block_topk_maps(a, *reinterpret_cast<MapsSmem*>(smem), flat_bits, end_bit);
  pdl_launch_dependents();
}

// ---- chunked ---------------------------------------------------------------------------------------
// The flat (token, slot) range in chunks of kChunkRows entries, a block each, in two launches:
//   chunk_counts_kernel  each block counts its chunk's entries per column: local expert e, or column
//                        EL for the entries routed to other ranks;
//   chunk_place_kernel   each block sums the counts of the chunks before its own and of all chunks,
//                        scans the totals into every expert's first row, sorts its chunk by column
//                        (a stable block radix sort of the column bits, so flat order inside an
//                        expert) and writes its entries' rows.
// The maps are the other paths' bit for bit: rows grouped by expert in (token, slot) order.
// Measured on the H200 before it (tuner step times, T*K = 4096 to 32768): one CTA sorting up to 4096
// keys took 20-24 us, the radix sort path's seven launches 34-48 us.
constexpr int kChunkThreads = 256;
constexpr int kChunkItems = 4;
constexpr int kChunkBits = 10;
constexpr int kChunkRows = 1 << kChunkBits;
constexpr int kChunkMaxExperts = 2047;  // local experts; the columns (EL + 1) fill 8 KB
static_assert(kChunkThreads * kChunkItems == kChunkRows);

using ChunkSort = cub::BlockRadixSort<uint32_t, kChunkThreads, kChunkItems>;
using ChunkScan = cub::BlockScan<int, kChunkThreads>;

// From 512 entries the chunks' two launches beat one CTA ranking by counting (n^2 comparisons): at
// T*K = 1024 the counting path took 22 us on the H100 (GPT-OSS T=256), the chunks 8.5-10 us at 2048 ..
// 8192 (docs/perf-notes.md step 15 b, step 16).
constexpr int64_t kChunkMinRows = 512;

bool chunked_maps(int64_t n, int local_experts) {
  return n >= kChunkMinRows && n <= INT32_MAX - kChunkRows && local_experts <= kChunkMaxExperts;
}
// The per-chunk, per-column counts the two launches pass through the scratch.
size_t chunk_counts_bytes(int64_t n, int local_experts) {
  return static_cast<size_t>(ceil_div(n, kChunkRows)) * static_cast<size_t>(local_experts + 1) * sizeof(int);
}

__device__ __forceinline__ int chunk_column(const TopkMapsArgs& a, int64_t f) {
  const int l = local_of(a, a.topk_ids[f]);
  return l >= 0 ? l : a.local_experts;
}

__global__ void __launch_bounds__(kChunkThreads) chunk_counts_kernel(TopkMapsArgs a, int* counts, int n) {
  __shared__ int hist[kChunkMaxExperts + 1];
  const int cols = a.local_experts + 1;
  for (int e = static_cast<int>(threadIdx.x); e < cols; e += kChunkThreads) hist[e] = 0;
  __syncthreads();
  pdl_enter();
  const int begin = static_cast<int>(blockIdx.x) * kChunkRows;
  const int end = min(n, begin + kChunkRows);
  for (int f = begin + static_cast<int>(threadIdx.x); f < end; f += kChunkThreads) atomicAdd(&hist[chunk_column(a, f)], 1);
  __syncthreads();
  for (int e = static_cast<int>(threadIdx.x); e < cols; e += kChunkThreads) counts[static_cast<int64_t>(blockIdx.x) * cols + e] = hist[e];
}

struct ChunkSmem {
  union {
    typename ChunkSort::TempStorage sort;
    typename ChunkScan::TempStorage scan;
  } tmp;
  int next_row[kChunkMaxExperts + 1];   // the row the chunk's first (then next) entry of expert e takes
  int first_pos[kChunkMaxExperts + 1];  // the sorted position of expert e's first entry in the chunk
  int prefix[kChunkRows];               // local entries before flat index begin + q, over all chunks
  uint32_t sorted[kChunkRows];
  int local_before;                     // local entries in the chunks before this one
};

__global__ void __launch_bounds__(kChunkThreads) chunk_place_kernel(TopkMapsArgs a, const int* counts, int n, int end_bit) {
  __shared__ ChunkSmem s;
  pdl_enter();
  const int tid = static_cast<int>(threadIdx.x), b = static_cast<int>(blockIdx.x), chunks = static_cast<int>(gridDim.x);
  const int EL = a.local_experts, cols = EL + 1, K = a.top_k;
  const MapsOut& o = a.out;
  const int out_rows = a.no_combine ? n : static_cast<int>(a.tokens);
  // Columns a thread each (striped, so the column sums load in parallel), scanned a round of
  // kChunkThreads columns at a time. Column EL's total is not scanned: expert_offsets[EL] is the
  // number of local entries.
  int carry = 0;
  for (int e0 = 0; e0 < cols; e0 += kChunkThreads) {
    const int e = e0 + tid;
    int before = 0, total = 0;
    if (e < cols) {
      for (int c = 0; c < chunks; ++c) {
        const int k = counts[static_cast<int64_t>(c) * cols + e];
        total += k;
        before += c < b ? k : 0;
      }
    }
    int first = 0, round = 0;
    ChunkScan(s.tmp.scan).ExclusiveSum(e < EL ? total : 0, first, round);
    first += carry;
    if (e < cols) {
      s.next_row[e] = first + before;
      if (b == 0) o.expert_offsets[e] = first;
      if (e == EL) {
        s.local_before = b * kChunkRows - before;
        if (b == 0) o.dest_offsets[out_rows] = first;
      }
    }
    carry += round;
    __syncthreads();  // the scan's storage, reused by the next round
  }

  const int begin = b * kChunkRows;
  const int m = min(kChunkRows, n - begin);
  uint32_t keys[kChunkItems];
  int flags[kChunkItems], excl[kChunkItems];
#pragma unroll
  for (int j = 0; j < kChunkItems; ++j) {
    const int q = tid * kChunkItems + j;
    const int col = q < m ? chunk_column(a, begin + q) : EL + 1;  // EL + 1: padding, sorted last
    keys[j] = (static_cast<uint32_t>(col) << kChunkBits) | static_cast<uint32_t>(q);
    flags[j] = col < EL;
  }
  int chunk_local = 0;
  ChunkScan(s.tmp.scan).ExclusiveSum(flags, excl, chunk_local);
#pragma unroll
  for (int j = 0; j < kChunkItems; ++j) s.prefix[tid * kChunkItems + j] = s.local_before + excl[j];
  __syncthreads();  // the scan's storage, reused by the sort
  ChunkSort(s.tmp.sort).Sort(keys, kChunkBits, end_bit);
#pragma unroll
  for (int j = 0; j < kChunkItems; ++j) s.sorted[tid * kChunkItems + j] = keys[j];
  __syncthreads();
  for (int p = tid; p < kChunkRows; p += kChunkThreads) {
    const int col = static_cast<int>(s.sorted[p] >> kChunkBits);
    if (col < EL && (p == 0 || static_cast<int>(s.sorted[p - 1] >> kChunkBits) != col)) s.first_pos[col] = p;
  }
  __syncthreads();
  for (int p = tid; p < kChunkRows; p += kChunkThreads) {
    const uint32_t key = s.sorted[p];
    const int col = static_cast<int>(key >> kChunkBits);
    if (col >= EL) continue;  // other ranks' entries and the padding, sorted after the local ones
    const int q = static_cast<int>(key & (kChunkRows - 1));
    const int f = begin + q;
    const int t = f / K;
    const int r = s.next_row[col] + (p - s.first_pos[col]);
    o.row_source[r] = t;
    o.row_weight[r] = a.topk_weights[f];
    o.row_dest[r] = a.no_combine ? f : t;
    o.dest_rows[s.prefix[q]] = r;
  }
  for (int q = tid; q < m; q += kChunkThreads) {
    const int f = begin + q;
    if (a.no_combine) o.dest_offsets[f] = s.prefix[q];
    else if (f % K == 0) o.dest_offsets[f / K] = s.prefix[q];
  }
}

Status launch_chunked_maps(const TopkMapsArgs& a, int64_t n, cudaStream_t st) {
  const size_t bytes = chunk_counts_bytes(n, a.local_experts);
  if (bytes > a.scratch_bytes)
    return Status::Internal("maps scratch: " + std::to_string(bytes) + " bytes needed, " + std::to_string(a.scratch_bytes) + " given");
  int* counts = static_cast<int*>(a.scratch);
  const int end_bit = kChunkBits + bits_for(a.local_experts + 1);
  const LaunchShape shape{dim3(static_cast<unsigned>(ceil_div(n, kChunkRows))), dim3(kChunkThreads)};
  MOEKIT_RETURN_IF_ERROR(launch_kernel("chunk_counts_kernel", chunk_counts_kernel, shape, st, a, counts, static_cast<int>(n)));
  return launch_kernel("chunk_place_kernel", chunk_place_kernel, shape, st, a, static_cast<const int*>(counts), static_cast<int>(n), end_bit);
}

// ---- scalable --------------------------------------------------------------------------------------
struct SortScratch {
  uint32_t* keys_in;
  uint32_t* keys_out;
  int32_t* vals_in;
  int32_t* vals_out;
  int32_t* flags;   // n + 1
  int32_t* prefix;  // n + 1
  void* temp;
  size_t temp_bytes;
};

size_t align256(size_t x) { return (x + 255) / 256 * 256; }

Status cub_temp_bytes(int64_t n, int end_bit, size_t* bytes) {
  size_t sort_bytes = 0, scan_bytes = 0;
  MOEKIT_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
                                                              static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), n, 0, end_bit));
  MOEKIT_CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), n + 1));
  *bytes = std::max(sort_bytes, scan_bytes);
  return Status::Ok();
}

Status carve(void* scratch, size_t scratch_bytes, int64_t n, int end_bit, SortScratch& s) {
  size_t temp = 0;
  MOEKIT_RETURN_IF_ERROR(cub_temp_bytes(n, end_bit, &temp));
  auto* p = static_cast<unsigned char*>(scratch);
  size_t off = 0;
  auto take = [&](size_t bytes) {
    void* q = p + off;
    off += align256(bytes);
    return q;
  };
  s.keys_in = static_cast<uint32_t*>(take(n * 4));
  s.keys_out = static_cast<uint32_t*>(take(n * 4));
  s.vals_in = static_cast<int32_t*>(take(n * 4));
  s.vals_out = static_cast<int32_t*>(take(n * 4));
  s.flags = static_cast<int32_t*>(take((n + 1) * 4));
  s.prefix = static_cast<int32_t*>(take((n + 1) * 4));
  s.temp = take(temp);
  s.temp_bytes = temp;
  if (off > scratch_bytes) return Status::Internal("maps scratch: " + std::to_string(off) + " bytes needed, " + std::to_string(scratch_bytes) + " given");
  return Status::Ok();
}

__global__ void topk_keys_kernel(TopkMapsArgs a, SortScratch s, int64_t n) {
  pdl_enter();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    const int l = local_of(a, a.topk_ids[i]);
    s.keys_in[i] = static_cast<uint32_t>(l >= 0 ? l : a.local_experts);
    s.vals_in[i] = static_cast<int32_t>(i);
    s.flags[i] = l >= 0;
  } else if (i == n) {
    s.flags[n] = 0;
  }
}

__global__ void topk_scatter_kernel(TopkMapsArgs a, SortScratch s, int64_t n) {
  pdl_enter();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const MapsOut& o = a.out;
  const int K = a.top_k;
  if (i < n && s.keys_out[i] < static_cast<uint32_t>(a.local_experts)) {
    const int32_t f = s.vals_out[i];
    const int64_t t = f / K;
    o.row_source[i] = t;
    o.row_weight[i] = a.topk_weights[f];
    o.row_dest[i] = a.no_combine ? f : static_cast<int32_t>(t);
    o.dest_rows[s.prefix[f]] = i;
  }
  if (i <= a.local_experts) o.expert_offsets[i] = lower_bound<uint32_t>(s.keys_out, n, static_cast<uint32_t>(i));
  const int64_t out_rows = a.no_combine ? n : a.tokens;
  if (i <= out_rows) o.dest_offsets[i] = i == out_rows ? s.prefix[n] : s.prefix[a.no_combine ? i : i * K];
}

Status sort_and_scan(SortScratch& s, int64_t n, int end_bit, cudaStream_t st) {
  MOEKIT_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(s.temp, s.temp_bytes, s.keys_in, s.keys_out, s.vals_in, s.vals_out, n, 0, end_bit, st));
  MOEKIT_CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(s.temp, s.temp_bytes, s.flags, s.prefix, n + 1, st));
  return Status::Ok();
}

// ---- masked ----------------------------------------------------------------------------------------
__device__ __forceinline__ int64_t masked_count(const MaskedMapsArgs& a, int e) {
  return min(max(static_cast<int64_t>(a.masked_m[e]), int64_t{0}), a.max_m);
}

__global__ void __launch_bounds__(kMapsThreads) masked_offsets_kernel(MaskedMapsArgs a) {
  pdl_enter();
  using Scan = cub::BlockScan<int64_t, kMapsThreads>;
  __shared__ typename Scan::TempStorage tmp;
  __shared__ int64_t carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int base = 0; base < a.local_experts; base += kMapsThreads) {
    const int e = base + static_cast<int>(threadIdx.x);
    const int64_t c = e < a.local_experts ? masked_count(a, e) : 0;
    int64_t excl = 0, total = 0;
    Scan(tmp).ExclusiveSum(c, excl, total);
    if (e < a.local_experts) a.out.expert_offsets[e] = carry + excl;
    __syncthreads();
    if (threadIdx.x == 0) carry += total;
    __syncthreads();
  }
  if (threadIdx.x == 0) a.out.expert_offsets[a.local_experts] = carry;
}

__global__ void masked_rows_kernel(MaskedMapsArgs a) {
  pdl_enter();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t slots = a.local_experts * a.max_m;
  const MapsOut& o = a.out;
  if (i == slots) o.dest_offsets[slots] = o.expert_offsets[a.local_experts];
  if (i >= slots) return;
  const int e = static_cast<int>(i / a.max_m);
  const int64_t m = i % a.max_m, count = masked_count(a, e), base = o.expert_offsets[e];
  o.dest_offsets[i] = base + min(m, count);
  if (m < count) {
    const int64_t r = base + m;
    o.row_source[r] = i;
    o.row_weight[r] = 1.0f;
    o.row_dest[r] = static_cast<int32_t>(i);
    o.dest_rows[r] = r;
  }
}

// ---- indexed ---------------------------------------------------------------------------------------
__global__ void indexed_keys_kernel(IndexedMapsArgs a, SortScratch s) {
  pdl_enter();
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r <= a.local_experts) a.out.expert_offsets[r] = a.expert_offsets[r];
  if (r >= a.max_rows) return;
  const int64_t R = a.expert_offsets[a.local_experts];
  const int32_t t = a.gather_index[r];
  const bool valid = r < R && t >= 0 && t < a.tokens;
  s.keys_in[r] = static_cast<uint32_t>(valid ? t : a.tokens);
  s.vals_in[r] = static_cast<int32_t>(r);
  a.out.row_source[r] = valid ? t : 0;
  a.out.row_weight[r] = a.row_weights[r];
  a.out.row_dest[r] = valid ? t : 0;
}

__global__ void indexed_scatter_kernel(IndexedMapsArgs a, SortScratch s) {
  pdl_enter();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < a.max_rows) a.out.dest_rows[i] = s.vals_out[i];
  if (i <= a.tokens) a.out.dest_offsets[i] = lower_bound<uint32_t>(s.keys_out, a.max_rows, static_cast<uint32_t>(i));
}

constexpr int kThreads = 256;
unsigned blocks_for(int64_t n) { return static_cast<unsigned>(std::max<int64_t>(1, ceil_div(n, kThreads))); }

}  // namespace

Status maps_scratch_bytes(int64_t n, int64_t key_limit, size_t* bytes) {
  size_t temp = 0;
  MOEKIT_RETURN_IF_ERROR(cub_temp_bytes(n, bits_for(key_limit), &temp));
  *bytes = 4 * align256(n * 4) + 2 * align256((n + 1) * 4) + align256(temp);
  return Status::Ok();
}

Status topk_maps_scratch_bytes(int64_t n, int local_experts, size_t* bytes) {
  *bytes = 0;
  if (chunked_maps(n, local_experts)) {
    *bytes = chunk_counts_bytes(n, local_experts);
    return Status::Ok();
  }
  if (n > kSingleCtaMapsMaxRows) return maps_scratch_bytes(n, local_experts, bytes);
  return Status::Ok();
}

Status launch_topk_maps(const TopkMapsArgs& a, void* stream) {
  const cudaStream_t st = as_stream(stream);
  const int64_t n = a.tokens * a.top_k;
  if (n <= kWarpMapsMaxRows) return launch_kernel("warp_maps_kernel", warp_maps_kernel, {dim3(1), dim3(32), 0}, st, a);
  if (chunked_maps(n, a.local_experts)) return launch_chunked_maps(a, n, st);
  if (n <= kSingleCtaMapsMaxRows) {
    const int flat_bits = bits_for(n - 1);
    const int end_bit = flat_bits + bits_for(a.local_experts + 1);
    MOEKIT_RETURN_IF_ERROR(allow_dynamic_smem(single_cta_maps_kernel, sizeof(MapsSmem)));
    MOEKIT_RETURN_IF_ERROR(launch_kernel("single_cta_maps_kernel", single_cta_maps_kernel, {dim3(1), dim3(kMapsThreads), sizeof(MapsSmem)}, st, a, flat_bits, end_bit));
    return Status::Ok();
  }
  const int end_bit = bits_for(a.local_experts);
  SortScratch s{};
  MOEKIT_RETURN_IF_ERROR(carve(a.scratch, a.scratch_bytes, n, end_bit, s));
  MOEKIT_RETURN_IF_ERROR(launch_kernel("topk_keys_kernel", topk_keys_kernel, {dim3(blocks_for(n + 1)), dim3(kThreads), 0}, st, a, s, n));
  MOEKIT_RETURN_IF_ERROR(sort_and_scan(s, n, end_bit, st));
  MOEKIT_RETURN_IF_ERROR(launch_kernel("topk_scatter_kernel", topk_scatter_kernel, {dim3(blocks_for(std::max<int64_t>(n, a.local_experts) + 1)), dim3(kThreads), 0}, st, a, s, n));
  return Status::Ok();
}

Status launch_route_and_maps(const RouteArgs& route, const TopkMapsArgs& a, void* stream) {
  const int64_t n = a.tokens * a.top_k;
  if (n > kSingleCtaMapsMaxRows)
    return Status::Internal("route_and_maps: T*K=" + std::to_string(n) + " is beyond the single-CTA path");
  if (a.tokens == 0) return launch_topk_maps(a, stream);
  const size_t per_warp = (route_smem_per_warp(route.experts, route.n_group) + 15) / 16 * 16;
  const size_t limit = static_cast<size_t>(max_smem_optin());
  if (n <= kWarpMapsMaxRows && per_warp <= limit) {
    const int route_warps = static_cast<int>(std::min<int64_t>({int64_t{kSmallRouteMaxWarps}, a.tokens, static_cast<int64_t>(limit / per_warp)}));
    const size_t smem = per_warp * route_warps;
    MOEKIT_RETURN_IF_ERROR(allow_dynamic_smem(route_warp_maps_kernel, smem));
    return launch_kernel("route_warp_maps_kernel", route_warp_maps_kernel, {dim3(1), dim3(32 * route_warps), smem}, as_stream(stream), route, a,
                         route_warps, per_warp);
  }
  const int route_warps = static_cast<int>(std::min<int64_t>({int64_t{kMapsThreads / 32}, a.tokens, static_cast<int64_t>(limit / per_warp)}));
  if (route_warps < 1) {  // one token's scores do not fit next to nothing: two launches instead
    MOEKIT_RETURN_IF_ERROR(launch_route(route, stream));
    return launch_topk_maps(a, stream);
  }
  const size_t smem = std::max(sizeof(MapsSmem), per_warp * route_warps);
  const int flat_bits = bits_for(n - 1);
  const int end_bit = flat_bits + bits_for(a.local_experts + 1);
  MOEKIT_RETURN_IF_ERROR(allow_dynamic_smem(route_maps_kernel, smem));
  MOEKIT_RETURN_IF_ERROR(launch_kernel("route_maps_kernel", route_maps_kernel, {dim3(1), dim3(kMapsThreads), smem}, as_stream(stream), route, a, flat_bits, end_bit, route_warps, per_warp));
  return Status::Ok();
}

Status launch_masked_maps(const MaskedMapsArgs& a, void* stream) {
  const cudaStream_t st = as_stream(stream);
  MOEKIT_RETURN_IF_ERROR(launch_kernel("masked_offsets_kernel", masked_offsets_kernel, {dim3(1), dim3(kMapsThreads), 0}, st, a));
  MOEKIT_RETURN_IF_ERROR(launch_kernel("masked_rows_kernel", masked_rows_kernel, {dim3(blocks_for(a.local_experts * a.max_m + 1)), dim3(kThreads), 0}, st, a));
  return Status::Ok();
}

Status launch_indexed_maps(const IndexedMapsArgs& a, void* stream) {
  const cudaStream_t st = as_stream(stream);
  const int end_bit = bits_for(a.tokens);
  SortScratch s{};
  MOEKIT_RETURN_IF_ERROR(carve(a.scratch, a.scratch_bytes, a.max_rows, end_bit, s));
  MOEKIT_RETURN_IF_ERROR(launch_kernel("indexed_keys_kernel", indexed_keys_kernel, {dim3(blocks_for(std::max<int64_t>(a.max_rows, a.local_experts + 1))), dim3(kThreads), 0}, st, a, s));
  if (a.max_rows > 0)
    MOEKIT_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(s.temp, s.temp_bytes, s.keys_in, s.keys_out, s.vals_in, s.vals_out, a.max_rows, 0, end_bit, st));
  MOEKIT_RETURN_IF_ERROR(launch_kernel("indexed_scatter_kernel", indexed_scatter_kernel, {dim3(blocks_for(std::max(a.max_rows, a.tokens + 1))), dim3(kThreads), 0}, st, a, s));
  return Status::Ok();
}

}  // namespace moekit::cuda::moe
