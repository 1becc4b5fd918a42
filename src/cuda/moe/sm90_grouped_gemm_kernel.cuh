// The sm_90a grouped GEMM's CUTLASS side: one configuration per Sm90Tile (tile shape, schedule,
// cluster) and epilogue (a plain TMA store, or the gated activation of sm90_gated_epilogue.cuh), the
// per-group setup's job (which sm90_setup.cu's kernel runs), and the launch. Included only by
// sm90_tile_instance.cu, which CMake compiles twice per tile (MOEKIT_SM90_TILE, MOEKIT_SM90_GATED) so
// that the CUTLASS instantiations, about a minute of nvcc each, build in parallel.
//
// What the host passes to CUTLASS (checked against CUTLASS 4.2.0's code):
//  - GroupProblemShape{experts, device shapes, host shapes = nullptr}. Without host shapes the group
//    tile scheduler launches sm_count CTAs (rounded to the cluster) and walks the groups on the
//    device (PersistentTileSchedulerSm90Group::get_tiled_cta_shape_mnl); a group with M = 0 has zero
//    tiles and is skipped by the scheduler's prefix sum. can_implement then checks only the mode, the
//    rank and beta == 0 (the per-group alignment checks need host shapes; launch_sm90_grouped_gemm
//    checks n, k and the pointers' alignment itself: all groups share n, k and the strides).
//  - The scheduler rounds each group's tile count up to the cluster along each mode
//    (sm90_tile_scheduler_group.hpp: problem_blocks_m = round_up(ctas_along_m, cluster m)), and the
//    kernel runs the whole mainloop on such a padding tile. So a 2 x 1 cluster would compute an empty
//    M tile for every expert with an odd tile count; the 1 x 2 clusters pad N instead, which is the
//    same for every expert (nothing where N is a multiple of two tiles).
//  - Workspace: the per-SM TMA descriptors of the mainloop (A, B) and epilogue (D); its size depends
//    on sm_count only. initialize() does no stream work for this kernel (the group scheduler, the
//    mainloop and the LinearCombination fusion have empty initialize_workspace), builds the Params on
//    the host (cuTensorMapEncodeTiled through the driver entry point, a host call) and sets the
//    kernel's dynamic shared memory attribute (not a stream operation). run() is one
//    cudaLaunchKernelExC with the cluster attribute. So the pair is graph-capturable.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/group_array_problem_shape.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

#include "cuda/cuda_check.h"
#include "cuda/moe/pdl.cuh"
#include "cuda/moe/sm90_gated_epilogue.cuh"
#include "cuda/moe/sm90_grouped_gemm_tiles.h"

#if !defined(CUTLASS_ARCH_MMA_MODIFIABLE_TMA_SM90_SUPPORTED)
#error "the sm_90a grouped GEMM needs CUDA >= 12.3 (CUTLASS_ARCH_MMA_MODIFIABLE_TMA_SM90_SUPPORTED)"
#endif

namespace moekit::cuda::moe::sm90 {

using namespace cute;

// <M, N, K> per group. A type of our own (CUTLASS's, unchanged) so that the tile scheduler selector
// below can give our kernels the claimed-order scheduler.
// `overlap` (Sm90Overlap as an int) rides along in the kernel parameters, where every thread can read
// it before the kernel touches global memory (ClaimedOrderScheduler below).
struct MoeGroupShape : cutlass::gemm::GroupProblemShape<Shape<int, int, int>> {
  int overlap = 0;
};
using ProblemShape = MoeGroupShape;
using UnderlyingShape = ProblemShape::UnderlyingProblemShape;

constexpr size_t kAlign = 256;
__host__ __device__ constexpr size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// The claimed tile order's three words lie in the scratch right after the group shapes (ScratchLayout):
// the claim counter; the order word (claimed_order_word, below), 0 meaning the fixed order; the
// claims the last launch made. The setup kernel writes all three. A launch makes exactly as many
// claims as it has tiles (each CTA that starts on a tile ends on one failed claim, and the
// successful claims hand out the tiles past the grid), so the CTA whose claim is the last one copies
// the counter into the third word and zeroes it: a launch without its setup (an overlapped gemm2
// replayed alone, Sm90Overlap) claims from 0 again. The fourth word is the tail split's
// (Sm90SetupJob::split; 0: no split), also written by the setup kernel.
constexpr int kClaimWords = 4;
static_assert(sizeof(UnderlyingShape) == 3 * sizeof(int), "sm90_claim_words_offset counts three ints a group shape");
__host__ __device__ constexpr size_t claim_words_offset(int experts) { return sm90_claim_words_offset(experts); }
static_assert(claim_words_offset(5) == align_up(5 * sizeof(UnderlyingShape)));

// The order word: the lookahead in the low half (0: the fixed order); in the high half, for the
// automatic order, the most rows a group may hold for the claimed order to run (one M tile), 0 for
// no such condition.
__host__ __device__ constexpr unsigned long long order_word(uint32_t lookahead, uint32_t max_group_rows) {
  return static_cast<unsigned long long>(lookahead) | (static_cast<unsigned long long>(max_group_rows) << 32);
}

// CUTLASS's group scheduler gives CTA c the tiles c, c + grid, c + 2 grid, ...: fixed in advance, so
// a CTA that runs slower or faster than the rest drifts away from the CTAs that share its weight
// tile (the M tiles of one N column are neighbours in the order), and the last wave ends when the
// slowest CTA does. The claimed order keeps CUTLASS's tile order but hands out tiles from a global
// counter: the scheduler warp claims a CTA's next tile once every consumer has read the response
// `lookahead` tiles back, so tiles are claimed in the order the CTAs get to them. The lookahead is as
// short as the mainloop producer allows, since each CTA's first claims are made at once at the start
// and so spread the first waves' tiles over `lookahead` waves: 1 for the cooperative kernel (its
// producer reads the next tile while the consumers work on this one), 2 for the ping-pong kernel
// (its two warpgroups hold two tiles). Only for 1 x 1 clusters: the CTAs of a cluster must get the
// same tile, so the host writes lookahead 0 for the others.
//
// The scheduler is also the first thing every thread of CUTLASS's ptr-array kernels constructs, before
// it touches global memory (its constructor reads the group shapes). So its first base is where gemm1
// of an overlapped pair (Sm90Overlap::kFirst, launched with PDL) waits for the setup kernels just
// before it and then lets gemm2 launch: gemm2's CTAs take each SM as gemm1's CTA on it exits.
// The tall-tail launch beside it (Sm90Overlap::kBeside) waits for the head at the other end: the
// scheduler lives until the kernel's last statement, so its destructor is each thread's exit.
struct OverlapEntry {
  OverlapEntry() = default;
  CUTLASS_DEVICE explicit OverlapEntry(int overlap) : wait_at_exit_(overlap == static_cast<int>(Sm90Overlap::kBeside)) {
    if (overlap == static_cast<int>(Sm90Overlap::kFirst)) {
      pdl_wait();
      pdl_launch_dependents();
    }
  }
  CUTLASS_HOST_DEVICE ~OverlapEntry() {
#if defined(__CUDA_ARCH__)
    if (wait_at_exit_) pdl_wait();
#endif
  }

