// TMA gather probe: can gemm1's producer warp gather the routed rows itself (one TMA copy of one
// 128-byte row per routed row and k-block) instead of reading rows the expand kernel wrote?
// docs/perf-notes.md step 26 says why we ask: at Qwen3-30B-A3B T = 4096..16384 the expand is 7-9% of
// the layer.
//
// 1. Layout. The sm_90a mainloop's A stage is 128 rows x 64 bf16 (128 bytes a row) with the 128-byte
//    swizzle: 16-byte chunk c of row i lies at i * 128 + (c ^ (i % 8)) * 16. One 64 x 128 box copy
//    (what CUTLASS issues) and 128 copies of a 64 x 1 box, each to its row's place in the stage, must
//    give that layout; the probe checks both against the formula, for contiguous and gathered rows.
// 2. Rate. 132 CTAs (one per SM), a producer warp and a consumer warp each, a ring of 4 stages; each
//    stage is the A tile (16 KB) and optionally the 256-row weight tile (32 KB) of gemm1's 128 x 256
//    x 64 tile; the consumer frees a stage as soon as it lands (no MMAs: the loads alone). A is read
//    as one box from the expanded rows, as 128 row copies of the same rows, or as 128 row copies of
//    random token rows of the hidden states (T = 16384 tokens, 64 MiB; or 2048 tokens, which stay in
//    L2). Time on the GPU (%globaltimer, first CTA start to last CTA end), median of 10 launches.
//    Then A gathered by cp.async (16 bytes a copy, the swizzle in the address) from one warp or from
//    128 threads, with the weight tile still a TMA copy (2b below).
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/tma_gather_probe bench/probes/tma_gather_probe.cu && /tmp/tma_gather_probe
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "probe_check.h"
#include "probe_mbarrier.h"

constexpr int kK = 64;                     // bf16 columns a k-block: 128 bytes a row
constexpr int kRowsA = 128, kRowsB = 256;  // gemm1's 128 x 256 tile
constexpr int kBytesA = kRowsA * kK * 2, kBytesB = kRowsB * kK * 2;
constexpr int kStages = 4;
constexpr int kH = 2048;                   // Qwen3-30B-A3B's hidden size: gemm1's K
constexpr int kKBlocks = kH / kK;

// One 2-D TMA copy: the box at column x, row y of `map` into dst, completing on bar.
__device__ __forceinline__ void tma2d(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          sa(dst)),
      "l"(map), "r"(x), "r"(y), "r"(sa(bar))
      : "memory");
}

