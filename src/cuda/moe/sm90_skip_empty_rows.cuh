// The sm_90a cooperative tiles' mainloop: CUTLASS's, except that a consumer warpgroup whose rows of
// the tile hold no routed row skips its MMAs.
//
// Why: an expert's last M tile is often half empty. A 128-row cooperative tile splits its rows
// between two consumer warpgroups (rows 0-63 and 64-127), which share the SM's tensor cores; when the
// expert has, say, 139 rows, its second tile holds 11, and the second warpgroup multiplies 64 rows of
// zeros (TMA fills rows past the group's M with zeros). At 128 rows an expert (GPT-OSS and
// DeepSeek-V3 at T=4096) about half the experts end in such a tile; at 256 rows (Qwen3 T=4096,
// Mixtral T=1024) likewise. Skipping those MMAs gives the other warpgroup the tensor cores to itself,
// so a half-empty tile costs about half the MMA time (and energy, under a power limit).
//
// How the consumers learn a tile's rows. CUTLASS's kernel passes the consumers no coordinates, but
// its producer warp sees the group's shape (tensors_perform_update, at every change of group) and the
// tile's M coordinate (load). The producer writes the tile's routed-row count into a ring of
// shared-memory slots (after CUTLASS's tensors), one slot per work tile in issue order, before its first stage of the tile is
// marked full; a consumer reads the slot after that stage's full barrier (the barrier's arrive
// releases the write and the wait acquires it). Slot reuse is safe with kRingSlots > Stages: the
// producer writes tile j's slot after acquiring every stage of tile j - 1, so both warpgroups have
// released a stage of tile j - 1 - Stages or later, and each warpgroup releases a stage of a tile only
// after all its warps have read that tile's slot (a named barrier per warpgroup after the read).
//
// A skipping warpgroup still waits on every stage and releases it (the empty barriers count both
// warpgroups' arrivals, phase by phase), and its accumulators are zeros, which the epilogues do not
// store (the rows are past the group's M). The product of every row is unchanged, bit for bit: a row a
// warpgroup skips is not a routed row.
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass/cutlass.h"

namespace moekit::cuda::moe::sm90 {

// The ring's slots: more than any cooperative tile's stage count (a static_assert below checks it).
// The ring lives at the end of the mainloop's shared storage (static shared memory would move the
// dynamic shared memory, and with it the TMA destinations, off their alignment). Config leaves room for
// it when it sizes the stage count: 1 KB, since the 64 bytes can move a 1 KB-aligned member after it
// by that much (the float32 output tiles' epilogue storage).
inline constexpr int kSkipRingSlots = 16;
inline constexpr int kSkipRingBytes = 1024;

template <class Base>
struct SkipEmptyRows : Base {
  using TiledMma = typename Base::TiledMma;
  static constexpr int kStages = Base::DispatchPolicy::Stages;
  static constexpr int kWarpGroups = cute::size(TiledMma{}) / cutlass::NumThreadsPerWarpGroup;
  static constexpr int kTileM = cute::size<0>(typename Base::TileShape{});
  static constexpr int kRowsPerWarpGroup = kTileM / kWarpGroups;
  static constexpr int kRingSlots = kSkipRingSlots;
  static_assert(kRingSlots > kStages, "slot reuse needs more slots than stages (see above)");
  static_assert(kWarpGroups == 2, "for the cooperative schedule: two consumer warpgroups split the tile's rows");

  // Per thread: the producer's group row count and tile count, a consumer's tile count and whether
  // its warpgroup computed the current tile.
  int group_rows_ = 0;
  int tiles_loaded_ = 0;
  int tiles_computed_ = 0;
  bool active_ = true;

  struct TensorStorage : Base::TensorStorage {
    int ring[kRingSlots];
  };
  static_assert(sizeof(TensorStorage) - sizeof(typename Base::TensorStorage) <= kSkipRingBytes, "Config's carve-out is too small");