 private:
  bool wait_at_exit_ = false;
};

template <class GroupShape, int Stages>
class ClaimedOrderScheduler : private OverlapEntry,
                              public cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90Group<GroupShape, Stages> {
  using Base = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90Group<GroupShape, Stages>;
  uint32_t lookahead_ = ~0u;  // ~0: not read yet; 0: the fixed order
  uint64_t tiles_ = 0;         // the launch's tiles (1 x 1 clusters: no padding), read with the lookahead

  // The tiles of all groups, M and N tiled by the CTA shape. The whole warp.
  CUTLASS_DEVICE static uint64_t count_tiles(const GroupShape& shapes, int cta_m, int cta_n) {
    uint64_t tiles = 0;
    for (int g = static_cast<int>(cutlass::canonical_lane_idx()); g < shapes.groups(); g += 32) {
      const auto shape = shapes.problem_shapes[g];
      tiles += static_cast<uint64_t>((cute::get<0>(shape) + cta_m - 1) / cta_m) * static_cast<uint64_t>((cute::get<1>(shape) + cta_n - 1) / cta_n);
    }
    for (int o = 16; o > 0; o /= 2) tiles += __shfl_xor_sync(0xffffffff, tiles, o);
    return tiles;
  }

 public:
  // The lookahead the order word asks for; 0 (the fixed order) under the automatic order when some
  // group holds more rows than the word allows. Every CTA reads the same shapes (written by the
  // setup kernel before this kernel reads any), so every CTA takes the same order. The whole warp.
  CUTLASS_DEVICE static uint32_t read_lookahead(const GroupShape& shapes, const unsigned long long* words) {
    const unsigned long long word = reinterpret_cast<const volatile unsigned long long*>(words)[1];
    const uint32_t lookahead = static_cast<uint32_t>(word);
    const uint32_t max_rows = static_cast<uint32_t>(word >> 32);
    if (lookahead == 0 || max_rows == 0) return lookahead;
    bool over = false;
    for (int g = static_cast<int>(cutlass::canonical_lane_idx()); g < shapes.groups(); g += 32)
      over |= static_cast<uint32_t>(cute::get<0>(shapes.problem_shapes[g])) > max_rows;
    return __any_sync(0xffffffff, over) ? 0u : lookahead;
  }

  ClaimedOrderScheduler() = default;
  CUTLASS_DEVICE ClaimedOrderScheduler(typename Base::Params const& params, typename Base::SchedulerResponse* response)
      : OverlapEntry(params.problem_shapes_.overlap), Base(params, response) {}

  using typename Base::WorkTileInfo;

  // The CTA's first tile (every thread calls this, before the roles split). Under a tail split the
  // fixed order's units replace CUTLASS's tiles (split_plan).
  template <class ClusterShape>
  CUTLASS_DEVICE auto initial_work_tile_info(ClusterShape cluster_shape) {
    // The tail split's word is loaded beside CUTLASS's own first loads, so that a launch without a
    // split pays no extra latency at its start.
    const unsigned long long split = reinterpret_cast<const volatile unsigned long long*>(claim_words(this->scheduler_params.problem_shapes_))[3];
    auto work = Base::initial_work_tile_info(cluster_shape);
    if (split == 0) return work;
    read_words();
    if (participants_ == 0) return work;
    // CUTLASS's tile lookup walks the groups forward only, and the plan's first unit may lie before
    // the tile it just looked up (a tail that starts in the first round): start over from a freshly
    // constructed scheduler.
    static_cast<Base&>(*this) = Base(this->scheduler_params, this->response_ptr_);
    // The third claim word is free under the fixed order: the CTAs that share the tail, for the tests.
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)
      reinterpret_cast<volatile unsigned long long*>(claim_words(this->scheduler_params.problem_shapes_))[2] = participants_;
    // CUTLASS's first linear index for this CTA (its constructor's; the member is private).
    unit_ = this->scheduler_params.raster_order_ == Base::RasterOrder::AlongN
                ? uint64_t(blockIdx.x) + uint64_t(blockIdx.y) * uint64_t(gridDim.x)
                : uint64_t(blockIdx.x) * uint64_t(gridDim.y) + uint64_t(blockIdx.y);
    return work_for_unit(unit_);
  }

  template <class Pipeline, class PipelineState>
  CUTLASS_DEVICE auto advance_to_next_work(Pipeline& pipeline, PipelineState state, uint32_t advance_count = 1) {
    auto& shapes = this->scheduler_params.problem_shapes_;
    auto* words = claim_words(shapes);
    read_words();
    if (participants_ != 0) {  // the fixed order over the tail split's units (the claimed order does not split)
      unit_ += grid_ctas() * advance_count;
      return publish(pipeline, state, work_for_unit(unit_));  // work_for_unit: the whole warp (it shuffles)
    }
    if (lookahead_ == 0 || lookahead_ >= static_cast<uint32_t>(Stages))
      return Base::advance_to_next_work(pipeline, state, advance_count);
    if (state.count() >= lookahead_) {
      // The producer state of slot (state - lookahead) one round on: waiting on it waits until every
      // consumer has released that slot (a pure wait on its empty barrier; nothing is acquired).
      PipelineState older = state;
      older.advance(static_cast<uint32_t>(Stages) - lookahead_);
      pipeline.producer_acquire(older);
    }
    unsigned long long claim = 0;
    if (cutlass::canonical_lane_idx() == 0) claim = atomicAdd(words, 1ull);
    claim = __shfl_sync(0xffffffff, claim, 0);
    // The first tiles went by block index (initial_work_tile_info); the claims number the rest.
    const uint64_t grid = grid_ctas();
    auto work = this->get_current_work_for_linear_idx(grid + claim);  // the whole warp: it shuffles
    // The launch's last claim resets the counter (kClaimWords says why it is the last).
    if (claim + 1 == tiles_ && cutlass::canonical_lane_idx() == 0) words[2] = atomicExch(words, 0ull);
    return publish(pipeline, state, work);
  }

  // Hands `work` to the CTA's consumers through the scheduler pipeline, as CUTLASS's own
  // advance_to_next_work does. The whole warp.
  template <class Pipeline, class PipelineState>
  CUTLASS_DEVICE auto publish(Pipeline& pipeline, PipelineState state, WorkTileInfo const& work) {
    pipeline.producer_acquire(state);
    if (cute::elect_one_sync()) {
      this->response_ptr_[state.index()] = work;
      cutlass::arch::fence_view_async_shared();
      pipeline.producer_commit(state);
    }
    return cute::make_tuple(work, true);
  }

