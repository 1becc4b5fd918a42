// Bulk reduce-add probe: could gemm2's epilogue combine its rows into the tokens' output itself, with
// the TMA unit's bulk reductions (cp.reduce.async.bulk ... .add) from the shared-memory subtile it
// already stages, instead of writing 16-bit rows that the finalize kernel reads back?
// docs/perf-notes.md step 30 d says why we ask: at Qwen3-30B-A3B T=16384 the finalize is 213 µs of
// 2525 (H100) and the prefill target cannot be met while it is a separate pass. Step 20 a's
// reductions from the consumer warps (red.global.add.v4.f32) lost on the H200; these leave the warps.
//
// The traffic of gemm2's epilogue alone, no MMAs: 132 CTAs, one warp each, walk gemm2's 128 x 256
// output tiles in the grouped kernel's order (tile c, c + grid, ...) over rows sorted by expert (T
// tokens, K = 8 of E = 128 experts each, uniform random routing), eight 128 x 32 subtiles a tile,
// two subtile buffers in shared memory (as CUTLASS's StagesD = 2). Per subtile, one of:
//   store    each row's 32 columns as bf16 to its own row of a [T*K, H] array (one bulk copy of 64
//            bytes a row): what gemm2 writes today, before the finalize reads it back;
//   red_f32  each row's 32 columns as f32 added into its token's row of a [T, H] f32 accumulator
//            (cp.reduce.async.bulk .add.f32, 128 bytes a row);
//   red_bf16 the same into a [T, H] bf16 output (.add.noftz.bf16, 64 bytes a row; order-dependent
//            rounding, so never for deterministic mode).
// Time on the GPU (cudaEvent around each launch), median of 10 launches after 2 warm-ups. Compare
// store + the finalize kernel's measured time with red_f32 + zeroing + converting the accumulator.
// Result (H100, docs/perf-notes.md step 30 g): all three modes about 30 ns per bulk operation per SM,
// whatever the size or kind: per-row bulk reductions would take 2-3x gemm2's whole time.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/bulk_reduce_probe bench/probes/bulk_reduce_probe.cu && /tmp/bulk_reduce_probe
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "probe_check.h"
#include "probe_mbarrier.h"  // sa: a shared-memory address for PTX

constexpr int kE = 128, kK = 8, kH = 2048;  // Qwen3-30B-A3B's gemm2 output
constexpr int kTileM = 128, kTileN = 256, kSubN = 32, kSubtiles = kTileN / kSubN;
enum Mode { kStore = 0, kRedF32 = 1, kRedBf16 = 2 };

template <int kMode>
__global__ void __launch_bounds__(32) epilogue_traffic(const int* row_token, int rows, void* out) {
  constexpr int kElem = kMode == kRedF32 ? 4 : 2;
  constexpr int kRowBytes = kSubN * kElem;
  __shared__ __align__(128) uint8_t sub[2][kTileM * kRowBytes];
  const int lane = threadIdx.x;
  // Constant small values in the subtiles (what is added does not change the traffic).
  for (int i = lane; i < 2 * kTileM * kRowBytes / 4; i += 32) {
    if constexpr (kElem == 4) reinterpret_cast<float*>(&sub[0][0])[i] = 1.0f / 64;
    else reinterpret_cast<uint32_t*>(&sub[0][0])[i] = 0x3c003c00u;  // two bf16 of 2^-7
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncwarp();
  const int tiles_m = (rows + kTileM - 1) / kTileM, tiles_n = kH / kTileN;
  int round = 0;
  for (int t = blockIdx.x; t < tiles_m * tiles_n; t += gridDim.x) {
    const int m = t / tiles_n, n = t % tiles_n;  // the M tiles of an N column are neighbours, as CUTLASS orders them
    for (int s = 0; s < kSubtiles; ++s, ++round) {
      const int b = round & 1;
      // Buffer b was last used two subtiles ago: each lane waits until its own copies of it have read it.
      asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
      __syncwarp();
      for (int i = lane; i < kTileM; i += 32) {
        const int r = m * kTileM + i;
        if (r >= rows) break;
        const uint32_t src = sa(&sub[b][i * kRowBytes]);
        const int64_t col = static_cast<int64_t>(n) * kTileN + s * kSubN;
        if constexpr (kMode == kStore) {
          auto* dst = static_cast<__nv_bfloat16*>(out) + static_cast<int64_t>(r) * kH + col;
          asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst), "r"(src), "r"(kRowBytes) : "memory");
        } else if constexpr (kMode == kRedF32) {
          auto* dst = static_cast<float*>(out) + static_cast<int64_t>(row_token[r]) * kH + col;
          asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst), "r"(src),
                       "r"(kRowBytes)
                       : "memory");
        } else {
          auto* dst = static_cast<__nv_bfloat16*>(out) + static_cast<int64_t>(row_token[r]) * kH + col;
          asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.bf16 [%0], [%1], %2;\n" ::"l"(dst),
                       "r"(src), "r"(kRowBytes)
                       : "memory");
        }
      }
      asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

// The accumulator's epilogue after the reductions: f32 [n] to bf16, as moekit's convert kernel.
__global__ void convert(const float4* acc, __nv_bfloat162* out, int64_t n4) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float4 v = acc[i];
    out[2 * i] = __floats2bfloat162_rn(v.x, v.y);
    out[2 * i + 1] = __floats2bfloat162_rn(v.z, v.w);
  }
}

