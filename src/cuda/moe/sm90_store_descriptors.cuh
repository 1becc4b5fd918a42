// CUTLASS's ptr-array TMA-store epilogue with two store descriptors per SM and warpgroup, used in
// turn, so that a CTA moving to another expert does not wait for its last tile's stores to land.
//
// Why. CUTLASS 4.2's grouped epilogue (sm90_epilogue_array_tma_warpspecialized.hpp) keeps one D
// descriptor per SM and warpgroup in global memory. When a CTA's next tile belongs to another group
// it rewrites that descriptor, and before the rewrite (tensormaps_cp_fence_release) the storing
// thread commits and waits for *every* TMA store it has issued to complete (cp.async.bulk.wait_group
// 0): the last subtiles of the tile just finished, whose global writes are still in flight. The
// consumer warpgroup stalls there, and its partner soon after (the mainloop's stages are released by
// both). At Qwen3's prefill a CTA's consecutive tiles are in different experts nearly every time (64
// tiles an expert, a CTA's tiles a grid apart), so the wait is paid once a tile.
//
// What changes. The descriptor for the next group goes to the other of two slots. The stores that
// read the slot being overwritten were committed before the current slot was last written, and at
// least one tile's stores (kStoresPerTile bulk groups: one per epilogue subtile) were committed
// since, so waiting until at most kStoresPerTile groups are pending is enough
// (cp.async.bulk.wait_group N: all but the N most recent groups complete). The tile just stored keeps
// its stores in flight under the next tile's mainloop. Everything else is CUTLASS's: the descriptor
// edits in shared memory, the release and acquire fences, the stores themselves.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"

namespace moekit::cuda::moe::sm90 {

template <class Base>
struct AlternatingStoreDescriptors : Base {
  using Base::Base;
  using typename Base::Arguments;
  using typename Base::Params;
  using typename Base::TensorMapStorage;

  static_assert(cute::is_void_v<typename Base::ElementC>, "the alternating slots assume no C operand (no load descriptor)");
  // One descriptor per warpgroup and SM in each slot (CUTLASS's layout: (SMs, warpgroups)).
  static constexpr int kDescriptorsPerSm = Base::NumEpilogueWarpGroups;
  // Bulk groups one tile's stores commit: one per epilogue subtile (the store loop's producer_commit).
  static constexpr int kStoresPerTile = static_cast<int>(
      cute::size(cute::shape_div(cute::take<0, 2>(typename Base::CtaTileMNK{}), cute::shape(typename Base::EpilogueTile{}))));
  static_assert(kStoresPerTile >= 1);

  template <class ProblemShape>
  static size_t get_workspace_size(ProblemShape const& problem_shape, Arguments const& args, int sm_count) {
    // CUTLASS's workspace (its fusion part, then slot 0's descriptors), then slot 1's descriptors.
    return Base::get_workspace_size(problem_shape, args, sm_count) +
           static_cast<size_t>(sm_count) * kDescriptorsPerSm * sizeof(cute::TmaDescriptor);
  }

  CUTLASS_DEVICE auto store_init(Params const& params, TensorMapStorage& shared_tensormaps, int32_t sm_count, int32_t sm_idx,
                                 int32_t warp_group_idx) {
    slot_stride_ = sm_count * kDescriptorsPerSm;
    return Base::store_init(params, shared_tensormaps, sm_count, sm_idx, warp_group_idx);
  }

  // Called by the warpgroup's warp 0 after each descriptor edit (the first before any tile). The
  // epilogue-load warp calls the IsLoad form, which without a C operand does nothing: CUTLASS's.
  template <bool IsLoad>
  CUTLASS_DEVICE void tensormaps_cp_fence_release(TensorMapStorage& shared_tensormaps, cute::TmaDescriptor const* tensormap,
                                                  int32_t warp_group_idx = 0) {
    if constexpr (IsLoad) {
      Base::template tensormaps_cp_fence_release<IsLoad>(shared_tensormaps, tensormap, warp_group_idx);
    } else {
      if (written_) slot_ ^= 1;
      written_ = true;
      if (cute::elect_one_sync()) asm volatile("cp.async.bulk.wait_group %0;" ::"n"(kStoresPerTile) : "memory");
      cute::tma_descriptor_cp_fence_release(slot(tensormap), shared_tensormaps.smem_tensormap_D[warp_group_idx]);
    }
  }

  template <bool IsLoad>
  CUTLASS_DEVICE void tensormaps_fence_acquire(cute::TmaDescriptor const* tensormap) {
    Base::template tensormaps_fence_acquire<IsLoad>(IsLoad ? tensormap : slot(tensormap));
  }

  template <class ProblemShapeMNKL, class TileShapeMNK, class TileCoordMNKL, class AccEngine, class AccLayout, class TiledMma,
            class TensorMapD>
  CUTLASS_DEVICE auto store(typename Base::LoadPipeline load_pipeline, typename Base::LoadPipelineState load_pipe_consumer_state,
                            typename Base::StorePipeline store_pipeline, typename Base::StorePipelineState store_pipe_producer_state,
                            ProblemShapeMNKL problem_shape_mnkl, TileShapeMNK tile_shape_MNK, TileCoordMNKL tile_coord_mnkl,
                            cute::Tensor<AccEngine, AccLayout> accumulators, TiledMma tiled_mma, int thread_idx,
                            typename Base::TensorStorage& shared_tensors, TensorMapD const& store_tensormap, int subtile_idx = -1) {
    return Base::store(load_pipeline, load_pipe_consumer_state, store_pipeline, store_pipe_producer_state, problem_shape_mnkl,
                       tile_shape_MNK, tile_coord_mnkl, accumulators, tiled_mma, thread_idx, shared_tensors,
                       slot(store_tensormap), subtile_idx);
  }

 private:
  // The current slot's copy of `tensormap` (slot 0's address, as store_init returned it; null for the
  // warps that hold none).
  CUTLASS_DEVICE cute::TmaDescriptor const* slot(cute::TmaDescriptor const* tensormap) const {
    return tensormap == nullptr ? tensormap : tensormap + slot_ * slot_stride_;
  }

  int32_t slot_stride_ = 0;  // descriptors between slot 0's and slot 1's copy of one descriptor
  int slot_ = 0;              // the slot the current tile's stores use
  bool written_ = false;      // slot 0 holds this warpgroup's first descriptor
};

}  // namespace moekit::cuda::moe::sm90