  // ---- The tail split (Sm90TailSplit; docs/perf-notes.md steps 31, 32) ----
  // Stream-K over the last wave: the rem = tiles % grid tiles left after the whole rounds have
  // rem * k k-tiles (k a tile's); laid end to end they are dealt to P CTAs (P <= grid, each at least
  // kMinPiece k-tiles), CTA c taking [c W / P, (c + 1) W / P) of W = rem * k. As rem < grid that range
  // is at most one tile long, so a CTA holds at most two pieces: the end of one tile and the start of
  // the next. The piece holding a tile's last k-tile reduces it (adds the others' partials and runs
  // the epilogue); every other piece writes its float32 partial to its CTA's slot and raises its
  // CTA's flag. A CTA runs its non-reducing piece first, so a reducing piece only ever waits on
  // pieces that wait on nothing: no chains across CTAs, no deadlock (the grid is resident).
  //
  // A piece carries its place in WorkTileInfo::is_valid_tile, which the kernel only tests for zero:
  // bit 30 set; bits 0-9 its first k-tile, 10-19 its k-tiles, 20-27 its CTA, 28 whether it reduces.
  // Whole tiles keep CUTLASS's 1. The kernel asks the static functions below by name.
  static constexpr uint32_t kPieceFlag = 1u << 30;
  static constexpr uint32_t kMinPiece = 8;  // k-tiles: a piece's fixed costs (pipeline fill, partial) stay small
  struct Piece {
    bool split;
    uint32_t k_start, k_count, cta;
    bool reduces;
  };
  CUTLASS_HOST_DEVICE static Piece piece_of(WorkTileInfo const& w) {
    const uint32_t v = static_cast<uint32_t>(w.is_valid_tile);
    if ((v & kPieceFlag) == 0) return {false, 0, 0, 0, true};
    return {true, v & 1023u, (v >> 10) & 1023u, (v >> 20) & 255u, ((v >> 28) & 1u) != 0};
  }

  template <class ProblemShape_MNKL, class TileShape>
  CUTLASS_HOST_DEVICE static int get_work_k_tile_count(WorkTileInfo const& w, ProblemShape_MNKL problem_shape, TileShape tile_shape) {
    const Piece p = piece_of(w);
    return p.split ? static_cast<int>(p.k_count) : Base::get_work_k_tile_count(w, problem_shape, tile_shape);
  }
  CUTLASS_HOST_DEVICE static uint32_t get_work_k_tile_start(WorkTileInfo const& w) { return piece_of(w).k_start; }
  // Only a tile's reducing piece stores it.
  CUTLASS_HOST_DEVICE static bool compute_epilogue(WorkTileInfo const& w, typename Base::Params const&) {
    return piece_of(w).reduces;
  }

  // The consumer warpgroups (256 threads after the producer warpgroup) of a piece. A non-reducing
  // piece writes its accumulators to its CTA's slot and raises the CTA's flag to its first k-tile + 1.
  // A reducing piece that does not start at k-tile 0 adds the partials of CTAs c - 1, c - 2, ... (the
  // k-tiles just before its own, and so on back), each once its flag is up, stopping at the piece
  // that starts at k-tile 0: always in that order, so the bits do not depend on timing. Then it
  // lowers those flags for the next launch.
  template <class FrgTensorC>
  CUTLASS_DEVICE static void fixup(typename Base::Params const& params, WorkTileInfo const& w, FrgTensorC& accumulators,
                                   uint32_t, uint32_t) {
    constexpr int kConsumers = 2 * cutlass::NumThreadsPerWarpGroup;
    constexpr int kValues = decltype(cute::size(typename FrgTensorC::layout_type{}))::value;
    static_assert(kValues % 4 == 0, "the partials move as float4");
    // A tile whose partial is larger than a slot (128 x 256 float32) never splits: setup_job leaves
    // its split word 0 (tile_fits_split_slot).
    if constexpr (kValues * kConsumers > kSm90SplitSlotFloats) return;
    const Piece p = piece_of(w);
    if (!p.split || (p.reduces && p.k_start == 0)) return;
    auto* words = claim_words(params.problem_shapes_);
    char* area = reinterpret_cast<char*>(static_cast<uintptr_t>(reinterpret_cast<volatile unsigned long long*>(words)[3] & kSm90SplitAddressMask));
    auto* flags = reinterpret_cast<int*>(area);
    float4* slots = reinterpret_cast<float4*>(area + kSm90SplitFlagBytes);
    const int t = static_cast<int>(threadIdx.x) - cutlass::NumThreadsPerWarpGroup;  // 0 .. 255
    // CTA c's slot: float4 i of thread t at [i][t].
    auto slot = [&](uint32_t c) { return slots + static_cast<size_t>(c) * (kValues / 4) * kConsumers; };
    using cutlass::arch::NamedBarrier;
    constexpr uint32_t kBarrier = static_cast<uint32_t>(cutlass::arch::ReservedNamedBarriers::StreamkBarrier0);
    if (!p.reduces) {
      float4* mine = slot(p.cta);
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < kValues / 4; ++i)
        mine[i * kConsumers + t] = make_float4(accumulators(4 * i), accumulators(4 * i + 1), accumulators(4 * i + 2), accumulators(4 * i + 3));
      __threadfence();
      NamedBarrier::sync(kConsumers, kBarrier);
      if (t == 0) asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(flags + p.cta), "r"(static_cast<int>(p.k_start) + 1) : "memory");
      return;
    }
    uint32_t c = p.cta;
    int start = 0;
    do {
      --c;
      do {
        asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(start) : "l"(flags + c) : "memory");
      } while (start == 0);
      const float4* theirs = slot(c);
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < kValues / 4; ++i) {
        const float4 v = __ldcg(theirs + i * kConsumers + t);
        accumulators(4 * i) += v.x;
        accumulators(4 * i + 1) += v.y;
        accumulators(4 * i + 2) += v.z;
        accumulators(4 * i + 3) += v.w;
      }
    } while (start != 1);
    NamedBarrier::sync(kConsumers, kBarrier);  // every thread has read every flag
    if (t < static_cast<int>(p.cta - c)) flags[c + static_cast<uint32_t>(t)] = 0;
  }

 private:
  // The persistent grid's CTAs (CUTLASS's total_grid_size_, which is private).
  CUTLASS_DEVICE static uint64_t grid_ctas() { return uint64_t(gridDim.x) * uint64_t(gridDim.y) * uint64_t(gridDim.z); }

  CUTLASS_DEVICE static unsigned long long* claim_words(const GroupShape& shapes) {
    return reinterpret_cast<unsigned long long*>(reinterpret_cast<char*>(shapes.problem_shapes) + claim_words_offset(shapes.groups()));
  }

  // The lookahead, the tile count and the split plan, once per thread. The whole warp.
  CUTLASS_DEVICE void read_words() {
    if (lookahead_ != ~0u) return;
    auto& shapes = this->scheduler_params.problem_shapes_;
    auto* words = claim_words(shapes);
    lookahead_ = read_lookahead(shapes, words);
    tiles_ = count_tiles(shapes, this->scheduler_params.cta_shape_.m(), this->scheduler_params.cta_shape_.n());
    split_plan(reinterpret_cast<const volatile unsigned long long*>(words)[3]);
  }

  // The fixed order over units: whole tiles for the full rounds (tiles / grid of them per CTA), then
  // two units a CTA for the tail's pieces (work_for_unit). `word` is the tail split's word
  // (Sm90SetupJob::split). No split under the claimed order, when P <= rem (each CTA would hold a
  // whole tile anyway), past the encodings' limits (256 CTAs, 1023 k-tiles), or for Sm90TailSplit::
  // kAuto outside where it measured faster (H100, docs/perf-notes.md step 32): with many rounds the
  // CTAs drift apart by more than a tail tile, which then hides in the drift while the pieces' partials
  // and waits still cost (GPT-OSS gemm1 at 99 rounds +2%); with no whole round the GEMM streams its
  // weights and splitting K only adds partials (Mixtral gemm2 at 1-77 rows an expert +6-10%); with a
  // tail of more than half a round there is little to balance (Mixtral gemm2, 100 of 132: level).
  CUTLASS_DEVICE void split_plan(unsigned long long word) {
    participants_ = 0;
    const uint64_t grid = grid_ctas();
    if (word == 0 || lookahead_ != 0 || tiles_ == 0 || grid > 256) return;
    const auto& shapes = this->scheduler_params.problem_shapes_;
    const int cta_k = this->scheduler_params.cta_shape_.k();
    k_tiles_ = static_cast<uint32_t>((cute::get<2>(shapes.problem_shapes[0]) + cta_k - 1) / cta_k);
    const uint64_t rem = tiles_ % grid, rounds = tiles_ / grid;
    if (rem == 0 || k_tiles_ > 1023) return;
    const bool always = (word & kSm90SplitAlways) != 0;
    if (!always && (rounds < 1 || rounds > 8 || 2 * rem > grid || k_tiles_ < 2 * kMinPiece)) return;
    const uint64_t participants = cute::min(grid, rem * k_tiles_ / kMinPiece);
    if (participants <= rem) return;
    participants_ = static_cast<uint32_t>(participants);
    whole_ = tiles_ - rem;
    tail_k_tiles_ = rem * k_tiles_;
  }

  // Unit u of the plan as a work tile (invalid past the last). Units whole_ + c and whole_ + grid + c
  // are CTA c's first and second tail pieces: the non-reducing one first. CUTLASS's tile lookup only
  // walks the groups forward (get_current_work_for_linear_idx keeps the group it reached), so a CTA
  // with two pieces looks up the earlier tile (its second piece's) with its first and keeps it. Units
  // come in increasing order to each thread's scheduler. The whole warp.
  CUTLASS_DEVICE WorkTileInfo work_for_unit(uint64_t u) {
    if (u < whole_) return this->get_current_work_for_linear_idx(u);
    const uint64_t grid = grid_ctas();
    const uint64_t which = (u - whole_) / grid, c = (u - whole_) % grid;
    if (which > 1 || c >= participants_) return WorkTileInfo::invalid_work_tile();
    const uint64_t k = k_tiles_, lo = c * tail_k_tiles_ / participants_, hi = (c + 1) * tail_k_tiles_ / participants_;
    const uint64_t first = lo / k, last = (hi - 1) / k;  // the tail tiles the range touches
    uint64_t start, end;  // the piece's k-tiles [start, end)
    WorkTileInfo w;
    if (first == last) {
      if (which == 1) return WorkTileInfo::invalid_work_tile();
      w = this->get_current_work_for_linear_idx(whole_ + first);
      start = lo - first * k, end = hi - first * k;
    } else if (which == 0) {
      second_ = this->get_current_work_for_linear_idx(whole_ + first);
      w = this->get_current_work_for_linear_idx(whole_ + last);
      start = 0, end = hi - last * k;  // the start of the later tile: never reduces
    } else {
      w = second_;
      start = lo - first * k, end = k;
    }
    if (w.is_valid() && !(start == 0 && end == k)) {
      const uint32_t reduces = end == k ? 1u : 0u;
      w.is_valid_tile = static_cast<int32_t>(kPieceFlag | static_cast<uint32_t>(start) | (static_cast<uint32_t>(end - start) << 10) |
                                             (static_cast<uint32_t>(c) << 20) | (reduces << 28));
    }
    return w;
  }

  uint32_t participants_ = 0;  // P, the CTAs that share the tail (0: no split)
  uint32_t k_tiles_ = 0;       // k-tiles a whole tile
  uint64_t whole_ = 0;         // units (= tiles) before the tail
  uint64_t tail_k_tiles_ = 0;  // W = rem * k_tiles_
  uint64_t unit_ = 0;          // this thread's current unit under the split plan
  WorkTileInfo second_{};      // the tile of this CTA's second tail piece, looked up with its first
};

}  // namespace moekit::cuda::moe::sm90

