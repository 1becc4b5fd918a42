// An L2 prefetch of the layer's first weight bytes, issued by the layer's first kernel (routing).
//
// Between the layer's start and gemm1's first weight load run the routing, the maps and the expand:
// at T = 64 .. 1024 they move a few MB and take about 10 µs, during which the DRAM is idle although
// gemm1 will stream hundreds of MB (docs/perf-notes.md step 27). The weights are never written by
// the layer, so the routing kernel can ask the L2 for gemm1's first weight bytes before it even
// waits for the kernel before it: gemm1's first tiles (the lowest experts, in CUTLASS's tile order
// and the claimed order alike) then find them in L2. `cp.async.bulk.prefetch.L2` has no destination
// and no completion to wait for, so the issuing thread goes on at once and the CTA may exit while
// the lines are still on their way.
#pragma once

#include <cstdint>

namespace moekit::cuda::moe {

// The bytes one bulk prefetch asks for: large pieces (the TMA unit pays per copy, about 30 ns,
// docs/perf-notes.md step 9), spread over the lanes of one warp and the kernel's CTAs.
constexpr int64_t kL2PrefetchPiece = 64 * 1024;

// Lane `lane` of one warp of CTA `cta` (of `ctas`) prefetches its pieces of [base, base + bytes).
// base must be 16-byte aligned; bytes is rounded down to 16.
__device__ __forceinline__ void l2_prefetch_share(const void* base, int64_t bytes, int cta, int ctas, int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (base == nullptr || bytes < 16) return;
  const int64_t pieces = (bytes + kL2PrefetchPiece - 1) / kL2PrefetchPiece;
  for (int64_t i = static_cast<int64_t>(cta) * 32 + lane; i < pieces; i += static_cast<int64_t>(ctas) * 32) {
    const int64_t begin = i * kL2PrefetchPiece;
    const int64_t size = (bytes - begin < kL2PrefetchPiece ? bytes - begin : kL2PrefetchPiece) / 16 * 16;
    if (size > 0)
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(static_cast<const char*>(base) + begin), "r"(static_cast<uint32_t>(size))
                   : "memory");
  }
#else
  (void)base, (void)bytes, (void)cta, (void)ctas, (void)lane;
#endif
}

}  // namespace moekit::cuda::moe
