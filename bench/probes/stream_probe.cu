// Weight-stream probe: how fast can N CTAs pull bytes from HBM into shared memory, by copy
// mechanism and access pattern? Decode's MoE layer is a weight stream spread over a few hundred
// CTAs, so its time is set by the per-CTA rate and by how evenly the bytes fall on the CTAs.
//
// Every CTA reads one "tile" the way the stream kernel (src/cuda/moe/stream_gemm.cuh) does: 64
// weight rows of `row_bytes` each, contiguous in memory, one stage = 64 rows x 256 bytes into a
// padded shared-memory layout, 5 stages in flight. Modes:
//   cp.async rows    16-byte cp.async.cg per thread (128 threads), the stream kernel's loads
//   cp.async linear  the same bytes per stage, but the stage is 16 KB of consecutive addresses
//   cp.async evict1st  cp.async rows with the stream kernel's L2 evict-first cache hint
//   bulk rows        cp.async.bulk (the TMA's 1-D copy): 64 copies of 256 bytes per stage, mbarrier
//   bulk 2KB         the same 16 KB stage as 8 consecutive copies of 2 KB (the cost of one copy)
//   bulk linear      one 16 KB cp.async.bulk per stage
// Time is taken on the GPU (%globaltimer at each CTA's start and end; span = last end - first
// start), so launch overhead is not in it. Each launch reads a fresh slice of a 4 GB buffer, so
// nothing comes from L2. Median of 20 launches.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/stream_probe bench/probes/stream_probe.cu && /tmp/stream_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe_check.h"
#include "probe_mbarrier.h"

constexpr int kRows = 64, kChunk = 256, kStages = 5, kThreads = 128;
constexpr int kPitch = kChunk + 16;                  // padded row, as the stream kernel's
constexpr int kStageBytes = kRows * kPitch;          // 17408
constexpr int kSmem = kStages * kStageBytes + 64;    // + mbarriers

enum Mode { kCpAsyncRows, kCpAsyncLinear, kCpAsyncEvictFirst, kBulkRows, kBulk2K, kBulkLinear, kModes };
const char* kNames[] = {"cp.async rows", "cp.async linear", "cp.async evict1st", "bulk rows", "bulk 2KB", "bulk linear"};
__host__ __device__ constexpr bool is_cp_async(int m) { return m <= kCpAsyncEvictFirst; }

__device__ __forceinline__ void bulk(void* dst, const void* src, int bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(sa(dst)), "l"(src), "r"(bytes),
               "r"(sa(bar))
               : "memory");
}

template <int M>
__global__ void __launch_bounds__(kThreads) stream_kernel(const unsigned char* base, int64_t row_bytes, uint64_t* times, float* sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + kStages * kStageBytes);
  const int tid = threadIdx.x;
  const uint64_t t0 = now();
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  const unsigned char* tile = base + static_cast<int64_t>(blockIdx.x) * kRows * row_bytes;
  const int stages = static_cast<int>(row_bytes / kChunk);
  if (!is_cp_async(M) && tid < kStages) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(sa(bars + tid)) : "memory");
  __syncthreads();
  auto issue = [&](int s) {
    unsigned char* dst = smem + (s % kStages) * kStageBytes;
    if (is_cp_async(M)) {
#pragma unroll
      for (int l = 0; l < kRows * kChunk / 16 / kThreads; ++l) {
        const int c = tid + l * kThreads, r = c / (kChunk / 16), q = c % (kChunk / 16);
        const unsigned char* src = M == kCpAsyncLinear ? tile + static_cast<int64_t>(s) * kRows * kChunk + c * 16 : tile + r * row_bytes + s * kChunk + q * 16;
        if (M == kCpAsyncEvictFirst)
          asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(sa(dst + r * kPitch + q * 16)), "l"(src), "l"(policy) : "memory");
        else
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa(dst + r * kPitch + q * 16)), "l"(src) : "memory");
      }
      asm volatile("cp.async.commit_group;\n" ::: "memory");
    } else if (M == kBulkRows) {
      if (tid == 0) expect(bars + s % kStages, kRows * kChunk);
      __syncwarp();
      if (tid < 32)
        for (int r = tid; r < kRows; r += 32) bulk(dst + r * kPitch, tile + r * row_bytes + s * kChunk, kChunk, bars + s % kStages);
    } else if (M == kBulk2K) {
      if (tid == 0) expect(bars + s % kStages, kRows * kChunk);
      __syncwarp();
      if (tid < 8) bulk(dst + tid * 2048, tile + static_cast<int64_t>(s) * kRows * kChunk + tid * 2048, 2048, bars + s % kStages);
    } else {
      if (tid == 0) {
        expect(bars + s % kStages, kRows * kChunk);
        bulk(dst, tile + static_cast<int64_t>(s) * kRows * kChunk, kRows * kChunk, bars + s % kStages);
      }
    }
  };
  for (int s = 0; s < kStages - 1 && s < stages; ++s) issue(s);
  float acc = 0.f;
  for (int s = 0; s < stages; ++s) {
    if (s + kStages - 1 < stages) {
      // the stage issued now reuses the buffer read in iteration s - 1 (a barrier ended that read)
      issue(s + kStages - 1);
    } else if (is_cp_async(M)) {
      asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
    if (is_cp_async(M)) {
      asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 1) : "memory");
    } else {
      wait_parity(bars + s % kStages, (s / kStages) & 1);
    }
    __syncthreads();
    acc += reinterpret_cast<const float*>(smem + (s % kStages) * kStageBytes)[tid];
    __syncthreads();
  }
  if (acc == 1234.5f) sink[0] = acc;
  if (tid == 0) {
    times[2 * blockIdx.x] = t0;
    times[2 * blockIdx.x + 1] = now();
  }
}