// CUTLASS picks the scheduler of a grouped kernel by this selector; the problem shape type of our
// kernels (MoeGroupShape) selects the claimed-order scheduler, every other type CUTLASS's own.
namespace cutlass::gemm::kernel::detail {
template <class TileShape, class ClusterShape, uint32_t SchedulerPipelineStageCount>
struct TileSchedulerSelector<GroupScheduler, arch::Sm90, TileShape, ClusterShape, SchedulerPipelineStageCount,
                             moekit::cuda::moe::sm90::MoeGroupShape> {
  using Scheduler = moekit::cuda::moe::sm90::ClaimedOrderScheduler<moekit::cuda::moe::sm90::MoeGroupShape,
                                                                   static_cast<int>(SchedulerPipelineStageCount)>;
};
}  // namespace cutlass::gemm::kernel::detail

namespace moekit::cuda::moe::sm90 {

// Two consumer warpgroups on one tile (the tile's M split between them).
struct Cooperative {
  using KernelSchedule = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative;
  using EpilogueSchedule = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;
};
// Two consumer warpgroups on alternate tiles: one's epilogue runs under the other's mainloop.
struct PingPong {
  using KernelSchedule = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong;
  using EpilogueSchedule = cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong;
};

// Sm90Tile -> CUTLASS configuration (sm90_grouped_gemm.h says why these clusters).
template <Sm90Tile T>
struct TileTraits;
template <>
struct TileTraits<Sm90Tile::kM128N256C1x1> : Cooperative {
  using TileShape = Shape<_128, _256, _64>;
  using ClusterShape = Shape<_1, _1, _1>;
};
template <>
struct TileTraits<Sm90Tile::kM128N256C1x2> : Cooperative {
  using TileShape = Shape<_128, _256, _64>;
  using ClusterShape = Shape<_1, _2, _1>;
};
template <>
struct TileTraits<Sm90Tile::kM64N128C1x1> : PingPong {
  using TileShape = Shape<_64, _128, _128>;
  using ClusterShape = Shape<_1, _1, _1>;
};
template <>
struct TileTraits<Sm90Tile::kM64N128C1x2> : PingPong {
  using TileShape = Shape<_64, _128, _128>;
  using ClusterShape = Shape<_1, _2, _1>;
};
// 128 rows like kM128N256, with a k-block of 128 like kM64N128 (sm90_grouped_gemm.h says where it
// wins).
template <>
struct TileTraits<Sm90Tile::kM128N128C1x1> : Cooperative {
  using TileShape = Shape<_128, _128, _128>;
  using ClusterShape = Shape<_1, _1, _1>;
};

// 192 rows: an expert of 129-192 rows in one M tile, so each of its weight tiles streams once, not
// twice (docs/perf-notes.md step 36). The consumer warpgroups sit side by side along N (each on all
// 192 rows, three 64-row wgmmas a k-step: SideBySideMma), since CUTLASS's cooperative split of the
// rows between them needs a multiple of 128. The plain epilogue stores 64-row subtiles
// (Config::SideBySidePlainEpilogueOf), the gated one partitions by the TiledMma as for any tile.
template <>
struct TileTraits<Sm90Tile::kM192N128C1x1> : Cooperative {
  using TileShape = Shape<_192, _128, _64>;
  using ClusterShape = Shape<_1, _1, _1>;
  static constexpr bool kSideBySide = true;
};
// The same at N = 256, for the tall tails (sm90_grouped_gemm.h): each warpgroup 192 x 128, m64n128
// wgmmas (kM192N128's are m64n64, kM128N256's m64n256), 192 accumulators a thread. ptxas (CUDA
// 13.0): 168 registers and 872 bytes of spill stores with the gated epilogue (704 on kM128N256), 516
// with the plain one; mainloop stages 4 gated, 3 plain with 16-bit D, 2 with float32 D.
template <>
struct TileTraits<Sm90Tile::kM192N256C1x1> : Cooperative {
  using TileShape = Shape<_192, _256, _64>;
  using ClusterShape = Shape<_1, _1, _1>;
  static constexpr bool kSideBySide = true;
};

// CUTLASS's collective mainloop as the builder made it, but with the two consumer warpgroups side by
// side along N (a 1 x 2 atom layout of wgmmas N / 2 wide), each on all of the tile's rows. The kernel,
// the gated epilogue and the tail split take the TiledMma from the mainloop and partition by it.
template <class Built>
using SideBySideMma = cutlass::gemm::collective::CollectiveMma<
    typename Built::DispatchPolicy, typename Built::TileShape, typename Built::ElementA, typename Built::StrideA,
    typename Built::ElementB, typename Built::StrideB,
    decltype(cute::make_tiled_mma(
        cute::GMMA::ss_op_selector<typename Built::ElementA, typename Built::ElementB, float,
                                   Shape<_64, Int<cute::size<1>(typename Built::TileShape{}) / 2>, _64>,
                                   cute::GMMA::Major::K, cute::GMMA::Major::K>(),
        Layout<Shape<_1, _2, _1>>{})),
    typename Built::GmemTiledCopyA, typename Built::SmemLayoutAtomA, typename Built::SmemCopyAtomA,
    typename Built::TransformA, typename Built::GmemTiledCopyB, typename Built::SmemLayoutAtomB,
    typename Built::SmemCopyAtomB, typename Built::TransformB>;
template <class Traits>
constexpr bool side_by_side() {
  if constexpr (requires { Traits::kSideBySide; }) return Traits::kSideBySide;
  return false;
}

// Gated: gemm1 with the gated activation in the epilogue (sm90_gated_epilogue.cuh), which writes
// from registers (no shared memory: the mainloop gets the epilogue's share for its stages).
// Mainloop maps CUTLASS's collective mainloop to the one the kernel runs: OverlapMainloop (below,
// the library's) adds gemm2's weights-first start; PlainMainloop keeps CUTLASS's as it is, and the
// experiments in bench/sm90_overlap derive from it (the kernel calls its load() and mma() by
// name, so a derived type that redefines one changes that side only).
template <class BuiltMainloop>
using PlainMainloop = BuiltMainloop;
// Likewise for the plain (TMA-store) epilogue: the library runs CUTLASS's as built; experiments may
// wrap it (bench/sm90_overlap's traced epilogue).
template <class BuiltEpilogue>
using PlainEpilogueAsBuilt = BuiltEpilogue;

// CUTLASS's ptr-array mainloop, but for gemm2 of an overlapped pair (Sm90Overlap::kSecond): on a
// CTA's first tile its producer issues the weight (B) loads of the first stages, then waits for
// gemm1 (griddepcontrol.wait: gemm1 wrote A), then A's loads. Each stage's barrier expects A's and
// B's bytes together (producer_acquire), so the order of the two copies changes nothing else.
template <class Base>
struct OverlapMainloop : Base {
  using typename Base::GmemTiledCopyA;
  using typename Base::GmemTiledCopyB;
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::SmemLayoutA;
  using typename Base::SmemLayoutB;
  using typename Base::TensorStorage;
  using DispatchPolicy = typename Base::DispatchPolicy;

