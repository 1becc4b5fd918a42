// TEMPORARY (not committed): per-CTA %globaltimer marks of the decode stage pipeline.
#pragma once
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
namespace moekit::cuda::trace {
constexpr int kCtas = 1024, kMarks = 20, kKernels = 2;
static __device__ unsigned long long g_marks[kKernels][kCtas][kMarks];
__device__ __forceinline__ unsigned long long now() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ void mark(int kernel, int k) {
  if (threadIdx.x == 0 && blockIdx.y == 0 && blockIdx.x < kCtas) g_marks[kernel][blockIdx.x][k] = now();
}
static void dump() {
  static unsigned long long h[kKernels][kCtas][kMarks];
  if (cudaMemcpyFromSymbol(h, g_marks, sizeof(h)) != cudaSuccess) return;
  FILE* f = std::fopen(std::getenv("MOEKIT_TRACE"), "a");
  if (!f) return;
  for (int k = 0; k < kKernels; ++k)
    for (int c = 0; c < kCtas; ++c) {
      if (!h[k][c][0]) continue;
      std::fprintf(f, "%d %d", k, c);
      for (int m = 0; m < kMarks; ++m) std::fprintf(f, " %llu", h[k][c][m]);
      std::fprintf(f, "\n");
    }
  std::fclose(f);
}
static inline void arm() {
  static bool armed = false;
  if (!armed && std::getenv("MOEKIT_TRACE")) { armed = true; std::atexit(dump); }
}
}  // namespace moekit::cuda::trace