using Kernel = void (*)(const unsigned char*, int64_t, uint64_t*, float*);

int run(Kernel k, const unsigned char* buf, int64_t buf_bytes, int ctas, int64_t row_bytes, uint64_t* d_times, float* sink, double* span_us,
        double* cta_us) {
  const int64_t per_launch = static_cast<int64_t>(ctas) * kRows * row_bytes;
  std::vector<uint64_t> h(2 * static_cast<size_t>(ctas));
  std::vector<double> spans, ctat;
  int64_t off = 0;
  for (int i = 0; i < 22; ++i) {
    if (off + per_launch > buf_bytes) off = 0;
    k<<<ctas, kThreads, kSmem>>>(buf + off, row_bytes, d_times, sink);
    off += (per_launch + 4095) / 4096 * 4096;
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h.data(), d_times, h.size() * 8, cudaMemcpyDeviceToHost));
    if (i < 2) continue;
    uint64_t lo = ~0ull, hi = 0;
    double sum = 0;
    for (int c = 0; c < ctas; ++c) {
      lo = std::min(lo, h[2 * c]);
      hi = std::max(hi, h[2 * c + 1]);
      sum += (h[2 * c + 1] - h[2 * c]) * 1e-3;
    }
    spans.push_back((hi - lo) * 1e-3);
    ctat.push_back(sum / ctas);
  }
  std::sort(spans.begin(), spans.end());
  std::sort(ctat.begin(), ctat.end());
  *span_us = spans[spans.size() / 2];
  *cta_us = ctat[ctat.size() / 2];
  return 0;
}

int main() {
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  const int64_t buf_bytes = int64_t{4} << 30;
  unsigned char* buf = nullptr;
  CHECK(cudaMalloc(&buf, buf_bytes));
  CHECK(cudaMemset(buf, 0x37, buf_bytes));
  uint64_t* d_times = nullptr;
  float* sink = nullptr;
  CHECK(cudaMalloc(&d_times, 2 * 8 * 4096));
  CHECK(cudaMalloc(&sink, 16));
  Kernel ks[kModes] = {stream_kernel<kCpAsyncRows>, stream_kernel<kCpAsyncLinear>, stream_kernel<kCpAsyncEvictFirst>,
                       stream_kernel<kBulkRows>,    stream_kernel<kBulk2K>,         stream_kernel<kBulkLinear>};
  for (Kernel k : ks) CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  std::printf("%s, %d SMs. One tile per CTA: 64 rows x row_bytes, stages of 64 x 256 B, %d in flight, %d B smem/CTA.\n", p.name,
              p.multiProcessorCount, kStages, kSmem);
  std::printf("span = last CTA end - first CTA start (median of 20 launches); GB/s = bytes / span; per CTA = bytes per CTA / mean CTA time\n");
  std::printf("%-16s %9s %5s %9s %10s %9s %12s\n", "mode", "row_bytes", "CTAs", "MB", "span us", "GB/s", "GB/s per CTA");
  const int64_t rows_list[] = {4096, 1536, 5760};
  const int ctas_list[] = {1, 8, 33, 66, 96, 132, 192, 264, 396, 528};
  for (int64_t rb : rows_list)
    for (int m = 0; m < kModes; ++m)
      for (int ctas : ctas_list) {
        if ((m == kCpAsyncLinear || m == kBulk2K) && rb != 4096) continue;
        double span = 0, cta = 0;
        if (run(ks[m], buf, buf_bytes, ctas, rb, d_times, sink, &span, &cta)) return 1;
        const double tile = static_cast<double>(kRows) * (rb / kChunk) * kChunk, bytes = ctas * tile;
        std::printf("%-16s %9lld %5d %9.2f %10.2f %9.1f %12.2f\n", kNames[m], static_cast<long long>(rb), ctas, bytes / 1e6, span, bytes / span / 1e3,
                    tile / cta / 1e3);
      }
  return 0;
}