  struct Arguments : Base::Arguments {
    int overlap = 0;
  };
  struct Params : Base::Params {
    int overlap = 0;
  };

  template <class ProblemShape>
  static constexpr Params to_underlying_arguments(ProblemShape problem_shapes, Arguments const& args, void* workspace) {
    Params p;
    static_cast<typename Base::Params&>(p) = Base::to_underlying_arguments(problem_shapes, args, workspace);
    p.overlap = args.overlap;
    return p;
  }

  template <class TensorA, class TensorB, class TensorMapA, class TensorMapB, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(Params const& params, MainloopPipeline pipeline, PipelineState smem_pipe_write,
                           cute::tuple<TensorA, TensorB> const& load_inputs,
                           cute::tuple<TensorMapA, TensorMapB> const& input_tensormaps, BlockCoord const& blk_coord,
                           KTileIterator k_tile_iter, int k_tile_count, int thread_idx, uint32_t block_rank_in_cluster,
                           TensorStorage& shared_tensors) {
    using namespace cute;
    if (params.overlap != static_cast<int>(Sm90Overlap::kSecond) || waited_) {
      Base::load(params, pipeline, smem_pipe_write, load_inputs, input_tensormaps, blk_coord, k_tile_iter, k_tile_count,
                 thread_idx, block_rank_in_cluster, shared_tensors);
      return;
    }
    waited_ = true;
    if (!cute::elect_one_sync()) return;
    // As CUTLASS's load(): the stages' views, this block's slices and the multicast masks.
    auto sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), SmemLayoutA{});  // (BLK_M,BLK_K,PIPE)
    auto sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), SmemLayoutB{});  // (BLK_N,BLK_K,PIPE)
    constexpr uint32_t cluster_shape_x = get<0>(typename DispatchPolicy::ClusterShape());
    uint2 cluster_local_block_id = {block_rank_in_cluster % cluster_shape_x, block_rank_in_cluster / cluster_shape_x};
    auto block_tma_a = params.tma_load_a.get_slice(cluster_local_block_id.y);
    auto block_tma_b = params.tma_load_b.get_slice(cluster_local_block_id.x);
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    auto tAgA = block_tma_a.partition_S(get<0>(load_inputs)(_, _, m_coord, _, l_coord));  // (TMA,TMA_M,TMA_K,k)
    auto tAsA = block_tma_a.partition_D(sA);                                              // (TMA,TMA_M,TMA_K,PIPE)
    auto tBgB = block_tma_b.partition_S(get<1>(load_inputs)(_, _, n_coord, _, l_coord));  // (TMA,TMA_N,TMA_K,k)
    auto tBsB = block_tma_b.partition_D(sB);                                              // (TMA,TMA_N,TMA_K,PIPE)
    uint16_t mcast_mask_a = 0, mcast_mask_b = 0;
    if constexpr (cute::is_same_v<GmemTiledCopyA, SM90_TMA_LOAD_MULTICAST>) {
      auto block_layout = Layout<typename DispatchPolicy::ClusterShape>{};
      for (int n = 0; n < size<1>(block_layout); ++n) mcast_mask_a |= (uint16_t(1) << block_layout(cluster_local_block_id.x, n, Int<0>{}));
    }
    if constexpr (cute::is_same_v<GmemTiledCopyB, SM90_TMA_LOAD_MULTICAST>) {
      auto block_layout = Layout<typename DispatchPolicy::ClusterShape>{};
      for (int m = 0; m < size<0>(block_layout); ++m) mcast_mask_b |= (uint16_t(1) << block_layout(m, cluster_local_block_id.y, Int<0>{}));
    }
    auto copy_a = [&](PipelineState st, auto k) {
      copy(params.tma_load_a.with(get<0>(input_tensormaps), *pipeline.producer_get_barrier(st), mcast_mask_a), tAgA(_, _, _, k),
           tAsA(_, _, _, st.index()));
    };
    auto copy_b = [&](PipelineState st, auto k) {
      copy(params.tma_load_b.with(get<1>(input_tensormaps), *pipeline.producer_get_barrier(st), mcast_mask_b), tBgB(_, _, _, k),
           tBsB(_, _, _, st.index()));
    };
    // The first stages are all free on a CTA's first tile: their weights at once.
    const int ahead = min(k_tile_count, static_cast<int>(size<2>(SmemLayoutA{})));
    PipelineState st = smem_pipe_write;
    KTileIterator it_b = k_tile_iter;  // (the iterator has no assignment: one copy per pass)
    for (int i = 0; i < ahead; ++i, ++st, ++it_b) {
      pipeline.producer_acquire(st);
      copy_b(st, *it_b);
    }
    pdl_wait();  // gemm1 has completed: its rows (this GEMM's A) are written
    st = smem_pipe_write;
    KTileIterator it = k_tile_iter;
    for (int i = 0; i < ahead; ++i, ++st, ++it) copy_a(st, *it);
    CUTLASS_PRAGMA_NO_UNROLL
    for (int left = k_tile_count - ahead; left > 0; --left, ++st, ++it) {
      pipeline.producer_acquire(st);
      copy_a(st, *it);
      copy_b(st, *it);
    }
  }

 private:
  bool waited_ = false;  // the first tile's wait is done (the producer warp's copy of the mainloop)
};

