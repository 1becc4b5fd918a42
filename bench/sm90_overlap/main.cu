// sm90_overlap: times the overlap experiment's variants (overlap_variants.h) of the sm_90a grouped
// GEMM on one synthetic GEMM (E experts of `rows` routed rows each, weights [E, n, k]): gemm1 with
// the gated epilogue (W13 interleaved, D [rows, n / 2]) for variants 0-14, 24 and 26, the plain
// TMA-store epilogue of gemm2 (D [rows, n]) for 15-23 and 25 (not mixed in one run). Checks each variant's output
// against the first one's and against its own second run, and writes the traced variants' timestamps (overlap_variants.h). An
// experiment (docs/perf-notes.md steps 19 and 31), not a product: built with
// -DMOEKIT_BUILD_EXPERIMENTS=ON on an sm_90a build.
//
//   sm90_overlap --experts 1 --rows 64 --n 131072 --k 768 --variants 0,1,3 [--rounds 3] [--reps 20]
//                [--spread SIGMA | --random 1] [--trace PREFIX]   (PREFIX-v<id>.bin for each traced variant listed)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../probes/probe_check.h"  // CHECK: a failing CUDA call returns 1
#include "moekit/float_formats.h"
#include "overlap_variants.h"

namespace moekit::bench_overlap {

// Weak: a build may hold only some variants (bench/sm90_overlap/CMakeLists.txt,
// MOEKIT_OVERLAP_VARIANTS); a missing one's address is null and run_variant refuses it.
#define DECLARE(i) __attribute__((weak)) Status run_variant_##i(const cuda::moe::Sm90GemmArgs& a, void* stream);
DECLARE(0) DECLARE(1) DECLARE(2) DECLARE(3) DECLARE(4) DECLARE(5) DECLARE(6) DECLARE(7) DECLARE(8) DECLARE(9) DECLARE(10) DECLARE(11) DECLARE(12) DECLARE(13) DECLARE(14) DECLARE(15) DECLARE(16)
DECLARE(17) DECLARE(18) DECLARE(19) DECLARE(20) DECLARE(21) DECLARE(22) DECLARE(23) DECLARE(24) DECLARE(27) DECLARE(28)
DECLARE(29) DECLARE(30)
#undef DECLARE
#define DECLARE(i) __attribute__((weak)) Status set_trace_buffer_##i(uint64_t* buffer);
DECLARE(5) DECLARE(16) DECLARE(18) DECLARE(20) DECLARE(22)
#undef DECLARE

using RunFn = Status (*)(const cuda::moe::Sm90GemmArgs&, void*);
using TraceFn = Status (*)(uint64_t*);
Status not_built(int id) {
  return Status::InvalidArgument("variant " + std::to_string(id) + " is not in this build (MOEKIT_OVERLAP_VARIANTS)");
}
Status call(RunFn f, int id, const cuda::moe::Sm90GemmArgs& a, void* s) { return f ? f(a, s) : not_built(id); }
Status call(TraceFn f, int id, uint64_t* buffer) { return f ? f(buffer) : not_built(id); }

Status set_trace_buffer(int id, uint64_t* buffer) {
  switch (id) {
    case 5: return call(set_trace_buffer_5, 5, buffer);
    case 16: return call(set_trace_buffer_16, 16, buffer);
    case 18: return call(set_trace_buffer_18, 18, buffer);
    case 20: return call(set_trace_buffer_20, 20, buffer);
    case 22: return call(set_trace_buffer_22, 22, buffer);
    default: return Status::InvalidArgument("variant " + std::to_string(id) + " is not traced");
  }
}

Status run_variant(int id, const cuda::moe::Sm90GemmArgs& a_in, void* s) {
  cuda::moe::Sm90GemmArgs a = a_in;
  // Variants 25 and 26: the tail split wherever it can run (the library's kAuto rule came from them).
  a.tail_split = id == 25 || id == 26 ? cuda::moe::Sm90TailSplit::kAlways : cuda::moe::Sm90TailSplit::kOff;
  switch (id) {
    case 0: return call(run_variant_0, 0, a, s);
    case 1: return call(run_variant_1, 1, a, s);
    case 2: return call(run_variant_2, 2, a, s);
    case 3: return call(run_variant_3, 3, a, s);
    case 4: return call(run_variant_4, 4, a, s);
    case 5: return call(run_variant_5, 5, a, s);
    case 6: return call(run_variant_6, 6, a, s);
    case 7: return call(run_variant_7, 7, a, s);
    case 8: return call(run_variant_8, 8, a, s);
    case 9: return call(run_variant_9, 9, a, s);
    case 10: return call(run_variant_10, 10, a, s);
    case 11: return call(run_variant_11, 11, a, s);
    case 12: return call(run_variant_12, 12, a, s);
    case 13: return call(run_variant_13, 13, a, s);
    case 14: return call(run_variant_14, 14, a, s);
    case 15: return call(run_variant_15, 15, a, s);
    case 16: return call(run_variant_16, 16, a, s);
    case 17: return call(run_variant_17, 17, a, s);
    case 18: return call(run_variant_18, 18, a, s);
    case 19: return call(run_variant_19, 19, a, s);
    case 20: return call(run_variant_20, 20, a, s);
    case 21: return call(run_variant_21, 21, a, s);
    case 22: return call(run_variant_22, 22, a, s);
    case 23: return call(run_variant_23, 23, a, s);
    case 24: return call(run_variant_24, 24, a, s);
    case 25:
    case 26: return id == 25 ? call(run_variant_15, 15, a, s) : call(run_variant_0, 0, a, s);
    case 27: return call(run_variant_27, 27, a, s);
    case 28: return call(run_variant_28, 28, a, s);
    case 29: return call(run_variant_29, 29, a, s);
    case 30: return call(run_variant_30, 30, a, s);
    default: return Status::InvalidArgument("variant " + std::to_string(id) + " does not exist");
  }
}

namespace {

#define CHECK_STATUS(x)                                               \
  do {                                                                \
    Status s_ = (x);                                                  \
    if (!s_.ok()) {                                                   \
      std::fprintf(stderr, "%s: %s\n", #x, s_.message().c_str());     \
      return 1;                                                       \
    }                                                                 \
  } while (0)

__global__ void fill_random(__nv_bfloat16* x, size_t n, uint32_t seed, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed ^ static_cast<uint32_t>(i >> 32) * 40503u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = __float2bfloat16((static_cast<float>(h & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f) * scale);
  }
}

struct Options {
  int experts = 1;
  int64_t rows = 64, n = 131072, k = 768;
  double spread = 0;  // rows per expert: rows x a log-normal weight of this sigma (normalized to the mean)
  bool random = false;  // rows per expert as uniform random routing gives them: each of experts x rows rows to a random expert
  std::vector<int> variants = {0};
  int rounds = 3, reps = 20;
  std::string trace;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", a.c_str());
      return false;
    }
    const char* v = argv[++i];
    if (a == "--experts") o.experts = std::atoi(v);
    else if (a == "--rows") o.rows = std::atoll(v);
    else if (a == "--spread") o.spread = std::atof(v);
    else if (a == "--random") o.random = std::atoi(v) != 0;
    else if (a == "--n") o.n = std::atoll(v);
    else if (a == "--k") o.k = std::atoll(v);
    else if (a == "--rounds") o.rounds = std::atoi(v);
    else if (a == "--reps") o.reps = std::atoi(v);
    else if (a == "--trace") o.trace = v;
    else if (a == "--variants") {
      o.variants.clear();
      for (const char* p = v; *p;) {
        o.variants.push_back(std::atoi(p));
        while (*p && *p != ',') ++p;
        if (*p == ',') ++p;
      }
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return false;
    }
  }
  if (o.experts < 1 || o.rows < 1 || o.n % 16 != 0 || o.k % 8 != 0 || o.rounds < 1 || o.reps < 1) {
    std::fprintf(stderr, "need experts >= 1, rows >= 1, n %% 16 == 0, k %% 8 == 0, rounds and reps >= 1\n");
    return false;
  }
  for (int v : o.variants) {
    if (v < 0 || v >= kVariantCount) {
      std::fprintf(stderr, "variant %d does not exist (0..%d)\n", v, kVariantCount - 1);
      return false;
    }
    if (is_plain_variant(v) != is_plain_variant(o.variants[0])) {
      std::fprintf(stderr, "variants %d and %d write different outputs (plain and gated): run them apart\n",
                   o.variants[0], v);
      return false;
    }
  }
  return true;
}

int run(const Options& o) {
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  // Rows per expert: all `rows`, or spread log-normally around it (a routing that favours some experts).
  std::vector<int64_t> h_off(o.experts + 1, 0);
  {
    std::mt19937 gen(7);
    std::normal_distribution<double> z(0.0, 1.0);
    std::vector<double> w(o.experts, 1.0);
    double sum = 0;
    for (double& x : w) sum += (x = std::exp(o.spread * z(gen)));
    for (int e = 0; e < o.experts; ++e)
      h_off[e + 1] = h_off[e] + std::llround(static_cast<double>(o.rows) * o.experts * w[e] / sum);
    if (o.random) {  // the bench's uniform routing, as counts: a multinomial draw
      std::vector<int64_t> count(o.experts, 0);
      std::uniform_int_distribution<int> pick(0, o.experts - 1);
      for (int64_t r = 0; r < o.rows * o.experts; ++r) ++count[pick(gen)];
      for (int e = 0; e < o.experts; ++e) h_off[e + 1] = h_off[e] + count[e];
    }
  }
  const int64_t max_rows = std::max<int64_t>(h_off[o.experts], 1);
  const size_t a_elems = static_cast<size_t>(max_rows) * o.k;
  const size_t b_elems = static_cast<size_t>(o.experts) * o.n * o.k;
  const bool plain = is_plain_variant(o.variants[0]);
  const size_t d_elems = static_cast<size_t>(max_rows) * (plain ? o.n : o.n / 2);
  __nv_bfloat16 *a = nullptr, *b = nullptr, *d = nullptr;
  int64_t* offsets = nullptr;
  void* scratch = nullptr;
  // The library's size, and some room: the variants' own configurations may need more workspace.
  const size_t scratch_bytes = cuda::moe::sm90_gemm_scratch_bytes(o.experts, o.n, o.k, cuda::moe::Elem::kBF16, sms) + (size_t{16} << 20);
  CHECK(cudaMalloc(&a, a_elems * 2));
  CHECK(cudaMalloc(&b, b_elems * 2));
  CHECK(cudaMalloc(&d, d_elems * 2));
  CHECK(cudaMalloc(&offsets, (o.experts + 1) * sizeof(int64_t)));
  CHECK(cudaMalloc(&scratch, scratch_bytes));
  fill_random<<<1024, 256>>>(a, a_elems, 1u, 1.0f);
  fill_random<<<4096, 256>>>(b, b_elems, 2u, 0.05f);
  CHECK(cudaMemcpy(offsets, h_off.data(), h_off.size() * sizeof(int64_t), cudaMemcpyHostToDevice));

  cuda::moe::Sm90GemmArgs args;
  args.type = cuda::moe::Elem::kBF16;
  args.d_type = cuda::moe::Elem::kBF16;
  args.a = a;
  args.b = b;
  args.d = d;
  args.expert_offsets = offsets;
  args.experts = o.experts;
  args.max_rows = max_rows;
  args.n = o.n;
  args.k = o.k;
  args.gated_activation = plain ? -1 : 0;  // SwiGLU in the gated variants
  args.scratch = scratch;
  args.scratch_bytes = scratch_bytes;
  args.sm_count = sms;
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  const double weight_bytes = static_cast<double>(b_elems) * 2;
  const double flops = 2.0 * max_rows * o.n * o.k;
  int64_t fewest = max_rows, most = 0, tiles = 0;  // tiles: of the 128 x 256 tile (the tail split's rounds)
  int64_t m128 = 0, m192 = 0, m256 = 0;  // M tiles of 128, 192 and 256 rows over the experts
  for (int e = 0; e < o.experts; ++e) {
    const int64_t r = h_off[e + 1] - h_off[e];
    fewest = std::min(fewest, r);
    most = std::max(most, r);
    tiles += (r + 127) / 128 * ((o.n + 255) / 256);
    m128 += (r + 127) / 128;
    m192 += (r + 191) / 192;
    m256 += (r + 255) / 256;
  }
  std::printf("# M tiles over the experts: %lld of 128 rows, %lld of 192, %lld of 256\n", static_cast<long long>(m128),
              static_cast<long long>(m192), static_cast<long long>(m256));
  std::printf("# 128x256 tiles %lld: %lld whole rounds on %d SMs and %lld tiles left\n", static_cast<long long>(tiles),
              static_cast<long long>(tiles / sms), sms, static_cast<long long>(tiles % sms));
  std::printf("# experts %d, rows %lld each (%lld .. %lld), n %lld, k %lld: %.1f MB of weights, %.2f GFLOP; %d SMs\n",
              o.experts, static_cast<long long>(o.rows), static_cast<long long>(fewest), static_cast<long long>(most), static_cast<long long>(o.n), static_cast<long long>(o.k), weight_bytes / 1e6,
              flops / 1e9, sms);

  // Correctness: each variant's D against the first variant's, bitwise (the same MMAs in the same
  // order, except the variants that change the loads or drop the MMAs, whose D is not checked).
  std::vector<uint16_t> ref(d_elems), out(d_elems), again(d_elems);
  // One launch of variant v on D poisoned with bf16 NaN, its D copied to `dst`.
  auto run_poisoned = [&](int v, std::vector<uint16_t>& dst) {
    CHECK(cudaMemsetAsync(d, 0xFF, d_elems * 2, stream));
    CHECK_STATUS(run_variant(v, args, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(dst.data(), d, d_elems * 2, cudaMemcpyDeviceToHost));
    return 0;
  };
  for (size_t vi = 0; vi < o.variants.size(); ++vi) {
    const int v = o.variants[vi];
    std::vector<uint16_t>& first = vi == 0 ? ref : out;
    if (run_poisoned(v, first) != 0) return 1;
    // Run to run: the same variant again, bitwise (the tail split adds its partials in a fixed order).
    if (run_poisoned(v, again) != 0) return 1;
    size_t moved = 0;
    for (size_t i = 0; i < d_elems; ++i) moved += first[i] != again[i];
    std::printf("check %-16s run to run: %zu of %zu outputs differ\n", kVariants[v].name, moved, d_elems);
    if (vi == 0) {
      size_t nan = 0;
      for (uint16_t x : ref) nan += (x & 0x7F80) == 0x7F80 && (x & 0x7F);
      std::printf("check %-16s NaN or unwritten outputs: %zu of %zu\n", kVariants[v].name, nan, d_elems);
      continue;
    }
    const bool compared = kVariants[v].real;
    size_t diff = 0;
    double worst = 0, scale = 0;  // the largest difference, against the largest reference output
    for (size_t i = 0; i < d_elems; ++i) {
      diff += ref[i] != out[i];
      const double r = decode_bf16(ref[i]), g = decode_bf16(out[i]);
      scale = std::max(scale, std::fabs(r));
      worst = std::max(worst, std::isnan(g) ? INFINITY : std::fabs(g - r));
    }
    std::printf("check %-16s %s: %zu of %zu outputs differ from %s (largest difference %.3g of the largest output %.3g)\n",
                kVariants[v].name, compared ? "compared" : "not expected to match", diff, d_elems, kVariants[o.variants[0]].name,
                worst, scale);
  }

  // Timing: rounds x (every variant in turn: 2 warm-up launches, then reps launches between events).
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<std::vector<double>> us(o.variants.size());
  for (int r = 0; r < o.rounds; ++r) {
    for (size_t vi = 0; vi < o.variants.size(); ++vi) {
      for (int w = 0; w < 2; ++w) CHECK_STATUS(run_variant(o.variants[vi], args, stream));
      CHECK(cudaEventRecord(e0, stream));
      for (int i = 0; i < o.reps; ++i) CHECK_STATUS(run_variant(o.variants[vi], args, stream));
      CHECK(cudaEventRecord(e1, stream));
      CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      us[vi].push_back(1000.0 * ms / o.reps);
    }
  }
  const double base = *std::min_element(us[0].begin(), us[0].end());
  std::printf("%-16s %10s %10s %9s %9s %8s\n", "variant", "best_us", "worst_us", "TB/s", "TFLOP/s", "vs_first");
  for (size_t vi = 0; vi < o.variants.size(); ++vi) {
    const double best = *std::min_element(us[vi].begin(), us[vi].end());
    const double worst = *std::max_element(us[vi].begin(), us[vi].end());
    std::printf("%-16s %10.1f %10.1f %9.2f %9.1f %8.3f\n", kVariants[o.variants[vi]].name, best, worst,
                weight_bytes / best / 1e6, flops / best / 1e6, best / base);
  }

  // The traces: one launch of each traced variant in the list, after the timed ones, to
  // PREFIX-v<id>.bin.
  for (int traced : o.variants) {
    if (o.trace.empty() || !is_traced_variant(traced)) continue;
    const size_t words = static_cast<size_t>(sms) * kTraceRoles * kTraceEvents * kTraceWords;
    uint64_t* buf = nullptr;
    CHECK(cudaMalloc(&buf, words * 8));
    CHECK(cudaMemsetAsync(buf, 0, words * 8, stream));
    CHECK_STATUS(set_trace_buffer(traced, buf));
    CHECK_STATUS(run_variant(traced, args, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK_STATUS(set_trace_buffer(traced, nullptr));
    std::vector<uint64_t> h(words);
    CHECK(cudaMemcpy(h.data(), buf, words * 8, cudaMemcpyDeviceToHost));
    const std::string path = o.trace + "-v" + std::to_string(traced) + ".bin";
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
    const int32_t header[4] = {sms, kTraceEvents, kTraceWords, kTraceRoles};
    std::fwrite(header, sizeof(header), 1, f);
    std::fwrite(h.data(), 8, words, f);
    std::fclose(f);
    std::printf("trace: %s (variant %d: %d CTAs x %d roles x %d events x %d words)\n", path.c_str(), traced, sms, kTraceRoles,
                kTraceEvents, kTraceWords);
    CHECK(cudaFree(buf));
  }
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(d));
  CHECK(cudaFree(offsets));
  CHECK(cudaFree(scratch));
  return 0;
}

}  // namespace
}  // namespace moekit::bench_overlap

int main(int argc, char** argv) {
  moekit::bench_overlap::Options o;
  if (!moekit::bench_overlap::parse(argc, argv, o)) return 2;
  return moekit::bench_overlap::run(o);
}
