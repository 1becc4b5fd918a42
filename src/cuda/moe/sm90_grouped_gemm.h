// The sm_90a grouped GEMM (CUTLASS 4.x collectives: TMA loads, wgmma, warp-specialized persistent
// cooperative or ping-pong kernel, ptr-array grouped problem shapes) for the prefill expert GEMMs. Plain C++: no
// CUDA or CUTLASS headers, so the stage code can call it. Built only when MOEKIT_CUDA_ARCHS holds 90a
// (then MOEKIT_HAS_SM90_GEMM=1 is defined for moekit_cuda's users); runs only on compute capability
// 9.0 (Hopper).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/moe/moe_launch.h"
#include "moekit/status.h"

namespace moekit::cuda::moe {

// D[rows of expert e, :] = A[rows, :] . B[e]^T for every local expert e, the rows given by the device
// array expert_offsets (int64, [experts + 1], offsets[0] = 0, non-decreasing, offsets[experts] <=
// max_rows). A [max_rows, k] row-major; B [experts, n, k] row-major (each expert's weight is n x k,
// k contiguous: a "TN" GEMM); D [max_rows, n] row-major. Rows of D past offsets[experts] are not
// written. Experts with zero rows are skipped.
// The kernel's configurations: four tile shapes, the first two with two cluster shapes.
//   kM128N256  128 x 256 x 64 tiles, cooperative schedule (two consumer warpgroups on one tile);
//   kM64N128   64 x 128 x 128 tiles, ping-pong schedule (two consumer warpgroups on alternate
//              tiles, one's epilogue under the other's mainloop): for a few dozen rows per expert,
//              where a 128-row tile would be mostly padding.
//   kM128N128  128 x 128 x 128 tiles, cooperative: up to 128 rows an expert in one M tile (each
//              weight tile read by one CTA), with kM64N128's k-block. Built to test whether reading
//              256 contiguous bytes of each weight row a stage (kM128N256 reads 128) streams the
//              weights faster: it does not (H100, docs/perf-notes.md step 18). It won for small
//              experts at 33-64 rows each on an H100 (Qwen3 T=1024 -4%) and was the heuristic's
//              choice there until the 64 x 128 tile measured faster on the H200 (step 20 h); a
//              tuner candidate since.
// C1x2 clusters multicast each A (routed rows) tile to the two CTAs of an M tile; C1x1 multicasts
// nothing. No 2 x 1 cluster (each B tile multicast to the two CTAs of an N tile, the shape PyTorch's
// grouped_mm builds): CUTLASS's group scheduler rounds each expert's tiles up to the cluster along
// each mode and runs the padding tiles in full, so 2 x 1 computes an empty M tile for every expert
// with an odd M-tile count (every expert below one tile of rows). It measured slower than 1 x 1 or
// 1 x 2 at every point tried on the H200 (docs/perf-notes.md step 14).
//   kM192N128  192 x 128 x 64 tiles, cooperative with the two consumer warpgroups side by side along
//              N (each on all 192 rows): an expert of 129-192 rows in one M tile, so each weight
//              tile streams once for it instead of twice (docs/perf-notes.md step 36).
//   kM192N256  192 x 256 x 64 tiles, laid out as kM192N128 (each warpgroup 192 x 128: 192
//              accumulators a thread), with m64n128 wgmmas where kM192N128 issues m64n64 ones (which
//              cost it nearly a 128 x 256 tile's time for 3/4 of the MMAs, docs/perf-notes.md steps
//              41, 43). The stages run it for the tall tails only (gemm1.tall_tail / gemm2.tall_tail
//              = wide; it is not a gemm tile knob value); it runs any GEMM as the others do. No tail
//              split (its partial does not fit a slot); its plain epilogue stores through one
//              shared-memory stage.
enum class Sm90Tile : uint8_t { kM128N256C1x1, kM128N256C1x2, kM64N128C1x1, kM64N128C1x2, kM128N128C1x1, kM192N128C1x1, kM192N256C1x1 };
inline constexpr Sm90Tile kSm90TileList[] = {Sm90Tile::kM128N256C1x1, Sm90Tile::kM128N256C1x2, Sm90Tile::kM64N128C1x1,
                                             Sm90Tile::kM64N128C1x2, Sm90Tile::kM128N128C1x1, Sm90Tile::kM192N128C1x1,
                                             Sm90Tile::kM192N256C1x1};

// The order in which the CTAs of the persistent grid take their tiles (sm90_grouped_gemm_kernel.cuh,
// ClaimedOrderScheduler). Every order gives the same bits: each output tile is one CTA's.
//   kFixed    CUTLASS's: CTA c takes tiles c, c + grid, c + 2 grid, ... .
//   kClaimed  the same tile order, handed out from a global counter as the CTAs get to them; 1 x 1
//             clusters only (the others keep the fixed order).
//   kAuto     claimed on a tile without a cluster when every expert's rows fit one M tile of it (64
//             on kM64N128C1x1, 128 on the cooperative kM128N256C1x1 and kM128N128C1x1), else fixed;
//             decided on the device from the expert offsets, so a captured graph follows the
//             routing of each replay. Measured on H100s (docs/perf-notes.md steps 24, 25): claimed
//             takes 1-5% off each GEMM where every expert fits one M tile and costs up to 13% where
//             experts hold several (it reads weight tiles twice, or on the cooperative tile loses
//             its lockstep).
enum class Sm90TileOrder : uint8_t { kFixed, kClaimed, kAuto };

// The tail split (sm90_grouped_gemm_kernel.cuh, ClaimedOrderScheduler::split_plan): the tiles left
// for the last round after the whole rounds (tiles % grid of them) run stream-K, their k-tiles dealt
// evenly to the CTAs; each piece but a tile's last writes its float32 partial to the scratch, and the
// last adds them in k order before the epilogue. So the bits are the same from run to run (though
// not the unsplit tile's: the adds are grouped differently). Cooperative tiles without a cluster
// (kM128N256C1x1, kM128N128C1x1) under the fixed order only; decided on the device from the expert
// offsets, so a captured graph follows the routing of each replay.
//   kOff     never.
//   kAuto    where it measured faster (docs/perf-notes.md step 32): 1 to 8 whole rounds, at most
//            half a round left, and at least 16 k-tiles a tile (so each piece has 8 or more).
//   kAlways  wherever the CTAs outnumber the tiles left and each piece can have 8 k-tiles (tests).
enum class Sm90TailSplit : uint8_t { kOff, kAuto, kAlways };

// Where the claimed order's four 8-byte words (the claim counter, the lookahead, the claims the
// last launch made, the tail split's word) lie in the scratch: right after the per-group <M, N, K>
// shapes (three ints each), 256-byte aligned. After a launch the counter is 0 again and the third
// word holds the number of claims made (0 under the fixed order), or under a tail split the CTAs
// that shared the tail, which the tests read.
inline constexpr size_t sm90_claim_words_offset(int experts) {
  return (static_cast<size_t>(experts) * 3 * sizeof(int) + 255) / 256 * 256;
}

// gemm2's first weight stages streamed under gemm1's tail, through programmatic dependent launch
// (docs/perf-notes.md step 27 c; the stages choose it, cuda_stages.cpp sm90_overlap).
//   kNone    setup kernel and GEMM in order, without PDL (the default).
//   kFirst   gemm1 of a pair: both setups launched before it (one setup kernel for both GEMMs:
//            Sm90SetupJob), the GEMM launched with PDL; it waits for the setups, then lets gemm2
//            launch.
//   kSecond  gemm2 of a pair: no setup (gemm1's stage ran it, two launches back), the GEMM launched
//            with PDL; each CTA streams the weights of its first stages, then waits for gemm1, then
//            loads A.
//   kBeside  the tall-tail launch of a GEMM in two parts (Sm90RowPart::kTail), after its head
//            launched as kFirst: launched with PDL, so its CTAs take the SMs the head's last round
//            leaves; it loads at once (its rows and setup were complete before the head let it
//            launch, and the head writes none of them), and every thread waits for the head as it
//            exits, so that this launch completes after the head does and the kernel after it
//            finds both parts' rows.
enum class Sm90Overlap : uint8_t { kNone, kFirst, kSecond, kBeside };

// Which rows of each expert a launch takes (docs/perf-notes.md step 41): all of them (kAll), or one
// of two parts that two launches on two tiles take between them. An expert of r rows spans
// q = ceil(r / 128) M tiles of 128 rows; where q >= 2 and the last of them holds at most
// kSm90TallTailMaxLastRows rows, the expert's last 128 + (r - 128 (q - 1)) rows (129-192) are the
// tall tail, which a 192-row tile (sm90_is_tail_tile) runs as one M tile (kTail), and its first
// 128 (q - 2) rows, whole 128-row tiles, are the head, which a 128-row tile runs (kHead); every
// other expert is all head. Random routing leaves about half the experts with a nearly empty last
// tile where the rows an expert average a multiple of 128 (GPT-OSS-120B T=4096: 128 +- 11 rows);
// a 128-row tile computes that tile in full and the 192-row tile a third of padding at most.
enum class Sm90RowPart : uint8_t { kAll, kHead, kTail };
inline constexpr int64_t kSm90HeadTileRows = 128;
// The tiles the heads run on: those of kSm90HeadTileRows rows.
inline constexpr bool sm90_is_head_tile(Sm90Tile t) {
  return t == Sm90Tile::kM128N256C1x1 || t == Sm90Tile::kM128N256C1x2 || t == Sm90Tile::kM128N128C1x1;
}
// The tiles the tails run on: those of 192 rows.
inline constexpr bool sm90_is_tail_tile(Sm90Tile t) { return t == Sm90Tile::kM192N128C1x1 || t == Sm90Tile::kM192N256C1x1; }
inline constexpr int64_t kSm90TallTailMaxLastRows = 64;

#if defined(__CUDACC__)
#define MOEKIT_SM90_HD __host__ __device__
#else
#define MOEKIT_SM90_HD
#endif
// The tall tail's rows of an expert of `rows` rows (0 when it has none; the head is the rest), the
// one rule both launches' setups and the tests use.
MOEKIT_SM90_HD constexpr int64_t sm90_tall_tail_rows(int64_t rows) {
  if (rows <= kSm90HeadTileRows) return 0;
  const int64_t last = rows - (rows - 1) / kSm90HeadTileRows * kSm90HeadTileRows;  // 1..128
  return last <= kSm90TallTailMaxLastRows ? kSm90HeadTileRows + last : 0;
}
#undef MOEKIT_SM90_HD

// The tail split's area in the scratch (each GEMM's own): kSm90SplitFlags int flags (a CTA's
// partial is ready when its flag is not 0), then a partial tile of kSm90SplitSlotFloats float32 a
// CTA. Its word (Sm90SetupJob::split, the fourth claim word) is the area's address, 16-byte aligned,
// with kSm90SplitAlways in bit 0 for Sm90TailSplit::kAlways.
inline constexpr int kSm90SplitFlags = 1024;
inline constexpr size_t kSm90SplitFlagBytes = kSm90SplitFlags * sizeof(int);
inline constexpr size_t kSm90SplitSlotFloats = 128 * 256;  // the largest cooperative tile, 128 x 256
inline constexpr unsigned long long kSm90SplitAlways = 1;
inline constexpr unsigned long long kSm90SplitAddressMask = ~15ull;

// One GEMM's per-group setup, as launch_sm90_setups runs it: the problem shapes, pointers, strides
// and claim words that the CUTLASS kernel reads, written from the expert offsets. Filled by
// launch_sm90_grouped_gemm when Sm90GemmArgs::setup_job is set (the layout of the scratch is the
// tile's), so that two GEMMs' setups can run as one launch.
struct Sm90SetupJob {
  const int64_t* offsets = nullptr;
  int experts = 0;
  int64_t max_rows = 0;
  int n = 0, k = 0, n_out = 0;  // n_out: D's row stride (n / 2 after the gated epilogue)
  const unsigned char* a = nullptr;
  const unsigned char* b = nullptr;
  unsigned char* d = nullptr;
  int ab_bytes = 2, d_bytes = 2;  // element sizes of A and B, and of D
  int* shapes = nullptr;          // <M, N, K> a group
  unsigned long long* words = nullptr;  // the claim words (counter, order word, last claims)
  const void** ptr_a = nullptr;
  const void** ptr_b = nullptr;
  void** ptr_d = nullptr;
  int64_t* stride_a = nullptr;  // each stride's one dynamic mode: the row stride
  int64_t* stride_b = nullptr;
  int64_t* stride_d = nullptr;
  unsigned long long order = 0;  // the order word (claimed_order_word)
  // The tail split's word (the comment on kSm90SplitFlags says what it holds; the setup kernel
  // zeroes the flags), 0 for no split.
  unsigned long long split = 0;
  Sm90RowPart part = Sm90RowPart::kAll;  // which rows of each expert (Sm90RowPart)
};

// Runs `count` (1 or 2) setup jobs as one kernel, on `stream`; with `pdl` launched with programmatic
// dependent launch, each CTA waiting for the kernel before first (it may still read this scratch).
// Refuses, naming the job and field, a job without experts, with a non-positive size or a null array.
Status launch_sm90_setups(const Sm90SetupJob* jobs, int count, bool pdl, void* stream);

struct Sm90GemmArgs {
  Sm90Tile tile = Sm90Tile::kM128N256C1x1;
  Elem type = Elem::kBF16;    // A and B: kBF16 or kF16
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  Elem d_type = Elem::kF32;   // kF32, or the same as `type` (built with MOEKIT_SM90_GEMM_SAME_D=1, the default)
  const int64_t* expert_offsets = nullptr;
  int experts = 0;
  int64_t max_rows = 0;       // rows of A and D (the bound on offsets[experts])
  int64_t n = 0;              // % 8 == 0
  int64_t k = 0;              // % 8 == 0
  // gemm1 with its gated activation in the epilogue (gated_activation: a gated moekit::Activation;
  // -1 for a plain GEMM). B's gate and up rows are interleaved (gate j at row 2j, up j at 2j + 1) and
  // D gets act(gate + bias, up + bias) for each row: n / 2 columns, row stride n / 2, in the input
  // type (d_type == type). The bias, if any, is [experts, n] (interleaved like B) of bias_type.
  int gated_activation = -1;
  float alpha = 1.0f, limit = 0.0f;  // kSwiGLUClamped's
  const void* bias = nullptr;
  Elem bias_type = Elem::kF32;
  void* scratch = nullptr;    // sm90_gemm_scratch_bytes(...) bytes, 256-byte aligned, device memory
  size_t scratch_bytes = 0;
  int sm_count = 0;           // the device's multiprocessor count (the persistent grid's size)
  // The order in which the persistent CTAs take their tiles (Sm90TileOrder, above). The stages set
  // it from the gemm1.order / gemm2.order knobs.
  Sm90TileOrder tile_order = Sm90TileOrder::kFixed;
  Sm90Overlap overlap = Sm90Overlap::kNone;
  bool run_setup = true;  // enqueue the per-group setup kernel
  bool run_gemm = true;   // enqueue the GEMM
  // The tail split (Sm90TailSplit, above). The stages set it from the gemm1.tail / gemm2.tail knobs.
  Sm90TailSplit tail_split = Sm90TailSplit::kOff;
  // With run_setup: write the setup's job here instead of launching it (launch_sm90_setups).
  Sm90SetupJob* setup_job = nullptr;
  // Which rows of each expert this launch takes (Sm90RowPart): kHead on a 128-row tile, kTail on a
  // 192-row one; the two launches of a pair together write every routed row once.
  Sm90RowPart row_part = Sm90RowPart::kAll;
};

// The GEMM `a` describes (on a 128-row tile: sm90_is_head_tile) in two launches (Sm90RowPart): the
// heads on a.tile with a.scratch, the tall tails on `tail_tile` (a 192-row tile: sm90_is_tail_tile)
// with `tail_scratch` (sm90_gemm_scratch_bytes, 256-byte aligned, its own), both setups as one
// kernel. With `beside` (PDL) the tails launch beside the heads (Sm90Overlap::kFirst, kBeside) and
// the head runs without the tail split (a.tail_split applies to it only without `beside`), else
// after them. Every routed row is written once. `a` must not be part of an overlapped pair
// (a.overlap kNone) nor a part already (a.row_part kAll), and must run its own setup and GEMM.
Status launch_sm90_grouped_gemm_in_parts(const Sm90GemmArgs& a, Sm90Tile tail_tile, void* tail_scratch, size_t tail_scratch_bytes,
                                         bool beside, void* stream);

// Bytes of the tail split's area in the scratch for a grid of `sm_count` CTAs (at most
// kSm90SplitFlags): the flags, then a partial tile (128 KB) a CTA.
inline constexpr size_t sm90_split_tail_bytes(int sm_count) {
  return kSm90SplitFlagBytes + static_cast<size_t>(sm_count) * kSm90SplitSlotFloats * sizeof(float);
}

// Device scratch for `experts` groups: the per-group problem shapes, pointers and strides, the tail
// split's area (sm90_split_tail_bytes), plus CUTLASS's workspace (the per-SM TMA descriptors). The same for every d_type; depends on experts
// and sm_count only (n, k and type are taken for future tile choices).
size_t sm90_gemm_scratch_bytes(int experts, int64_t n, int64_t k, Elem type, int sm_count);

// Enqueues the per-group setup kernel and the CUTLASS kernel on `stream` (a cudaStream_t). No
// synchronization, no allocation: capturable in a CUDA graph (the scratch must outlive the graph).
// The scratch is written by every launch: launches that may overlap (other streams) need their own.
Status launch_sm90_grouped_gemm(const Sm90GemmArgs& a, void* stream);

}  // namespace moekit::cuda::moe
