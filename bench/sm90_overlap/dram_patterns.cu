// dram_patterns: how fast the GPU streams a weight matrix [rows, k] (bf16) read the way a GEMM's
// weight tiles read it: each "stage" is 32 KB, `chunk` bytes from each of 32 KB / chunk consecutive
// rows, and a CTA walks its tile of rows along k stage by stage. chunk = 128 is the 128 x 256 x 64
// sm_90a tile's pattern (256 rows x 128 bytes a stage); chunk = 256 the 64 x 128 x 128 and
// 128 x 128 x 128 tiles'; "tiled" reads each stage as 32 contiguous KB (weights stored tile by
// tile). Plain 16-byte loads, the same bytes in flight for every pattern, so only the addresses
// differ. Part of the overlap experiment (docs/perf-notes.md step 19).
//
//   dram_patterns [--k 2048] [--gb 4] [--ctas-per-sm 4] [--stages-in-flight 2]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../probes/probe_check.h"  // CHECK: a failing CUDA call returns 1

namespace {

constexpr int kThreads = 256;
constexpr int kStageBytes = 32 * 1024;
constexpr int kVecPerThread = kStageBytes / 16 / kThreads;  // 8 uint4 a thread a stage

__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// chunk > 0: a tile is 32 KB / chunk rows x all of k; stage s of a tile reads bytes
// [s * chunk, (s + 1) * chunk) of each of its rows. chunk == 0: "tiled", a tile is 256 rows x all
// of k stored contiguously, and stage s reads its bytes [s * 32 KB, (s + 1) * 32 KB).
template <int kInFlight>
__global__ void __launch_bounds__(kThreads) stream(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t tiles,
                                                    int chunk, uint32_t* sink) {
  const int64_t tile_rows = chunk > 0 ? kStageBytes / chunk : kStageBytes / 128;
  const int64_t stages = chunk > 0 ? row_bytes / chunk : row_bytes / 128;
  const int vec_per_row = chunk > 0 ? chunk / 16 : 0;
  uint32_t acc = 0;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const uint8_t* tile = w + t * tile_rows * row_bytes;
    for (int64_t s = 0; s < stages; s += kInFlight) {
      uint4 v[kInFlight][kVecPerThread];
#pragma unroll
      for (int f = 0; f < kInFlight; ++f) {
#pragma unroll
        for (int i = 0; i < kVecPerThread; ++i) {
          const int vec = i * kThreads + threadIdx.x;  // 0 .. 2047 within the stage
          const int64_t st = min(s + f, stages - 1);
          const uint8_t* p = chunk > 0 ? tile + (vec / vec_per_row) * row_bytes + st * chunk + (vec % vec_per_row) * 16
                                       : tile + st * kStageBytes + vec * 16;
          v[f][i] = load_stream(reinterpret_cast<const uint4*>(p));
        }
      }
#pragma unroll
      for (int f = 0; f < kInFlight; ++f)
#pragma unroll
        for (int i = 0; i < kVecPerThread; ++i) acc ^= v[f][i].x ^ v[f][i].w;
    }
  }
  if (acc == 0x12345678u) sink[0] = acc;  // keeps the loads
}

}  // namespace

int main(int argc, char** argv) {
  int64_t k = 2048;
  double gb = 4;
  int ctas_per_sm = 4, in_flight = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--k") k = std::atoll(argv[i + 1]);
    else if (a == "--gb") gb = std::atof(argv[i + 1]);
    else if (a == "--ctas-per-sm") ctas_per_sm = std::atoi(argv[i + 1]);
    else if (a == "--stages-in-flight") in_flight = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (in_flight != 1 && in_flight != 2 && in_flight != 4) {
    std::fprintf(stderr, "--stages-in-flight: 1, 2 or 4\n");
    return 2;
  }
  const int64_t row_bytes = k * 2;
  if (row_bytes % 1024 != 0) {
    std::fprintf(stderr, "--k must be a multiple of 512 (whole 1 KB chunks a row)\n");
    return 2;
  }
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int64_t tile_bytes_max = static_cast<int64_t>(kStageBytes / 128) * row_bytes;  // 256 rows
  const int64_t bytes = static_cast<int64_t>(gb * 1e9) / tile_bytes_max * tile_bytes_max;
  uint8_t* w = nullptr;
  uint32_t* sink = nullptr;
  CHECK(cudaMalloc(&w, bytes));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMemset(w, 1, bytes));
  const int grid = sms * ctas_per_sm;
  std::printf("# %.2f GB, k %lld (%lld-byte rows), %d CTAs x %d threads, %d stage(s) of 32 KB in flight a CTA\n", bytes / 1e9,
              static_cast<long long>(k), static_cast<long long>(row_bytes), grid, kThreads, in_flight);
  std::printf("%-10s %10s %8s\n", "pattern", "best_us", "TB/s");
  const int chunks[] = {128, 256, 512, 1024, 4096, 0};
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (int chunk : chunks) {
    if (chunk > 0 && row_bytes % chunk != 0) continue;
    const int64_t tile_rows = chunk > 0 ? kStageBytes / chunk : kStageBytes / 128;
    const int64_t tiles = bytes / (tile_rows * row_bytes);
    float best = 1e30f;
    for (int rep = 0; rep < 5; ++rep) {
      cudaEventRecord(e0);
      if (in_flight == 1) stream<1><<<grid, kThreads>>>(w, row_bytes, tiles, chunk, sink);
      else if (in_flight == 2) stream<2><<<grid, kThreads>>>(w, row_bytes, tiles, chunk, sink);
      else stream<4><<<grid, kThreads>>>(w, row_bytes, tiles, chunk, sink);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      best = std::min(best, ms);
    }
    CHECK(cudaGetLastError());
    std::printf("%-10s %10.1f %8.3f\n", chunk > 0 ? std::to_string(chunk).c_str() : "tiled", best * 1000.0,
                static_cast<double>(bytes) / (best * 1e-3) / 1e12);
  }
  cudaFree(w);
  cudaFree(sink);
  return 0;
}
