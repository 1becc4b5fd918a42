#include "bench/cpu_ceilings.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace moekit::bench {
namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// 16 independent chains of x = x * m + a per thread (enough to cover the add latency and let the
// compiler vectorize), 2 flops per chain and iteration.
template <typename F>
double flop_rate(int reps) {
  constexpr int kChains = 16;
  constexpr int64_t kIters = int64_t{1} << 22;
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    int threads = 1;
    F sink = 0;
    const double t0 = now();
#pragma omp parallel reduction(+ : sink)
    {
#pragma omp single
      threads = omp_get_num_threads();
      F x[kChains];
      for (int c = 0; c < kChains; ++c) x[c] = static_cast<F>(1.0 + 1e-3 * c);
      const F m = static_cast<F>(0.999999), a = static_cast<F>(1e-6);
      for (int64_t i = 0; i < kIters; ++i)
        for (int c = 0; c < kChains; ++c) x[c] = x[c] * m + a;
      for (int c = 0; c < kChains; ++c) sink += x[c];
    }
    const double dt = now() - t0;
    volatile F keep = sink;  // keeps the loop
    (void)keep;
    best = std::max(best, 2.0 * kChains * static_cast<double>(kIters) * threads / dt);
  }
  return best;
}

}  // namespace

size_t cpu_bandwidth_bytes() {
  long llc = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  return std::max<size_t>(size_t{256} << 20, 4 * static_cast<size_t>(std::max(llc, 0L)));
}

double cpu_read_bandwidth(size_t bytes, int reps) {
  const int64_t n = static_cast<int64_t>(bytes / sizeof(uint64_t));
  std::vector<uint64_t> data(static_cast<size_t>(n));
  // First touch on the threads that read it (NUMA placement), with non-zero data.
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) data[static_cast<size_t>(i)] = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    uint64_t sum = 0;
    const double t0 = now();
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) sum += data[static_cast<size_t>(i)];
    const double dt = now() - t0;
    volatile uint64_t keep = sum;
    (void)keep;
    best = std::max(best, static_cast<double>(n * sizeof(uint64_t)) / dt);
  }
  return best;
}

double cpu_flop_rate_f64(int reps) { return flop_rate<double>(reps); }
double cpu_flop_rate_f32(int reps) { return flop_rate<float>(reps); }

}  // namespace moekit::bench
