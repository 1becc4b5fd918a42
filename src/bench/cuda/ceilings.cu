// The GPU's ceilings for `moekit bench`, measured in the run: read bandwidth (the streaming kernel of
// src/cuda/bench_timing.cu), bf16 dense GEMM through cublasGemmEx and fp8 (e4m3) dense GEMM through
// cuBLASLt, each M = N = K = 8192, median of event-timed runs. An fp8 GEMM cuBLASLt cannot run here
// (no fp8 tensor cores before sm_89) is reported as n/a with the reason, not as an error.
//
// The GEMMs' operands are random, like the layer's weights and rows: a tensor core's power, and so
// the clock a power-limited GPU holds, depends on the bits it multiplies. On the H200 cuBLAS ran the
// 8192^3 bf16 GEMM at 892 TFLOP/s on constant operands (every byte 0x3C, what this file used to fill
// them with) and at 763 on uniform random ones (docs/perf-notes.md step 20, bench/probes/
// gemm_ceiling_probe.cu); the layer is timed on random data, so its floor takes the random rate.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "bench/cuda/cublas_check.h"
#include "bench/layer_bench.h"
#include "cuda/bench_timing.h"
#include "cuda/cuda_check.h"
#include "cuda/random_fill.h"
#include "runner/random_bits.h"

namespace moekit::bench {
namespace {

constexpr int64_t kN = 8192;
constexpr int kWarmup = 3, kIters = 10;

struct DeviceBuffer {
  void* p = nullptr;
  ~DeviceBuffer() {
    if (p != nullptr) (void)cudaFree(p);
  }
};

double median_of(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// FLOP/s of `launch` computing one kN^3 GEMM.
Result<double> gemm_rate(const std::function<Status(void*)>& launch) {
  auto us = cuda::time_launches(launch, kWarmup, kIters, 0);
  if (!us.ok()) return us.status();
  return 2.0 * kN * kN * kN / (median_of(*us) * 1e-6);
}

// e4m3 operands: random codes (random_bits, the generator of the random layers), the two NaN codes
// (S.1111.111) moved to the largest finite ones.
__global__ void fill_random_e4m3(uint8_t* p, size_t n, uint64_t seed) {
  const uint64_t base = random_bits::stream_base(seed, 0);
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    uint8_t b = static_cast<uint8_t>(random_bits::mix(base + i));
    if ((b & 0x7F) == 0x7F) b ^= 1;
    p[i] = b;
  }
}

// A and B random (in_bytes 2: bf16 uniform in [-1, 1), as the random layers' weights; 1: e4m3 codes),
// C allocated.
Status alloc_operands(DeviceBuffer& a, DeviceBuffer& b, DeviceBuffer& c, size_t in_bytes, size_t out_bytes) {
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&a.p, kN * kN * in_bytes));
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&b.p, kN * kN * in_bytes));
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&c.p, kN * kN * out_bytes));
  int device = 0;
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  uint64_t seed = 1;
  for (void* p : {a.p, b.p}) {
    if (in_bytes == 2) {
      MOEKIT_RETURN_IF_ERROR(cuda::fill_uniform_device(TensorView(p, DType::kBF16, {kN, kN}, Device::cuda(device)), 1.0, seed++, 0));
    } else {
      fill_random_e4m3<<<1024, 256>>>(static_cast<uint8_t*>(p), static_cast<size_t>(kN * kN), seed++);
    }
  }
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return Status::Ok();
}

Result<double> bf16_gemm_rate() {
  cublasHandle_t h = nullptr;
  MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasCreate(&h));
  std::unique_ptr<cublasContext, decltype(&cublasDestroy)> guard(h, cublasDestroy);
  DeviceBuffer a, b, c;
  MOEKIT_RETURN_IF_ERROR(alloc_operands(a, b, c, 2, 2));
  const float alpha = 1.0f, beta = 0.0f;
  return gemm_rate([&](void* stream) -> Status {
    MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasSetStream(h, static_cast<cudaStream_t>(stream)));
    MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, kN, kN, kN, &alpha, a.p, CUDA_R_16BF, kN, b.p, CUDA_R_16BF, kN,
                                               &beta, c.p, CUDA_R_16BF, kN, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return Status::Ok();
  });
}

// cuBLASLt's fp8 GEMMs take A transposed ("TN"): D[m, n] (bf16) = A^T B with A, B e4m3 [k, m], [k, n].
Result<double> fp8_gemm_rate() {
  cublasLtHandle_t lt = nullptr;
  MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&lt));
  std::unique_ptr<cublasLtContext, decltype(&cublasLtDestroy)> guard(lt, cublasLtDestroy);
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  struct Cleanup {
    cublasLtMatmulDesc_t& d;
    cublasLtMatrixLayout_t &a, &b, &c;
    cublasLtMatmulPreference_t& p;
    ~Cleanup() {
      if (p) cublasLtMatmulPreferenceDestroy(p);
      for (auto l : {a, b, c})
        if (l) cublasLtMatrixLayoutDestroy(l);
      if (d) cublasLtMatmulDescDestroy(d);
    }
  } cleanup{desc, la, lb, lc, pref};
  MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
  MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n));
  MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, kN, kN, kN));
  MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, kN, kN, kN));
  MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, kN, kN, kN));
  const size_t ws_bytes = size_t{64} << 20;
  MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
  MOEKIT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &heur, &found));
  if (found == 0) return Status::Unsupported("cuBLASLt has no e4m3 GEMM for this device");
  DeviceBuffer a, b, c, ws;
  MOEKIT_RETURN_IF_ERROR(alloc_operands(a, b, c, 1, 2));
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&ws.p, ws_bytes));
  const float alpha = 1.0f, beta = 0.0f;
  return gemm_rate([&](void* stream) -> Status {
    MOEKIT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(lt, desc, &alpha, a.p, la, b.p, lb, &beta, c.p, lc, c.p, lc, &heur.algo, ws.p, ws_bytes,
                                                 static_cast<cudaStream_t>(stream)));
    return Status::Ok();
  });
}

}  // namespace

Result<std::vector<Ceiling>> measure_cuda_ceilings() {
  std::vector<Ceiling> c;
  auto bw = cuda::measure_read_bandwidth(size_t{1} << 30, 10);
  if (!bw.ok()) return bw.status();
  c.push_back({"read bandwidth", *bw, "GB/s", "streaming read of 1 GiB, 16-byte loads, median of 10"});
  // A GEMM that fails is reported with its reason; the floor then has no compute bound for it.
  for (auto [name, rate, how] :
       {std::tuple{"bf16 dense GEMM", bf16_gemm_rate(), "cublasGemmEx 8192^3, random operands, fp32 accumulate, median of 10"},
        {"fp8 dense GEMM", fp8_gemm_rate(), "cublasLtMatmul e4m3 8192^3 -> bf16, random operands, median of 10"}}) {
    if (rate.ok()) c.push_back({name, *rate, "TFLOP/s", how});
    else c.push_back({name, 0.0, "TFLOP/s", rate.status().to_string()});
  }
  return c;
}

}  // namespace moekit::bench