  template <class InputTensors, class ProblemShapeMNKL>
  CUTLASS_DEVICE InputTensors tensors_perform_update(InputTensors const& inputs, typename Base::Params const& params,
                                                     ProblemShapeMNKL problem_shape_mnkl, int32_t next_batch) {
    group_rows_ = static_cast<int>(cute::get<0>(problem_shape_mnkl));
    return Base::tensors_perform_update(inputs, params, problem_shape_mnkl, next_batch);
  }

  template <class TensorA, class TensorB, class TensorMapA, class TensorMapB, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(typename Base::Params const& params, typename Base::MainloopPipeline pipeline,
                           typename Base::PipelineState smem_pipe_write, cute::tuple<TensorA, TensorB> const& inputs,
                           cute::tuple<TensorMapA, TensorMapB> const& tensormaps, BlockCoord const& blk_coord,
                           KTileIterator k_tile_iter, int k_tile_count, int thread_idx, uint32_t block_rank_in_cluster,
                           TensorStorage& shared_tensors) {
    if (thread_idx == 0) {
      const int m0 = static_cast<int>(cute::get<0>(blk_coord)) * kTileM;
      shared_tensors.ring[tiles_loaded_ % kRingSlots] = max(0, min(kTileM, group_rows_ - m0));
    }
    __syncwarp();  // the write comes before whichever lane marks the tile's first stage full
    ++tiles_loaded_;
    Base::load(params, pipeline, smem_pipe_write, inputs, tensormaps, blk_coord, k_tile_iter, k_tile_count, thread_idx,
               block_rank_in_cluster, shared_tensors);
  }

  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(typename Base::MainloopPipeline pipeline, typename Base::PipelineState smem_pipe_read, FrgTensorC& accum,
                          int k_tile_count, int thread_idx, TensorStorage& shared_tensors,
                          typename Base::Params const& params) {
    const int wg = __shfl_sync(0xFFFFFFFF, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    active_ = true;
    if (k_tile_count > 0) {
      auto token = pipeline.consumer_try_wait(smem_pipe_read);
      pipeline.consumer_wait(smem_pipe_read, token);  // CUTLASS's loop waits again: the phase is complete
      // Broadcast from lane 0, so that the compiler knows the branch below is uniform across the warp:
      // wgmma in a branch it cannot prove uniform is serialized (ptxas C7518).
      const int rows = __shfl_sync(0xFFFFFFFF, shared_tensors.ring[tiles_computed_ % kRingSlots], 0);
      // The first user barrier ids (CUTLASS's reserved ones come before): one per warpgroup.
      cutlass::arch::NamedBarrier::arrive_and_wait(cutlass::NumThreadsPerWarpGroup, static_cast<uint32_t>(wg));
      active_ = rows > wg * kRowsPerWarpGroup;
    }
    ++tiles_computed_;
    if (active_) {
      Base::mma(pipeline, smem_pipe_read, accum, k_tile_count, thread_idx, shared_tensors, params);
      return;
    }
    cute::clear(accum);
    for (int k = 0; k < k_tile_count; ++k) {
      auto token = pipeline.consumer_try_wait(smem_pipe_read);
      pipeline.consumer_wait(smem_pipe_read, token);
      pipeline.consumer_release(smem_pipe_read);
      ++smem_pipe_read;
    }
  }

  // CUTLASS's tail (wait for the last MMAs, release the stages still held), except that a skipping
  // warpgroup has released every stage of the tile already. The wait stays unconditional: behind a
  // branch, ptxas cannot tell that no MMA is in flight when the epilogue reads the accumulators, and
  // injects waits that serialize the MMAs (C7517, C7518).
  CUTLASS_DEVICE void mma_tail(typename Base::MainloopPipeline pipeline, typename Base::PipelineState smem_pipe_release, int k_tile_count) {
    const int held = min(Base::K_PIPE_MMAS, k_tile_count);
    smem_pipe_release.advance(k_tile_count - held);
    cute::warpgroup_wait<0>();
    if (!active_) return;
    for (int i = 0; i < held; ++i) {
      pipeline.consumer_release(smem_pipe_release);
      ++smem_pipe_release;
    }
  }
};

}  // namespace moekit::cuda::moe::sm90
