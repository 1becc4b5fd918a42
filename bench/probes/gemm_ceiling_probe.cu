// What the bf16 dense GEMM ceiling of `moekit bench` depends on: the operands' values (the constant
// 0x3C3C bytes src/bench/cuda/ceilings.cu fills them with, against uniform random values in [-1, 1],
// which the layer's weights and rows are) and how long the GPU has been busy (the first launches
// against launches after a second of back-to-back GEMMs, when the power limit has set the clock).
// Also the GEMMs of Mixtral-8x7B at T=4096 done as one dense cuBLAS GEMM each (8192 rows), the rate a
// grouped GEMM of the same shape could hope for. Standalone (docs/perf-notes.md step 20):
//
//   nvcc -O2 -std=c++17 -arch=sm_90a -o gemm_ceiling_probe bench/probes/gemm_ceiling_probe.cu -lcublas
//   ./gemm_ceiling_probe [seconds of warm-up, default 1]
//
// Prints, for each case, TFLOP/s as the median of the first 10 launches (after 3 untimed ones) and the
// median of 20 launches after `seconds` of untimed back-to-back launches.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_check.h"

#define CHECK_BLAS(x)                                                              \
  do {                                                                             \
    cublasStatus_t s_ = (x);                                                       \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                             \
      std::fprintf(stderr, "%s:%d %s: cuBLAS status %d\n", __FILE__, __LINE__, #x, \
                   static_cast<int>(s_));                                          \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

// Uniform values in [-1, 1) from a hash of the index (bf16: the float's top 16 bits).
__global__ void fill_random(__nv_bfloat16* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    const float u = static_cast<float>(x >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
    p[i] = __float2bfloat16_rz(u);
  }
}

struct Shape {
  const char* name;
  int m, n, k;
};

float median(std::vector<float> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Times `count` launches one by one with events; returns their times in ms.
int time_each(cublasHandle_t h, const Shape& s, const void* a, const void* b, void* c, int count, std::vector<float>& out) {
  const float alpha = 1.0f, beta = 0.0f;
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < count; ++i) {
    CHECK(cudaEventRecord(e0));
    // C[n x m] (column-major) = B^T A: the layer's "TN" layout (weights [n, k], rows [m, k]).
    CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s.n, s.m, s.k, &alpha, b, CUDA_R_16BF, s.k, a, CUDA_R_16BF, s.k, &beta, c,
                            CUDA_R_16BF, s.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    out.push_back(ms);
  }
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  return 0;
}

int run(cublasHandle_t h, const Shape& s, bool random, double warm_seconds) {
  void *a = nullptr, *b = nullptr, *c = nullptr;
  const size_t na = size_t(s.m) * s.k, nb = size_t(s.n) * s.k, nc = size_t(s.m) * s.n;
  CHECK(cudaMalloc(&a, na * 2));
  CHECK(cudaMalloc(&b, nb * 2));
  CHECK(cudaMalloc(&c, nc * 2));
  if (random) {
    fill_random<<<1024, 256>>>(static_cast<__nv_bfloat16*>(a), na, 1);
    fill_random<<<1024, 256>>>(static_cast<__nv_bfloat16*>(b), nb, 2);
    CHECK(cudaGetLastError());
  } else {
    CHECK(cudaMemset(a, 0x3C, na * 2));
    CHECK(cudaMemset(b, 0x3C, nb * 2));
  }
  CHECK(cudaDeviceSynchronize());
  const double flop = 2.0 * s.m * s.n * s.k;
  std::vector<float> untimed, first, later;
  if (time_each(h, s, a, b, c, 3, untimed)) return 1;
  if (time_each(h, s, a, b, c, 10, first)) return 1;
  // Back-to-back launches (no event waits) for warm_seconds, then 20 timed ones.
  const float alpha = 1.0f, beta = 0.0f;
  const int per_batch = std::max(1, static_cast<int>(0.05 / (flop / 700e12)));  // about 50 ms a batch
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < warm_seconds) {
    for (int i = 0; i < per_batch; ++i)
      CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s.n, s.m, s.k, &alpha, b, CUDA_R_16BF, s.k, a, CUDA_R_16BF, s.k, &beta, c,
                              CUDA_R_16BF, s.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CHECK(cudaDeviceSynchronize());
  }
  if (time_each(h, s, a, b, c, 20, later)) return 1;
  std::printf("%-28s %-9s first 10: %6.1f TFLOP/s   after %.1f s: %6.1f TFLOP/s  (%.3f / %.3f ms)\n", s.name,
              random ? "random" : "0x3C3C", flop / (median(first) * 1e-3) / 1e12, warm_seconds,
              flop / (median(later) * 1e-3) / 1e12, median(first), median(later));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  return 0;
}

int main(int argc, char** argv) {
  const double warm = argc > 1 ? std::atof(argv[1]) : 1.0;
  cublasHandle_t h = nullptr;
  CHECK_BLAS(cublasCreate(&h));
  const Shape shapes[] = {{"8192^3 (the bench's)", 8192, 8192, 8192},
                          {"mixtral gemm1 8192x28672x4096", 8192, 28672, 4096},
                          {"mixtral gemm2 8192x4096x14336", 8192, 4096, 14336},
                          {"qwen3 gemm1 1024x1536x2048", 1024, 1536, 2048}};
  for (const Shape& s : shapes)
    for (bool random : {false, true})
      if (run(h, s, random, warm)) return 1;
  CHECK_BLAS(cublasDestroy(h));
  return 0;
}