template <typename ElementAB, typename ElementD, class Traits, bool Gated = false,
          template <class> class Mainloop = OverlapMainloop, template <class> class EpilogueWrap = PlainEpilogueAsBuilt>
struct Config {
  static constexpr bool kGated = Gated;
  using TileShape = typename Traits::TileShape;
  using ClusterShape = typename Traits::ClusterShape;
  using KernelSchedule = typename Traits::KernelSchedule;
  using EpilogueSchedule = typename Traits::EpilogueSchedule;
  using LayoutA = cutlass::layout::RowMajor;     // A: M x K, K contiguous
  using LayoutB = cutlass::layout::ColumnMajor;  // B: K x N, K contiguous (our [N, K] row-major)
  using LayoutD = cutlass::layout::RowMajor;     // D: M x N, N contiguous
  static constexpr int kAlignAB = 128 / cutlass::sizeof_bits<ElementAB>::value;  // 16 bytes
  static constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;
  using ElementAccumulator = float;

  // No C operand (void): D = alpha * acc with alpha = 1, beta = 0. Built only for the plain
  // configurations (::type is named only there).
  using PlainFusion = cutlass::epilogue::fusion::LinearCombination<ElementD, ElementAccumulator, void, ElementAccumulator>;
  struct PlainEpilogueOf {
    using type = EpilogueWrap<typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
        cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator, void, LayoutD*, kAlignD,
        ElementD, LayoutD*, kAlignD, EpilogueSchedule, PlainFusion>::CollectiveOp>;
  };
  // The side-by-side tiles (192 rows): CUTLASS's builder takes a cooperative subtile of 128 rows
  // only, which does not divide 192. The same ptr-array TMA-store collective is built here by hand
  // with 64-row subtiles as wide as the tile, so each subtile holds both warpgroups' columns and all
  // 256 consumer threads store it: a fragment of 64 * N / 256 values a thread (the builder's policy
  // would assume 128 threads for a 64-row subtile), two store stages as the builder gives (three C
  // stages, unallocated without a C operand), one store descriptor per consumer warpgroup. At 256
  // wide a subtile is 32 KB (64 KB in float32), so the 192 x 256 tile stores through one stage: two
  // would leave its mainloop (56 KB a stage) two stages in 16-bit and one in float32.
  struct SideBySidePlainEpilogueOf {
    static constexpr int kN = cute::size<1>(TileShape{});
    static constexpr int kStagesD = kN > 128 ? 1 : 2;
    using EpilogueTile = Shape<_64, Int<kN>>;
    using Policy = cutlass::epilogue::Sm90PtrArrayTmaWarpSpecialized<3, kStagesD, 64 * kN / 256, false, false, 2>;
    using type = EpilogueWrap<typename cutlass::epilogue::collective::detail::Sm90TmaBuilderImpl<
        TileShape, EpilogueTile, ElementAccumulator, ElementAccumulator, void, LayoutD*, kAlignD, ElementD, LayoutD*,
        kAlignD, PlainFusion, Policy>::CollectiveOp>;
  };
  using GatedEpilogue = cutlass::epilogue::collective::detail::Sm90TmaWarpSpecializedAdapter<
      GatedEpilogueArray<ElementD, cutlass::detail::TagToStrideC_t<LayoutD*>>>;
  using CollectiveEpilogue = typename std::conditional_t<
      Gated, std::type_identity<GatedEpilogue>,
      std::conditional_t<side_by_side<Traits>(), SideBySidePlainEpilogueOf, PlainEpilogueOf>>::type;

  using BuiltMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementAB, LayoutA*, kAlignAB, ElementAB, LayoutB*,
      kAlignAB, ElementAccumulator, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      KernelSchedule>::CollectiveOp;
  using CollectiveMainloop =
      Mainloop<std::conditional_t<side_by_side<Traits>(), SideBySideMma<BuiltMainloop>, BuiltMainloop>>;

  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

  using StrideA = typename GemmKernel::InternalStrideA;
  using StrideB = typename GemmKernel::InternalStrideB;
  using StrideC = typename GemmKernel::InternalStrideC;
  using StrideD = typename GemmKernel::InternalStrideD;
  static_assert(sizeof(StrideA) == sizeof(int64_t) && sizeof(StrideB) == sizeof(int64_t) &&
                sizeof(StrideD) == sizeof(int64_t), "ScratchLayout gives every stride 8 bytes");
};

// Where each per-group array lies in the scratch. The strides are all 8 bytes (one int64 dynamic
// mode, the rest static), whatever the element type (Config's static_assert checks it).
struct ScratchLayout {
  size_t shapes = 0, ptr_a = 0, ptr_b = 0, ptr_d = 0, stride_a = 0, stride_b = 0, stride_d = 0, workspace = 0;
  size_t split = 0;  // the tail split's area (sm90_split_tail_bytes)
  ScratchLayout(int experts, int sm_count) {
    const size_t e = static_cast<size_t>(experts);
    size_t off = 0;
    auto take = [&](size_t bytes) {
      const size_t at = off;
      off = align_up(off + bytes);
      return at;
    };
    shapes = take(claim_words_offset(experts) + kClaimWords * sizeof(unsigned long long));  // the shapes, then the claim words
    ptr_a = take(e * sizeof(void*));
    ptr_b = take(e * sizeof(void*));
    ptr_d = take(e * sizeof(void*));
    stride_a = take(e * sizeof(int64_t));
    stride_b = take(e * sizeof(int64_t));
    stride_d = take(e * sizeof(int64_t));
    split = take(sm90_split_tail_bytes(sm_count));
    workspace = off;
  }
};

