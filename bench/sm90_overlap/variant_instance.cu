// One variant of the overlap experiment (overlap_variants.h), chosen by MOEKIT_OVERLAP_VARIANT:
// defines run_variant_<id>, which main.cu's run_variant dispatches to.
#include "cuda/moe/sm90_grouped_gemm_kernel.cuh"
#include "overlap_mainloops.cuh"
#include "overlap_variants.h"

#ifndef MOEKIT_OVERLAP_VARIANT
#error "MOEKIT_OVERLAP_VARIANT must be set (bench/sm90_overlap/CMakeLists.txt)"
#endif

namespace moekit::bench_overlap {

using namespace cuda::moe::sm90;

#if MOEKIT_OVERLAP_VARIANT == 0
#define TILE kM128N256C1x1
#define MAINLOOP PlainMainloop
#elif MOEKIT_OVERLAP_VARIANT == 1
#define TILE kM128N256C1x1
#define MAINLOOP L2Prefetch<4>::Mainloop
#elif MOEKIT_OVERLAP_VARIANT == 2
#define TILE kM128N256C1x1
#define MAINLOOP L2Prefetch<8>::Mainloop
#elif MOEKIT_OVERLAP_VARIANT == 3
#define TILE kM128N256C1x1
#define MAINLOOP NoMma
#elif MOEKIT_OVERLAP_VARIANT == 4
#define TILE kM128N256C1x1
#define MAINLOOP L2Hot
#elif MOEKIT_OVERLAP_VARIANT == 5
#define TILE kM128N256C1x1
#define MAINLOOP Traced
#define TRACED 1
#elif MOEKIT_OVERLAP_VARIANT == 6
#define TILE kM64N128C1x1
#define MAINLOOP PlainMainloop
#elif MOEKIT_OVERLAP_VARIANT == 7
#define TILE kM64N128C1x1
#define MAINLOOP L2Prefetch<4>::Mainloop
#elif MOEKIT_OVERLAP_VARIANT == 8
#define TILE kM128N128C1x1
#define MAINLOOP PlainMainloop
#elif MOEKIT_OVERLAP_VARIANT == 9
#define TILE kM128N128C1x1
#define MAINLOOP L2Prefetch<4>::Mainloop
#elif MOEKIT_OVERLAP_VARIANT == 10
#define TILE kM128N256C1x1
#define MAINLOOP BulkB
#elif MOEKIT_OVERLAP_VARIANT == 11
#define TILE kM64N128C1x1
#define MAINLOOP BulkB
#elif MOEKIT_OVERLAP_VARIANT == 12
#define TILE kM128N128C1x1
#define MAINLOOP BulkB
#elif MOEKIT_OVERLAP_VARIANT == 13
#define TILE kM64N128C1x2
#define MAINLOOP PlainMainloop
#elif MOEKIT_OVERLAP_VARIANT == 14
#define TILE kM128N256C1x2
#define MAINLOOP PlainMainloop
#elif MOEKIT_OVERLAP_VARIANT == 15
#define TILE kM128N256C1x1
#define MAINLOOP PlainMainloop
#define PLAIN 1
#elif MOEKIT_OVERLAP_VARIANT == 16
#define TILE kM128N256C1x1
#define MAINLOOP Traced
#define EPILOGUE TracedEpilogue
#define PLAIN 1
#define TRACED 1
#elif MOEKIT_OVERLAP_VARIANT >= 17 && MOEKIT_OVERLAP_VARIANT <= 22
#define TILE kM128N256C1x1
#define PLAIN 1
#if MOEKIT_OVERLAP_VARIANT % 2 == 0
#define MAINLOOP Traced
#define TRACED 1
#else
#define MAINLOOP PlainMainloop
#endif
#if MOEKIT_OVERLAP_VARIANT == 17
#define EPILOGUE Stores4
#elif MOEKIT_OVERLAP_VARIANT == 18
#define EPILOGUE TracedStores4
#elif MOEKIT_OVERLAP_VARIANT == 19
#define EPILOGUE Stores8
#elif MOEKIT_OVERLAP_VARIANT == 20
#define EPILOGUE TracedStores8
#elif MOEKIT_OVERLAP_VARIANT == 21
#define EPILOGUE DelayedStore
#else
#define EPILOGUE TracedDelayedStore
#endif
#elif MOEKIT_OVERLAP_VARIANT == 23 || MOEKIT_OVERLAP_VARIANT == 24
#define TRAITS ClusterM2Traits
#define MAINLOOP PlainMainloop
#if MOEKIT_OVERLAP_VARIANT == 23
#define PLAIN 1
#endif
#elif MOEKIT_OVERLAP_VARIANT == 27
#define TRAITS TallTraits<192, 256, true>
#define MAINLOOP PlainMainloop
#elif MOEKIT_OVERLAP_VARIANT == 28
#define TRAITS TallTraits<192, 128, true>
#define MAINLOOP PlainMainloop
#elif MOEKIT_OVERLAP_VARIANT == 29
#define TRAITS TallTraits<256, 128, false>
#define MAINLOOP PlainMainloop
#elif MOEKIT_OVERLAP_VARIANT == 30
#define TRAITS TallTraits<128, 256, true>
#define MAINLOOP PlainMainloop
#else
#error "unknown MOEKIT_OVERLAP_VARIANT"
#endif

// The 128 x 256 cooperative tile in 2 x 1 clusters (not a library tile since step 14: the group
// scheduler pads every expert with an odd M-tile count by a whole tile).
struct ClusterM2Traits : Cooperative {
  using TileShape = Shape<_128, _256, _64>;
  using ClusterShape = Shape<_2, _1, _1>;
};
// The tall tiles (overlap_variants.h, 27-30): the cooperative kernel without a cluster at M x N x 64,
// the consumer warpgroups side by side along N (the library's SideBySideMma) or CUTLASS's 2 x 1.
template <int M, int N, bool SideBySide>
struct TallTraits : Cooperative {
  using TileShape = Shape<Int<M>, Int<N>, _64>;
  using ClusterShape = Shape<_1, _1, _1>;
  static constexpr bool kSideBySide = SideBySide;
};
#ifndef TRAITS
#define TRAITS TileTraits<cuda::moe::Sm90Tile::TILE>
#endif

#define MOEKIT_CAT2(a, b) a##b
#define MOEKIT_CAT(a, b) MOEKIT_CAT2(a, b)
#ifndef EPILOGUE
#define EPILOGUE PlainEpilogueAsBuilt
#endif
#ifdef PLAIN
constexpr bool kGated = false;
#else
constexpr bool kGated = true;
#endif
static_assert(is_plain_variant(MOEKIT_OVERLAP_VARIANT) == !kGated, "overlap_variants.h's plain flag must match this variant's epilogue");
#ifdef TRACED
static_assert(is_traced_variant(MOEKIT_OVERLAP_VARIANT), "overlap_variants.h's traced flag must be set for this variant");
#else
static_assert(!is_traced_variant(MOEKIT_OVERLAP_VARIANT), "overlap_variants.h's traced flag is set for an untraced variant");
#endif

Status MOEKIT_CAT(run_variant_, MOEKIT_OVERLAP_VARIANT)(const cuda::moe::Sm90GemmArgs& a, void* stream) {
  return launch_typed<cutlass::bfloat16_t, cutlass::bfloat16_t, TRAITS, kGated, MAINLOOP, EPILOGUE>(a, stream);
}

#ifdef TRACED
// This translation unit's trace pointer (g_overlap_trace is static: each unit has its own).
Status MOEKIT_CAT(set_trace_buffer_, MOEKIT_OVERLAP_VARIANT)(uint64_t* buffer) {
  if (cudaMemcpyToSymbol(g_overlap_trace, &buffer, sizeof(buffer)) != cudaSuccess)
    return Status::CudaError("cudaMemcpyToSymbol(g_overlap_trace) failed");
  return Status::Ok();
}
#endif

}  // namespace moekit::bench_overlap