// 1. One CTA: the box copy of rows y0..y0+127 into stage 0, the 128 row copies of rows idx[i] into
// stage 1; both stages written to out (2 x 16 KB) and the stages' shared address to out_addr.
__global__ void layout_kernel(const __grid_constant__ CUtensorMap box_map, const __grid_constant__ CUtensorMap row_map,
                              const int* idx, int x0, int y0, uint8_t* out, uint32_t* out_addr) {
  __shared__ __align__(1024) uint8_t stage[2][kBytesA];
  __shared__ uint64_t bar[2];
  const int lane = threadIdx.x;
  if (lane == 0) {
    init_bar(&bar[0], 1);
    init_bar(&bar[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    expect(&bar[0], kBytesA);
    expect(&bar[1], kBytesA);
    tma2d(stage[0], &box_map, x0, y0, &bar[0]);
    *out_addr = sa(stage[0]);
  }
  __syncwarp();
  for (int i = lane; i < kRowsA; i += 32) tma2d(stage[1] + i * 128, &row_map, x0, idx[i], &bar[1]);
  wait_parity(&bar[0], 0);
  wait_parity(&bar[1], 0);
  for (int i = lane; i < 2 * kBytesA / 16; i += 32)
    reinterpret_cast<uint4*>(out)[i] = reinterpret_cast<const uint4*>(&stage[0][0])[i];
}

enum ModeA { kNoA, kBoxA, kRowsSame, kGather };
struct Mode {
  const char* name;
  ModeA a;
  bool b;
  int tokens;  // kGather: the hidden states' rows the indices fall in
};

// 2. The stream: CTA c loads tiles c, c + grid, ...; tile t's A rows are t * 128 .. of the expanded
// rows (kBoxA, kRowsSame) or idx[t * 128 + i] of the hidden states (kGather); its weight tile is
// rows (t % b_tiles) * 256 of the weights.
template <ModeA A, bool B>
__global__ void __launch_bounds__(64) stream_kernel(const __grid_constant__ CUtensorMap a_box, const __grid_constant__ CUtensorMap a_row,
                                                    const __grid_constant__ CUtensorMap x_row, const __grid_constant__ CUtensorMap b_box,
                                                    const int* idx, int tiles_per_cta, int a_tiles, int b_tiles, uint64_t* times) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  constexpr int kStageBytes = kBytesA + kBytesB;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kStages * kStageBytes);
  uint64_t* empty = full + kStages;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint64_t t0 = now();
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      init_bar(&full[s], 1);
      init_bar(&empty[s], 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const int total = tiles_per_cta * kKBlocks;
  constexpr int bytes = (A != kNoA ? kBytesA : 0) + (B ? kBytesB : 0);
  if (warp == 0) {
    for (int it = 0; it < total; ++it) {
      const int s = it % kStages;
      if (it >= kStages) wait_parity(&empty[s], ((it / kStages) + 1) & 1);
      const int t = (blockIdx.x + (it / kKBlocks) * gridDim.x) % a_tiles, kb = it % kKBlocks;
      uint8_t* sa_ = smem + s * kStageBytes;
      if (lane == 0) expect(&full[s], bytes);
      __syncwarp();
      if (A == kBoxA && lane == 0) tma2d(sa_, &a_box, kb * kK, t * kRowsA, &full[s]);
      if (A == kRowsSame)
        for (int i = lane; i < kRowsA; i += 32) tma2d(sa_ + i * 128, &a_row, kb * kK, t * kRowsA + i, &full[s]);
      if (A == kGather)
        for (int i = lane; i < kRowsA; i += 32) tma2d(sa_ + i * 128, &x_row, kb * kK, __ldg(idx + t * kRowsA + i), &full[s]);
      if (B && lane == 0) tma2d(sa_ + kBytesA, &b_box, kb * kK, (t % b_tiles) * kRowsB, &full[s]);
    }
  } else if (lane == 0) {
    for (int it = 0; it < total; ++it) {
      const int s = it % kStages;
      wait_parity(&full[s], (it / kStages) & 1);
      arrive(&empty[s]);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    times[2 * blockIdx.x] = t0;
    times[2 * blockIdx.x + 1] = now();
  }
}

// 2b. The same stream with A gathered by cp.async instead, as a CUTLASS mainloop could do it in its
// auxiliary producer warp (one warp: kernel::detail::HasAuxiliaryLoad, the blockwise-scaling
// mainloop's place for its scale loads) or in a whole producer warpgroup: warp 0 issues the weight
// tile's TMA copy and the stage's expect-tx; `Threads` gather threads copy 16 bytes at a time to the
// swizzled place (8 consecutive lanes cover one 128-byte row), reading each row's token index every
// k-block (L1 hits after the first), and each thread's copies arrive on the stage's barrier when done
// (cp.async.mbarrier.arrive.noinc); the last warp is the consumer. Table = true: the gather threads
// copy the tile's 128 token indices into shared memory at the tile's first k-block and read them
// there (ld.shared) instead of from global memory every k-block.
template <bool B, int Threads, bool Table = false>
__global__ void __launch_bounds__(Threads + 64) cp_async_kernel(const __grid_constant__ CUtensorMap b_box, const uint16_t* x,
                                                                const int* idx, int tiles_per_cta, int a_tiles, int b_tiles,
                                                                uint64_t* times) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  constexpr int kStageBytes = kBytesA + kBytesB;
  constexpr int kPerThread = kRowsA * 8 / Threads;  // 16-byte copies a thread and k-block
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kStages * kStageBytes);
  uint64_t* empty = full + kStages;
  const int tid = threadIdx.x;
  const uint64_t t0 = now();
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      init_bar(&full[s], Threads + 1);
      init_bar(&empty[s], 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const int total = tiles_per_cta * kKBlocks;
  if (tid < 32) {
    if (tid == 0)
      for (int it = 0; it < total; ++it) {
        const int s = it % kStages, kb = it % kKBlocks;
        const int t = (blockIdx.x + (it / kKBlocks) * gridDim.x) % a_tiles;
        if (it >= kStages) wait_parity(&empty[s], ((it / kStages) + 1) & 1);
        expect(&full[s], B ? kBytesB : 0);
        if (B) tma2d(smem + s * kStageBytes + kBytesA, &b_box, kb * kK, (t % b_tiles) * kRowsB, &full[s]);
      }
  } else if (tid < 32 + Threads) {
    __shared__ int table[kRowsA];
    const int g = tid - 32, c = g % 8, r0 = g / 8;  // chunk column; rows r0 + (Threads / 8) j
    for (int it = 0; it < total; ++it) {
      const int s = it % kStages, kb = it % kKBlocks;
      const int t = (blockIdx.x + (it / kKBlocks) * gridDim.x) % a_tiles;
      if (Table && kb == 0) {
        // Every gather thread is done with the last tile's table before it is overwritten.
        asm volatile("bar.sync 1, %0;\n" ::"n"(Threads) : "memory");
        for (int i = g; i < kRowsA; i += Threads) table[i] = __ldg(idx + t * kRowsA + i);
        asm volatile("bar.sync 1, %0;\n" ::"n"(Threads) : "memory");
      }
      if (it >= kStages) wait_parity(&empty[s], ((it / kStages) + 1) & 1);
      uint8_t* sa_ = smem + s * kStageBytes;
#pragma unroll 8
      for (int j = 0; j < kPerThread; ++j) {
        const int i = r0 + (Threads / 8) * j;
        const int token = Table ? table[i] : __ldg(idx + t * kRowsA + i);
        const uint16_t* src = x + static_cast<int64_t>(token) * kH + kb * kK + c * 8;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa(sa_ + i * 128 + ((c ^ (i % 8)) * 16))), "l"(src)
                     : "memory");
      }
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(sa(&full[s])) : "memory");
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
  } else if (tid == 32 + Threads) {
    for (int it = 0; it < total; ++it) {
      const int s = it % kStages;
      wait_parity(&full[s], (it / kStages) & 1);
      arrive(&empty[s]);
    }
  }
  __syncthreads();
  if (tid == 0) {
    times[2 * blockIdx.x] = t0;
    times[2 * blockIdx.x + 1] = now();
  }
}

PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;

// A row-major [rows, kH] bf16 tensor's map, box kK x box_rows, 128-byte swizzle.
int make_map(CUtensorMap* m, const void* base, int64_t rows, int box_rows) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(kH), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(kH) * 2};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(kK), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem[2] = {1, 1};
  const CUresult r = encode(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box, elem,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled: error %d (rows %lld, box rows %d)\n", static_cast<int>(r),
                 static_cast<long long>(rows), box_rows);
    return 1;
  }
  return 0;
}

// Stage bytes of rows src_rows[i] (columns x0 .. x0 + 63 of a [*, kH] bf16 matrix) under the
// 128-byte swizzle.
std::vector<uint8_t> swizzled(const std::vector<uint16_t>& m, const std::vector<int>& src_rows, int x0) {
  std::vector<uint8_t> s(kBytesA);
  for (int i = 0; i < kRowsA; ++i)
    for (int c = 0; c < 8; ++c)
      std::copy_n(reinterpret_cast<const uint8_t*>(&m[static_cast<size_t>(src_rows[i]) * kH + x0 + c * 8]), 16,
                  &s[i * 128 + ((c ^ (i % 8)) * 16)]);
  return s;
}

int main() {
  cudaDriverEntryPointQueryResult q;
  CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000,
                                         cudaEnableDefault, &q));
  if (encode == nullptr) {
    std::fprintf(stderr, "no cuTensorMapEncodeTiled\n");
    return 1;
  }
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  std::printf("%s, %d SMs\n", p.name, p.multiProcessorCount);

  // ---- 1. layout ----
  {
    const int rows = 1024, x0 = 3 * kK, y0 = 256;
    std::vector<uint16_t> m(static_cast<size_t>(rows) * kH);
    for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint16_t>(i * 2654435761u >> 13);
    std::mt19937 rng(7);
    std::vector<int> same(kRowsA), gathered(kRowsA);
    for (int i = 0; i < kRowsA; ++i) same[i] = y0 + i;
    for (auto& g : gathered) g = static_cast<int>(rng() % rows);
    uint16_t* d_m = nullptr;
    int* d_idx = nullptr;
    uint8_t* d_out = nullptr;
    uint32_t* d_addr = nullptr;
    CHECK(cudaMalloc(&d_m, m.size() * 2));
    CHECK(cudaMalloc(&d_idx, kRowsA * 4));
    CHECK(cudaMalloc(&d_out, 2 * kBytesA));
    CHECK(cudaMalloc(&d_addr, 4));
    CHECK(cudaMemcpy(d_m, m.data(), m.size() * 2, cudaMemcpyHostToDevice));
    CUtensorMap box_map, row_map;
    if (make_map(&box_map, d_m, rows, kRowsA) || make_map(&row_map, d_m, rows, 1)) return 1;
    for (int pass = 0; pass < 2; ++pass) {
      const std::vector<int>& src = pass == 0 ? same : gathered;
      CHECK(cudaMemcpy(d_idx, src.data(), kRowsA * 4, cudaMemcpyHostToDevice));
      CHECK(cudaMemset(d_out, 0xEE, 2 * kBytesA));
      layout_kernel<<<1, 32>>>(box_map, row_map, d_idx, x0, y0, d_out, d_addr);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      std::vector<uint8_t> out(2 * kBytesA);
      uint32_t addr = 0;
      CHECK(cudaMemcpy(out.data(), d_out, out.size(), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(&addr, d_addr, 4, cudaMemcpyDeviceToHost));
      const auto want_box = swizzled(m, same, x0), want_rows = swizzled(m, src, x0);
      const bool box_ok = std::equal(want_box.begin(), want_box.end(), out.begin());
      const bool rows_ok = std::equal(want_rows.begin(), want_rows.end(), out.begin() + kBytesA);
      std::printf("layout (%s rows, stage at shared 0x%x): box copy %s the swizzle formula; 128 row copies %s it\n",
                  pass == 0 ? "contiguous" : "gathered", addr, box_ok ? "matches" : "DOES NOT match",
                  rows_ok ? "match" : "DO NOT match");
    }
    CHECK(cudaFree(d_m));
    CHECK(cudaFree(d_idx));
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_addr));
  }

  // ---- 2. rate ----
  const int routed = 16384 * 8, a_tiles = routed / kRowsA;  // Qwen3 T=16384: 131072 routed rows
  const int64_t w_rows = 128LL * 2 * 768;                    // 128 experts' W13 rows
  const int b_tiles = static_cast<int>(w_rows / kRowsB);
  uint16_t *d_a = nullptr, *d_x = nullptr, *d_b = nullptr;
  CHECK(cudaMalloc(&d_a, static_cast<size_t>(routed) * kH * 2));
  CHECK(cudaMalloc(&d_x, static_cast<size_t>(16384) * kH * 2));
  CHECK(cudaMalloc(&d_b, static_cast<size_t>(w_rows) * kH * 2));
  CHECK(cudaMemset(d_a, 0x3C, static_cast<size_t>(routed) * kH * 2));
  CHECK(cudaMemset(d_x, 0x3C, static_cast<size_t>(16384) * kH * 2));
  CHECK(cudaMemset(d_b, 0x3C, static_cast<size_t>(w_rows) * kH * 2));
  CUtensorMap a_box, a_row, x_row, b_box;
  if (make_map(&a_box, d_a, routed, kRowsA) || make_map(&a_row, d_a, routed, 1) || make_map(&x_row, d_x, 16384, 1) ||
      make_map(&b_box, d_b, w_rows, kRowsB))
    return 1;
  // Token indices as the routing gives them: each routed row a random token.
  std::vector<int> big(routed), small(routed);
  std::mt19937 rng(11);
  for (int i = 0; i < routed; ++i) {
    big[i] = static_cast<int>(rng() % 16384);
    small[i] = static_cast<int>(rng() % 2048);
  }
  int *d_big = nullptr, *d_small = nullptr;
  CHECK(cudaMalloc(&d_big, routed * 4));
  CHECK(cudaMalloc(&d_small, routed * 4));
  CHECK(cudaMemcpy(d_big, big.data(), routed * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_small, small.data(), routed * 4, cudaMemcpyHostToDevice));
  uint64_t* d_times = nullptr;
  CHECK(cudaMalloc(&d_times, 2 * 8 * 1024));

  using Kernel = void (*)(CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap, const int*, int, int, int, uint64_t*);
  struct Run {
    Mode mode;
    Kernel k;
  };
  const Run runs[] = {
      {{"A box (expanded rows)", kBoxA, false, 0}, stream_kernel<kBoxA, false>},
      {{"A 128 row copies (expanded rows)", kRowsSame, false, 0}, stream_kernel<kRowsSame, false>},
      {{"A gathered, 16384 tokens", kGather, false, 16384}, stream_kernel<kGather, false>},
      {{"A gathered, 2048 tokens (L2)", kGather, false, 2048}, stream_kernel<kGather, false>},
      {{"B only (weights)", kNoA, true, 0}, stream_kernel<kNoA, true>},
      {{"A box + B", kBoxA, true, 0}, stream_kernel<kBoxA, true>},
      {{"A gathered 16384 + B", kGather, true, 16384}, stream_kernel<kGather, true>},
      {{"A gathered 2048 + B", kGather, true, 2048}, stream_kernel<kGather, true>},
  };
  const int smem = kStages * (kBytesA + kBytesB) + 1024 + 2 * kStages * 8;
  const int ctas = p.multiProcessorCount, tiles_per_cta = 8;
  std::printf("\nrate: %d CTAs x %d tiles x %d k-blocks, %d stages of A %d B + B %d B; A tiles %d, B tiles %d\n", ctas,
              tiles_per_cta, kKBlocks, kStages, kBytesA, kBytesB, a_tiles, b_tiles);
  std::printf("%-36s %10s %10s %12s\n", "mode", "span us", "GB/s", "us a k-block");
  // The span of one launch (first CTA start to last CTA end), median of 10 after 2.
  auto time_it = [&](auto launch, double* span_us) -> int {
    std::vector<double> spans;
    std::vector<uint64_t> h(2 * static_cast<size_t>(ctas));
    for (int i = 0; i < 12; ++i) {
      launch();
      CHECK(cudaGetLastError());
      CHECK(cudaMemcpy(h.data(), d_times, h.size() * 8, cudaMemcpyDeviceToHost));
      if (i < 2) continue;
      uint64_t lo = ~0ull, hi = 0;
      for (int c = 0; c < ctas; ++c) {
        lo = std::min(lo, h[2 * c]);
        hi = std::max(hi, h[2 * c + 1]);
      }
      spans.push_back((hi - lo) * 1e-3);
    }
    std::sort(spans.begin(), spans.end());
    *span_us = spans[spans.size() / 2];
    return 0;
  };
  auto report = [&](const char* name, bool a, bool b, double span) {
    const double bytes = static_cast<double>(ctas) * tiles_per_cta * kKBlocks * ((a ? kBytesA : 0) + (b ? kBytesB : 0));
    std::printf("%-36s %10.1f %10.1f %12.3f\n", name, span, bytes / span / 1e3, span / (tiles_per_cta * kKBlocks));
  };
  for (const Run& r : runs) {
    CHECK(cudaFuncSetAttribute(r.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const int* idx = r.mode.tokens == 2048 ? d_small : d_big;
    double span = 0;
    if (time_it([&] { r.k<<<ctas, 64, smem>>>(a_box, a_row, x_row, b_box, idx, tiles_per_cta, a_tiles, b_tiles, d_times); },
                &span))
      return 1;
    report(r.mode.name, r.mode.a != kNoA, r.mode.b, span);
  }
  const struct {
    const char* name;
    bool b;
    int tokens, threads;
    void (*k)(CUtensorMap, const uint16_t*, const int*, int, int, int, uint64_t*);
  } cp_runs[] = {{"A cp.async 128 thr, 16384 tokens", false, 16384, 128, cp_async_kernel<false, 128>},
                 {"A cp.async 128 thr, 2048 tokens (L2)", false, 2048, 128, cp_async_kernel<false, 128>},
                 {"A cp.async 128 thr 16384 + B", true, 16384, 128, cp_async_kernel<true, 128>},
                 {"A cp.async 128 thr 2048 + B", true, 2048, 128, cp_async_kernel<true, 128>},
                 {"A cp.async 32 thr, 16384 tokens", false, 16384, 32, cp_async_kernel<false, 32>},
                 {"A cp.async 32 thr, 2048 tokens (L2)", false, 2048, 32, cp_async_kernel<false, 32>},
                 {"A cp.async 32 thr 16384 + B", true, 16384, 32, cp_async_kernel<true, 32>},
                 {"A cp.async 32 thr 2048 + B", true, 2048, 32, cp_async_kernel<true, 32>},
                 {"A cp.async 64 thr, 16384 tokens", false, 16384, 64, cp_async_kernel<false, 64>},
                 {"A cp.async 64 thr, 2048 tokens (L2)", false, 2048, 64, cp_async_kernel<false, 64>},
                 {"A cp.async 32 thr table, 16384", false, 16384, 32, cp_async_kernel<false, 32, true>},
                 {"A cp.async 32 thr table, 2048 (L2)", false, 2048, 32, cp_async_kernel<false, 32, true>},
                 {"A cp.async 64 thr table, 16384", false, 16384, 64, cp_async_kernel<false, 64, true>},
                 {"A cp.async 64 thr table, 2048 (L2)", false, 2048, 64, cp_async_kernel<false, 64, true>},
                 {"A cp.async 64 thr table 2048 + B", true, 2048, 64, cp_async_kernel<true, 64, true>}};
  for (const auto& r : cp_runs) {
    CHECK(cudaFuncSetAttribute(r.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const int* idx = r.tokens == 2048 ? d_small : d_big;
    double span = 0;
    if (time_it([&] { r.k<<<ctas, r.threads + 64, smem>>>(b_box, d_x, idx, tiles_per_cta, a_tiles, b_tiles, d_times); }, &span))
      return 1;
    report(r.name, true, r.b, span);
  }
  return 0;
}