// CUTLASS's arguments for configuration Cfg, its per-group arrays where `job` (setup_job) put them;
// without a job (workspace_bytes) the arrays are null: only the workspace size is asked of them.
template <class Cfg>
typename Cfg::Gemm::Arguments make_arguments(int experts, const Sm90SetupJob* job, int sm_count,
                                             const Sm90GemmArgs* gated = nullptr) {
  using Gemm = typename Cfg::Gemm;
  using ElementAB = typename Gemm::ElementA;
  using ElementD = typename Gemm::GemmKernel::ElementD;
  auto* shapes = job ? reinterpret_cast<UnderlyingShape*>(job->shapes) : nullptr;
  cutlass::KernelHardwareInfo hw_info;
  hw_info.device_id = 0;  // only read when sm_count <= 0, which launch_sm90_grouped_gemm refuses
  hw_info.sm_count = sm_count;

  typename Gemm::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
  const int overlap = gated ? static_cast<int>(gated->overlap) : 0;
  args.problem_shape = ProblemShape{{experts, shapes, nullptr}, overlap};
  if constexpr (requires { args.mainloop.overlap; }) args.mainloop.overlap = overlap;
  args.mainloop.ptr_A = job ? reinterpret_cast<const ElementAB**>(job->ptr_a) : nullptr;
  args.mainloop.dA = job ? reinterpret_cast<typename Cfg::StrideA*>(job->stride_a) : nullptr;
  args.mainloop.ptr_B = job ? reinterpret_cast<const ElementAB**>(job->ptr_b) : nullptr;
  args.mainloop.dB = job ? reinterpret_cast<typename Cfg::StrideB*>(job->stride_b) : nullptr;
  auto* stride_d = job ? reinterpret_cast<typename Cfg::StrideD*>(job->stride_d) : nullptr;
  if constexpr (Cfg::kGated) {
    args.epilogue.activation = gated ? gated->gated_activation : 0;
    args.epilogue.alpha = gated ? gated->alpha : 1.0f;
    args.epilogue.limit = gated ? gated->limit : 0.0f;
    args.epilogue.bias = gated ? gated->bias : nullptr;
    args.epilogue.bias_type = gated ? gated->bias_type : Elem::kF32;
  } else {
    auto& fusion = args.epilogue.thread;
    fusion.alpha = 1.0f;
    fusion.beta = 0.0f;
    fusion.alpha_ptr = nullptr;
    fusion.beta_ptr = nullptr;
    args.epilogue.ptr_C = nullptr;
    // C is void: its stride is never read, but give it a valid array of the right shape anyway.
    if constexpr (std::is_same_v<typename Cfg::StrideC, typename Cfg::StrideD>)
      args.epilogue.dC = stride_d;
    else
      args.epilogue.dC = nullptr;
  }
  args.epilogue.ptr_D = job ? reinterpret_cast<ElementD**>(job->ptr_d) : nullptr;
  args.epilogue.dD = stride_d;
  args.hw_info = hw_info;
  return args;
}

template <class Cfg>
size_t workspace_bytes(int experts, int sm_count) {
  // get_workspace_size reads only hw_info.sm_count (the problem shapes' values are never read: the
  // descriptors are per SM, and the group scheduler needs none).
  auto args = make_arguments<Cfg>(experts, nullptr, sm_count);
  return Cfg::Gemm::get_workspace_size(args);
}

// The order word (order_word) for configuration Cfg under `order`: the claimed order's lookahead
// (ClaimedOrderScheduler), or 0, the fixed order. The automatic order claims on a tile without a
// cluster while every group fits one M tile of it (Sm90TileOrder says why).
template <class Cfg>
unsigned long long claimed_order_word(Sm90TileOrder order) {
  constexpr bool ping_pong = std::is_same_v<typename Cfg::KernelSchedule, PingPong::KernelSchedule>;
  if (order == Sm90TileOrder::kFixed || cute::size(typename Cfg::ClusterShape{}) != 1) return 0;
  const uint32_t lookahead = ping_pong ? 2 : 1;
  if (order == Sm90TileOrder::kClaimed) return order_word(lookahead, 0);
  return order_word(lookahead, cute::size<0>(typename Cfg::TileShape{}));
}

// The setup kernel (sm90_setup.cu) writes each group's shape as three ints and each stride as its
// one dynamic mode, an int64 (the row stride): true of these types, which the asserts check (a cute
// tuple stores its non-empty elements in order, cute/container/tuple.hpp's ESO).
template <class Stride>
constexpr bool kRowStrideOnly = sizeof(Stride) == sizeof(int64_t) &&
                                std::is_same_v<std::remove_cvref_t<decltype(get<0>(Stride{}))>, int64_t>;

// The setup job of configuration Cfg for `a`, its arrays at the scratch layout's places: the one
// place that computes them (make_arguments hands the same pointers to CUTLASS).
template <class Cfg>
Sm90SetupJob setup_job(const Sm90GemmArgs& a, const ScratchLayout& lay) {
  static_assert(kRowStrideOnly<typename Cfg::StrideA> && kRowStrideOnly<typename Cfg::StrideB> &&
                kRowStrideOnly<typename Cfg::StrideD>, "the setup kernel writes each stride as one int64");
  static_assert(std::is_same_v<UnderlyingShape, Shape<int, int, int>>, "the setup kernel writes <M, N, K> as three ints");
  using ElementAB = typename Cfg::Gemm::ElementA;
  using ElementD = typename Cfg::Gemm::GemmKernel::ElementD;
  char* base = static_cast<char*>(a.scratch);
  Sm90SetupJob j;
  j.offsets = a.expert_offsets;
  j.experts = a.experts;
  j.max_rows = a.max_rows;
  j.n = static_cast<int>(a.n);
  j.k = static_cast<int>(a.k);
  j.n_out = static_cast<int>(Cfg::kGated ? a.n / 2 : a.n);
  j.a = static_cast<const unsigned char*>(a.a);
  j.b = static_cast<const unsigned char*>(a.b);
  j.d = static_cast<unsigned char*>(a.d);
  j.ab_bytes = sizeof(ElementAB);
  j.d_bytes = sizeof(ElementD);
  j.shapes = reinterpret_cast<int*>(base + lay.shapes);
  j.words = reinterpret_cast<unsigned long long*>(base + lay.shapes + claim_words_offset(a.experts));
  j.ptr_a = reinterpret_cast<const void**>(base + lay.ptr_a);
  j.ptr_b = reinterpret_cast<const void**>(base + lay.ptr_b);
  j.ptr_d = reinterpret_cast<void**>(base + lay.ptr_d);
  j.stride_a = reinterpret_cast<int64_t*>(base + lay.stride_a);
  j.stride_b = reinterpret_cast<int64_t*>(base + lay.stride_b);
  j.stride_d = reinterpret_cast<int64_t*>(base + lay.stride_d);
  j.order = claimed_order_word<Cfg>(a.tile_order);
  j.part = a.row_part;
  // The tail split runs on the cooperative tiles without a cluster (its pieces are whole-CTA work)
  // whose partial fits a slot (every library tile; not the experiments' 192 x 256).
  constexpr bool tile_fits_split_slot =
      cute::size<0>(typename Cfg::TileShape{}) * cute::size<1>(typename Cfg::TileShape{}) <= kSm90SplitSlotFloats;
  constexpr bool can_split = std::is_same_v<typename Cfg::KernelSchedule, Cooperative::KernelSchedule> &&
                             cute::size(typename Cfg::ClusterShape{}) == 1 && tile_fits_split_slot;
  if (can_split && a.tail_split != Sm90TailSplit::kOff)
    j.split = reinterpret_cast<unsigned long long>(base + lay.split) | (a.tail_split == Sm90TailSplit::kAlways ? kSm90SplitAlways : 0ull);
  return j;
}

