// Mainloop variants of the sm_90a grouped GEMM. Each takes the collective mainloop that CUTLASS's
// CollectiveBuilder makes (the ptr-array TMA + wgmma, warp-specialized one) and returns a type the
// kernel uses in its place. The kernel calls the mainloop's load() (producer warp) and mma()
// (consumer warpgroups) by name, so a derived type that redefines one of them changes that side only.
// Included by sm90_grouped_gemm_kernel.cuh (and the overlap experiment in bench/sm90_overlap).
#pragma once

#include "cute/algorithm/prefetch.hpp"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"

namespace moekit::cuda::moe::sm90 {

// CUTLASS's mainloop as it is.
template <class BuiltMainloop>
using PlainMainloop = BuiltMainloop;

// The weights (B) of k-tile k + kAhead are prefetched into L2 (cp.async.bulk.prefetch.tensor) when
// k-tile k's loads are issued. The shared-memory pipeline holds a few stages (4 of 48 KB for the
// 128 x 256 x 64 tile), which bounds how many weight bytes a CTA has in flight; the prefetch asks
// DRAM for kAhead more k-tiles without taking shared memory, so a CTA's reads need not wait for its
// MMAs to free a stage. Only within a work tile (the next tile's coordinates are the scheduler's).
// A is not prefetched: the routed rows are read by every N tile of an expert and stay in L2.
template <int kAhead>
struct L2Prefetch {
  static_assert(kAhead > 0);
  template <class Base>
  struct Mainloop : Base {
    template <class TensorA, class TensorB, class TensorMapA, class TensorMapB, class KTileIterator, class BlockCoord>
    CUTLASS_DEVICE void load(typename Base::Params const& params, typename Base::MainloopPipeline pipeline,
                             typename Base::PipelineState smem_pipe_write, cute::tuple<TensorA, TensorB> const& inputs,
                             cute::tuple<TensorMapA, TensorMapB> const& tensormaps, BlockCoord const& blk_coord,
                             KTileIterator k_tile_iter, int k_tile_count, int thread_idx, uint32_t block_rank_in_cluster,
                             typename Base::TensorStorage& shared_tensors) {
      using namespace cute;
      // B is never multicast with our clusters (1 along M), so every CTA takes the same TMA slice.
      static_assert(size<0>(typename Base::DispatchPolicy::ClusterShape{}) == 1, "B multicast is not handled");
      auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
      auto gB = get<1>(inputs)(_, _, n_coord, _, l_coord);              // (BLK_N, BLK_K, k)
      auto tBgB = params.tma_load_b.get_slice(0).partition_S(gB);       // (TMA, TMA_N, TMA_K, k)

      KTileIterator ahead = k_tile_iter;
      for (int i = 0; i < kAhead; ++i) ++ahead;
      int ahead_count = k_tile_count - kAhead;
      // One k-tile at a time through CUTLASS's own load (its stage acquire, expect-tx and TMA
      // copies), the prefetch between them.
      for (; k_tile_count > 0; --k_tile_count) {
        Base::load(params, pipeline, smem_pipe_write, inputs, tensormaps, blk_coord, k_tile_iter, 1, thread_idx,
                   block_rank_in_cluster, shared_tensors);
        if (ahead_count > 0) {
          // The barrier is not used by a prefetch; with() only wants one to build the operation.
          if (elect_one_sync())
            prefetch(params.tma_load_b.with(get<1>(tensormaps), *pipeline.producer_get_barrier(smem_pipe_write)),
                     tBgB(_, _, _, *ahead));
          ++ahead;
          --ahead_count;
        }
        ++smem_pipe_write;
        ++k_tile_iter;
      }
    }
  };
};

}  // namespace moekit::cuda::moe::sm90