// Median µs of 10 runs of zeroing the f32 accumulator and of converting it to bf16 (out: acc_bytes / 2).
int time_zero_convert(void* acc, void* out, size_t acc_bytes, int sms, float* zero_us, float* convert_us) {
  cudaEvent_t a, b, c;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventCreate(&c));
  std::vector<float> z, v;
  for (int rep = 0; rep < 12; ++rep) {
    CHECK(cudaEventRecord(a));
    CHECK(cudaMemsetAsync(acc, 0, acc_bytes));
    CHECK(cudaEventRecord(b));
    convert<<<sms * 8, 256>>>(static_cast<const float4*>(acc), static_cast<__nv_bfloat162*>(out), static_cast<int64_t>(acc_bytes / 16));
    CHECK(cudaEventRecord(c));
    CHECK(cudaEventSynchronize(c));
    CHECK(cudaGetLastError());
    float ms1 = 0, ms2 = 0;
    CHECK(cudaEventElapsedTime(&ms1, a, b));
    CHECK(cudaEventElapsedTime(&ms2, b, c));
    if (rep >= 2) {
      z.push_back(1e3f * ms1);
      v.push_back(1e3f * ms2);
    }
  }
  std::sort(z.begin(), z.end());
  std::sort(v.begin(), v.end());
  *zero_us = z[z.size() / 2];
  *convert_us = v[v.size() / 2];
  return 0;
}

template <int kMode>
int time_mode(const int* row_token, int rows, void* out, size_t out_bytes, int sms, float* median_us) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> us;
  for (int rep = 0; rep < 12; ++rep) {
    CHECK(cudaMemset(out, 0, out_bytes));
    CHECK(cudaEventRecord(a));
    epilogue_traffic<kMode><<<sms, 32>>>(row_token, rows, out);
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaGetLastError());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    if (rep >= 2) us.push_back(1e3f * ms);
  }
  std::sort(us.begin(), us.end());
  *median_us = us[us.size() / 2];
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return 0;
}

// The sum the reductions left in one token's row must be (its rows' count) x (the value per row).
int check_sums(const void* out, int mode, const std::vector<int>& per_token, int T) {
  std::vector<uint8_t> h(static_cast<size_t>(T) * kH * (mode == kRedF32 ? 4 : 2));
  CHECK(cudaMemcpy(h.data(), out, h.size(), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int t = 0; t < T; t += 97)
    for (int c = 0; c < kH; c += 61) {
      const float want = per_token[t] * (mode == kRedF32 ? 1.0f / 64 : 1.0f / 128);
      float got;
      if (mode == kRedF32) got = reinterpret_cast<const float*>(h.data())[static_cast<size_t>(t) * kH + c];
      else got = __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(h.data())[static_cast<size_t>(t) * kH + c]);
      bad += got != want;
    }
  return bad;
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);
  std::printf("%6s %8s | %10s %8s | %10s %8s %6s | %10s %8s %6s | %8s %8s\n", "T", "rows", "store us", "TB/s", "red_f32 us", "TB/s",
              "bad", "red_bf16", "TB/s", "bad", "zero us", "conv us");
  for (int T : {1024, 4096, 16384}) {
    // Uniform routing: K distinct experts a token; rows sorted by expert, stable in token order.
    std::mt19937 rng(1234 + T);
    std::vector<std::vector<int>> by_expert(kE);
    std::vector<int> experts(kE);
    std::iota(experts.begin(), experts.end(), 0);
    for (int t = 0; t < T; ++t) {
      std::shuffle(experts.begin(), experts.end(), rng);
      for (int k = 0; k < kK; ++k) by_expert[experts[k]].push_back(t);
    }
    std::vector<int> row_token;
    for (auto& v : by_expert) row_token.insert(row_token.end(), v.begin(), v.end());
    const int rows = static_cast<int>(row_token.size());
    std::vector<int> per_token(T, kK);
    int* d_rows = nullptr;
    void* d_out = nullptr;
    const size_t store_bytes = static_cast<size_t>(rows) * kH * 2, acc_bytes = static_cast<size_t>(T) * kH * 4;
    CHECK(cudaMalloc(&d_rows, rows * sizeof(int)));
    CHECK(cudaMemcpy(d_rows, row_token.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMalloc(&d_out, std::max(store_bytes, acc_bytes + acc_bytes / 2)));
    float st = 0, rf = 0, rb = 0;
    if (time_mode<kStore>(d_rows, rows, d_out, store_bytes, sms, &st)) return 1;
    if (time_mode<kRedF32>(d_rows, rows, d_out, acc_bytes, sms, &rf)) return 1;
    const int bad_f = check_sums(d_out, kRedF32, per_token, T);
    if (time_mode<kRedBf16>(d_rows, rows, d_out, acc_bytes / 2, sms, &rb)) return 1;
    const int bad_b = check_sums(d_out, kRedBf16, per_token, T);
    float zero = 0, conv = 0;
    if (time_zero_convert(d_out, static_cast<uint8_t*>(d_out) + acc_bytes, acc_bytes, sms, &zero, &conv)) return 1;
    const double moved_f = static_cast<double>(rows) * kH * 4, moved_h = static_cast<double>(rows) * kH * 2;
    std::printf("%6d %8d | %10.1f %8.2f | %10.1f %8.2f %6d | %10.1f %8.2f %6d | %8.1f %8.1f\n", T, rows, st, moved_h / st / 1e6, rf,
                moved_f / rf / 1e6, bad_f, rb, moved_h / rb / 1e6, bad_b, zero, conv);
    CHECK(cudaFree(d_rows));
    CHECK(cudaFree(d_out));
  }
  std::printf("(TB/s: the bytes the subtiles carry, rows x H x element size, over the time; the reductions' sums are\n"
              " checked at sampled elements: 'bad' counts wrong ones; every launch starts from a zeroed output)\n");
  return 0;
}