template <typename ElementAB, typename ElementD, class Traits, bool Gated = false,
          template <class> class Mainloop = OverlapMainloop, template <class> class EpilogueWrap = PlainEpilogueAsBuilt>
Status launch_typed(const Sm90GemmArgs& a, void* stream) {
  using Cfg = Config<ElementAB, ElementD, Traits, Gated, Mainloop, EpilogueWrap>;
  using Gemm = typename Cfg::Gemm;
  static_assert(std::is_same_v<typename Cfg::GemmKernel::TileScheduler,
                               ClaimedOrderScheduler<MoeGroupShape, Cfg::GemmKernel::TileSchedulerStages>>,
                "the selector specialization must give our kernels the claimed-order scheduler");

  const ScratchLayout lay(a.experts, a.sm_count);
  char* base = static_cast<char*>(a.scratch);
  const size_t ws = workspace_bytes<Cfg>(a.experts, a.sm_count);
  if (a.scratch_bytes < lay.workspace + ws)
    return Status::InvalidArgument("sm90 grouped GEMM: scratch holds " + std::to_string(a.scratch_bytes) +
                                   " bytes, needs " + std::to_string(lay.workspace + ws));

  void* workspace = base + lay.workspace;
  // Host arithmetic only; built also when the setup does not run, for make_arguments' pointers.
  const Sm90SetupJob job = setup_job<Cfg>(a, lay);

  cudaStream_t s = static_cast<cudaStream_t>(stream);
  // Overlapped pairs (Sm90Overlap) launch with PDL: the setup kernel waits for the kernel before it
  // (it writes the scratch an earlier GEMM read), the GEMM as its mode says.
  const bool pdl = a.overlap != Sm90Overlap::kNone;
  if (a.run_setup) {
    if (a.setup_job != nullptr)
      *a.setup_job = job;  // the caller launches it, with the other GEMM's
    else
      MOEKIT_RETURN_IF_ERROR(launch_sm90_setups(&job, 1, pdl, stream));
  }
  if (!a.run_gemm) return Status::Ok();

  auto args = make_arguments<Cfg>(a.experts, &job, a.sm_count, &a);
  Gemm gemm;
  cutlass::Status st = gemm.can_implement(args);
  if (st != cutlass::Status::kSuccess)
    return Status::Unsupported(std::string("sm90 grouped GEMM: CUTLASS can_implement: ") + cutlassGetStatusString(st));
  st = gemm.initialize(args, workspace, s);
  if (st != cutlass::Status::kSuccess)
    return Status::CudaError(std::string("sm90 grouped GEMM: CUTLASS initialize: ") + cutlassGetStatusString(st));
  st = gemm.run(s, nullptr, pdl);
  if (st != cutlass::Status::kSuccess) {
    const cudaError_t err = cudaGetLastError();
    return Status::CudaError(std::string("sm90 grouped GEMM: CUTLASS run: ") + cutlassGetStatusString(st) + " (" +
                             cudaGetErrorString(err) + ")");
  }
  return Status::Ok();
}

// The element types each tile is built for: bf16 or f16 in; float32 out, or (with
// MOEKIT_SM90_GEMM_SAME_D, which the stage pipeline uses) the input type out.
template <Sm90Tile T>
Status launch_tile(const Sm90GemmArgs& a, void* stream) {
  using Traits = TileTraits<T>;
  if (a.type == Elem::kBF16 && a.d_type == Elem::kF32) return launch_typed<cutlass::bfloat16_t, float, Traits>(a, stream);
  if (a.type == Elem::kF16 && a.d_type == Elem::kF32) return launch_typed<cutlass::half_t, float, Traits>(a, stream);
#if MOEKIT_SM90_GEMM_SAME_D
  if (a.type == Elem::kBF16 && a.d_type == Elem::kBF16) return launch_typed<cutlass::bfloat16_t, cutlass::bfloat16_t, Traits>(a, stream);
  if (a.type == Elem::kF16 && a.d_type == Elem::kF16) return launch_typed<cutlass::half_t, cutlass::half_t, Traits>(a, stream);
#endif
  return Status::Unsupported(std::string("sm90 grouped GEMM: output type ") + elem_name(a.d_type) + " for " +
                             elem_name(a.type) + " inputs");
}

// The gated epilogue writes the input type only (the next GEMM's operand).
template <Sm90Tile T>
Status launch_gated_tile(const Sm90GemmArgs& a, void* stream) {
  using Traits = TileTraits<T>;
  if (a.type == Elem::kBF16 && a.d_type == Elem::kBF16)
    return launch_typed<cutlass::bfloat16_t, cutlass::bfloat16_t, Traits, true>(a, stream);
  if (a.type == Elem::kF16 && a.d_type == Elem::kF16) return launch_typed<cutlass::half_t, cutlass::half_t, Traits, true>(a, stream);
  return Status::Unsupported(std::string("sm90 grouped GEMM, gated epilogue: output type ") + elem_name(a.d_type) + " for " +
                             elem_name(a.type) + " inputs (the gated epilogue writes the input type)");
}

// The gated configurations need no more workspace than the plain ones (the same mainloop
// descriptors, no store descriptors); launch_typed checks the size either way.
template <Sm90Tile T>
size_t tile_scratch_bytes(int experts, int sm_count) {
  // The workspace is per SM (two mainloop descriptors and one per epilogue warpgroup store, no
  // fusion workspace); take the largest over the element types.
  using Traits = TileTraits<T>;
  size_t ws = std::max(workspace_bytes<Config<cutlass::bfloat16_t, float, Traits>>(experts, sm_count),
                       workspace_bytes<Config<cutlass::half_t, float, Traits>>(experts, sm_count));
#if MOEKIT_SM90_GEMM_SAME_D
  ws = std::max({ws, workspace_bytes<Config<cutlass::bfloat16_t, cutlass::bfloat16_t, Traits>>(experts, sm_count),
                 workspace_bytes<Config<cutlass::half_t, cutlass::half_t, Traits>>(experts, sm_count)});
#endif
  return ScratchLayout(experts, sm_count).workspace + align_up(ws);
}

}  // namespace moekit::cuda::moe::sm90
