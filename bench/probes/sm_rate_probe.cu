// Per-SM stream rate probe: when every SM streams its own equal share of weights at once (the
// one-token decode kernel's static walk, src/cuda/moe/decode_token.cu), does each SM get the same
// bandwidth? docs/perf-notes.md step 50 (c) found 24 of 132 CTAs of that kernel 25-30% faster,
// in neighbouring pairs (whole TPCs); this probe asks the same of a plain stream, by SM id.
//
// One CTA per SM, 512 threads (the decode kernel's shape), each CTA reads `kMiBPerCta` MiB of its
// own with 16-byte loads that skip L1 (8 in flight per thread) and keeps a xor so nothing folds.
// Each CTA records its SM id (%smid) and %globaltimer after a barrier at its start and at its
// end. Every launch reads a fresh slice of a buffer larger than L2. Modes:
//   all      every CTA streams
//   half     every other CTA streams (the others exit at once): does an SM's rate rise when its
//            neighbours stop, as it would if a shared path (a TPC's or a GPC's) limits it
//
// It prints, per mode, the median over launches of each SM's time, the SMs more than 12% faster
// than the median SM, how many launches agree on that set, and one launch's CTA -> SM map.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/sm_rate_probe bench/probes/sm_rate_probe.cu && /tmp/sm_rate_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe_check.h"
#include "probe_mbarrier.h"  // now(): %globaltimer

constexpr int kThreads = 512, kInFlight = 8, kMiBPerCta = 4, kLaunches = 12;
constexpr int64_t kCtaBytes = int64_t{kMiBPerCta} << 20;

struct Stamp {
  unsigned smid;
  uint64_t start, end;
};

__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

__global__ void __launch_bounds__(kThreads, 1) stream_kernel(const uint4* base, int stride, Stamp* stamps, unsigned* sink) {
  if (blockIdx.x % stride != 0) return;
  __syncthreads();
  const uint64_t t0 = now();
  const uint4* p = base + static_cast<int64_t>(blockIdx.x) * (kCtaBytes / 16);
  constexpr int64_t kSteps = kCtaBytes / 16 / (kThreads * kInFlight);
  unsigned acc = 0;
  for (int64_t s = 0; s < kSteps; ++s) {
    uint4 v[kInFlight];
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) v[i] = load_stream(p + (s * kInFlight + i) * kThreads + threadIdx.x);
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) acc ^= v[i].x ^ v[i].y ^ v[i].z ^ v[i].w;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    stamps[blockIdx.x] = {smid, t0, now()};
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // keeps the loads; practically never stored
}

// The SM ids of (time, SM) pairs more than 12% faster than their median, sorted by id.
std::vector<unsigned> fast_sms(std::vector<std::pair<double, unsigned>> d) {
  std::sort(d.begin(), d.end());
  const double med = d[d.size() / 2].first;
  std::vector<unsigned> f;
  for (auto& [t, s] : d)
    if (t < 0.88 * med) f.push_back(s);
  std::sort(f.begin(), f.end());
  return f;
}

int main() {
  int dev = 0;
  CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  const int sms = prop.multiProcessorCount;
  const int64_t slice = kCtaBytes * sms;
  const int slices = 4;  // 4 x 132 x 4 MiB: each launch reads bytes the last three did not
  uint4* buf = nullptr;
  Stamp* st = nullptr;
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&buf, slice * slices));
  CHECK(cudaMemset(buf, 1, slice * slices));
  CHECK(cudaMalloc(&st, sizeof(Stamp) * sms));
  CHECK(cudaMalloc(&sink, 4));
  std::printf("# %s, %d SMs, %d MiB a CTA, %d threads, %d launches a mode\n", prop.name, sms, kMiBPerCta, kThreads, kLaunches);
  for (int stride : {1, 2}) {
    std::vector<std::vector<double>> us(1024);  // by SM id
    std::vector<Stamp> h(sms);
    std::vector<std::vector<unsigned>> fast_sets;
    std::vector<unsigned> map_cta_sm(sms);
    std::vector<double> spans;
    for (int l = 0; l < kLaunches + 2; ++l) {
      CHECK(cudaMemset(st, 0, sizeof(Stamp) * sms));
      stream_kernel<<<sms, kThreads>>>(buf + (l % slices) * (slice / 16), stride, st, sink);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      if (l < 2) continue;  // warm-up
      CHECK(cudaMemcpy(h.data(), st, sizeof(Stamp) * sms, cudaMemcpyDeviceToHost));
      uint64_t first = ~uint64_t{0}, last = 0;
      std::vector<std::pair<double, unsigned>> d;
      for (int c = 0; c < sms; c += stride) {
        const double t = (h[c].end - h[c].start) / 1000.0;
        us[h[c].smid].push_back(t);
        d.push_back({t, h[c].smid});
        first = std::min(first, h[c].start);
        last = std::max(last, h[c].end);
        map_cta_sm[c] = h[c].smid;
      }
      spans.push_back((last - first) / 1000.0);
      fast_sets.push_back(fast_sms(d));
    }
    std::sort(spans.begin(), spans.end());
    const double span_med = spans[spans.size() / 2];
    std::vector<std::pair<double, unsigned>> m;
    for (unsigned s = 0; s < us.size(); ++s) {
      if (us[s].empty()) continue;
      std::sort(us[s].begin(), us[s].end());
      m.push_back({us[s][us[s].size() / 2], s});
    }
    std::sort(m.begin(), m.end());
    const double med = m[m.size() / 2].first;
    const int64_t active = (sms + stride - 1) / stride;
    std::printf("\n== %s: %lld CTAs stream, span (first start to last end) median %.1f us = %.0f GB/s\n", stride == 1 ? "all" : "half",
                static_cast<long long>(active), span_med, active * kCtaBytes / span_med / 1e3);
    std::printf("per-SM time, median over launches: fastest %.1f, p10 %.1f, median %.1f, p90 %.1f, slowest %.1f us (median SM %.1f GB/s)\n",
                m.front().first, m[m.size() / 10].first, med, m[m.size() * 9 / 10].first, m.back().first, kCtaBytes / med / 1e3);
    const std::vector<unsigned> fast = fast_sms(m);
    int agree = 0;
    for (auto& f : fast_sets) agree += f == fast;
    std::printf("SMs more than 12%% faster than the median SM (%zu): ", fast.size());
    for (unsigned s : fast) std::printf("%u(%.1f) ", s, us[s][us[s].size() / 2]);
    std::printf("\nlaunches whose own fast set is that one: %d of %zu\n", agree, fast_sets.size());
    std::printf("per-SM time by SM id (us):");
    for (unsigned s = 0; s < us.size(); ++s)
      if (!us[s].empty()) std::printf("%s%u:%.1f", s % 12 == 0 ? "\n  " : " ", s, us[s][us[s].size() / 2]);
    std::printf("\nCTA -> SM (last launch):");
    for (int c = 0; c < sms; c += stride) std::printf("%s%d:%u", c % (12 * stride) == 0 ? "\n  " : " ", c, map_cta_sm[c]);
    std::printf("\n");
  }
  CHECK(cudaFree(buf));
  CHECK(cudaFree(st));
  CHECK(cudaFree(sink));
  return 0;
}
