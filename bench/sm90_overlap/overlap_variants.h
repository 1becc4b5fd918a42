// The overlap experiment's variants (docs/perf-notes.md step 19): each is one gated sm_90a
// configuration with one mainloop, built in its own translation unit (variant_instance.cu with
// MOEKIT_OVERLAP_VARIANT = its id) so that the CUTLASS instantiations compile in parallel.
#pragma once

#include <cstdint>

#include "cuda/moe/sm90_grouped_gemm.h"

namespace moekit::bench_overlap {

struct Variant {
  int id;
  const char* name;
  bool plain = false;   // the plain (TMA-store) epilogue, D [rows, n]; else the gated one, D [rows, n / 2]
  bool traced = false;  // writes a trace (main.cu's --trace)
  bool real = true;     // its loads and MMAs are the GEMM's, so main.cu compares its D with the first variant's
};
// id: tile, mainloop.
inline constexpr Variant kVariants[] = {
    {0, "128x256"},          // kM128N256C1x1, CUTLASS's mainloop
    {1, "128x256+pf4"},      // L2 prefetch 4 k-tiles ahead
    {2, "128x256+pf8"},      // 8 ahead
    {3, "128x256-nomma", false, false, false},    // the loads alone
    {4, "128x256-l2hot", false, false, false},    // the MMAs with k-tile 0's operands for every k-tile
    {5, "128x256-traced", false, true},  // CUTLASS's loop re-written with timestamps
    {6, "64x128"},           // kM64N128C1x1 (ping-pong)
    {7, "64x128+pf4"},
    {8, "128x128"},          // kM128N128C1x1
    {9, "128x128+pf4"},
    {10, "128x256-bulkB", false, false, false},   // B as contiguous blocks, one bulk copy a stage (output not valid)
    {11, "64x128-bulkB", false, false, false},
    {12, "128x128-bulkB", false, false, false},
    {13, "64x128c1x2"},      // kM64N128C1x2: A multicast to the two CTAs of an N pair
    {14, "128x256c1x2"},     // kM128N256C1x2
    // The plain (TMA-store) epilogue, as gemm2 runs it: D is [rows, n] (the gated ones write n / 2).
    {15, "128x256-plain", true},                 // kM128N256C1x1, CUTLASS's mainloop and epilogue
    {16, "128x256-plain-traced", true, true},    // 15 with the traced mainloop and the traced epilogue
    {17, "plain-stores4", true},                 // 15 with four epilogue subtiles in flight (CUTLASS builds two)
    {18, "plain-stores4-traced", true, true},
    {19, "plain-stores8", true},                 // eight: a whole 128 x 256 tile (the mainloop keeps three stages)
    {20, "plain-stores8-traced", true, true},
    {21, "plain-delayed", true},                 // each subtile's TMA store issued after the next one's smem writes
    {22, "plain-delayed-traced", true, true},
    // The 2 x 1 cluster on the 128 x 256 tile: each weight tile multicast to the two CTAs of an M pair
    // (what cuBLAS picks at prefill). CUTLASS's group scheduler pads each expert's M tiles to even.
    {23, "plain-c2x1", true},
    {24, "gated-c2x1"},
    // The tail split (Sm90TailSplit::kAlways: stream-K over the last round): 15's and 0's kernels
    // with the argument set; no instantiation of their own (main.cu sets it).
    {25, "plain-streamk", true},
    {26, "gated-streamk"},
    // Tall tiles (docs/perf-notes.md step 36): an expert of 129-192 rows in one M tile, so that its
    // weight tiles stream once instead of twice. CUTLASS's cooperative split gives each consumer
    // warpgroup half the rows, which needs a multiple of 128; these set the two side by side along N
    // instead (each on all the rows: 3 x 64-row wgmmas a k-step), through the library's
    // SideBySideMma (sm90_grouped_gemm_kernel.cuh). Gated (gemm1) only.
    {27, "192x256-1x2"},     // each warpgroup 192 x 128: 192 accumulators a thread
    {28, "192x128-1x2"},     // each warpgroup 192 x 64 (m64n64 wgmmas)
    {29, "256x128"},         // CUTLASS's own cooperative 256 x 128 (2 x 1: each warpgroup 128 x 128)
    {30, "128x256-1x2"},     // the control: the library's tile with the warpgroups side by side
};
inline constexpr int kVariantCount = sizeof(kVariants) / sizeof(kVariants[0]);
// A variant's id is its index, so that the flags below can be looked up by id.
inline constexpr bool ids_are_indices() {
  for (int i = 0; i < kVariantCount; ++i)
    if (kVariants[i].id != i) return false;
  return true;
}
static_assert(ids_are_indices(), "kVariants lists every id once, in order");

// The traced variants' buffer: per CTA and role (producer, consumer warpgroup 0, the consumer's
// tiles) kTraceEvents events of kTraceWords uint64 each (overlap_mainloops.cuh says what they hold).
constexpr int kTraceRoles = 3;
constexpr int kTraceEvents = 1024;
constexpr int kTraceWords = 4;
inline constexpr bool is_plain_variant(int id) { return kVariants[id].plain; }
inline constexpr bool is_traced_variant(int id) { return kVariants[id].traced; }

// Launches variant `id` (a.d_type == a.type == bf16; the epilogue its `plain` flag names).
Status run_variant(int id, const cuda::moe::Sm90GemmArgs& a, void* stream);
// Points traced variant `id`'s trace at `buffer` (device memory; nullptr stops tracing;
// kInvalidArgument for a variant that does not trace).
Status set_trace_buffer(int id, uint64_t* buffer);

}  // namespace moekit::bench_overlap
