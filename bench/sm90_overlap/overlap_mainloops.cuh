// Experiment-only mainloops for the sm_90a grouped GEMM (docs/perf-notes.md step 19): what a CTA's
// loads and MMAs do to each other. Each derives from the mainloop CUTLASS builds and redefines its
// producer (load) or consumer (mma) side; none is part of the library.
//   NoMma:  the consumers wait for each stage and free it at once, without an MMA (the loads alone).
//   L2Hot:  the producer loads k-tile 0 of its work tile for every k-tile (the same weight and row
//           bytes, from L2 after the first), so the MMAs run with their operands close.
//   BulkB:  the weights read as if stored tile by tile: each stage's B tile is one contiguous block
//           (BLK_N x BLK_K elements, at block n_tile * k_tiles + k_tile of the expert's weight),
//           fetched with one cp.async.bulk; A as CUTLASS loads it. The bytes land unswizzled, so
//           the output is wrong: a timing of what a tiled weight layout would stream at.
//   L2Prefetch<n>: CUTLASS's loads plus an L2 prefetch of the weights n k-tiles ahead.
//   Traced: CUTLASS's loads and MMAs, with clock64 timestamps of each stage's acquire, arrival and
//           release written to g_overlap_trace (the layout is described below).
//   TracedEpilogue: CUTLASS's TMA-store epilogue with clock64 timestamps of each tile's phases
//           (with Traced, the per-tile record of role 2 below).
#pragma once

#include <cstdint>

#include "cute/algorithm/prefetch.hpp"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "overlap_variants.h"

namespace moekit::bench_overlap {

using namespace cute;

// The trace: per CTA, kTraceEvents events for each of kTraceRoles roles: the producer, consumer
// warpgroup 0's stages, consumer warpgroup 0's tiles; each event is 4 uint64. Producer: {begin =
// before the stage acquire, end = after the TMA copies are issued, globaltimer (ns) at end, meta =
// k-tile index within the work tile}. Consumer stages: {before the full-barrier wait, after it (the
// stage's data arrived), after the previous stage's MMAs completed and it was released, the same
// k-tile index}. The event slot is the pipeline's running stage count, so producer event i and
// consumer event i are the same k-tile. Consumer tiles (role 2, the traced plain epilogue only):
// tile t fills events 4t .. 4t + 3 (TileWord below: sixteen words), clock64 of each consumer
// warpgroup's thread 0 (one SM's clock, so the two warpgroups' words compare).
// Static: each translation unit has its own (only the traced variant's sets it, through
// set_trace_buffer in its own file). kTraceEvents, kTraceWords: overlap_variants.h.
static __device__ uint64_t* g_overlap_trace = nullptr;

CUTLASS_DEVICE uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

CUTLASS_DEVICE uint64_t* trace_event(int role, uint32_t count) {
  if (g_overlap_trace == nullptr || count >= static_cast<uint32_t>(kTraceEvents)) return nullptr;
  const size_t cta = blockIdx.x + static_cast<size_t>(blockIdx.y) * gridDim.x;
  return g_overlap_trace + ((cta * kTraceRoles + role) * kTraceEvents + count) * kTraceWords;
}

// A tile's record (role 2), eight words: the index of each.
enum TileWord : int {
  kMmaBegin = 0,       // mma() entered (before the first stage's wait)
  kMmaTailEnd = 1,     // mma_tail() returned: every MMA of the tile complete, its stages released
  kStoreBegin = 2,     // the epilogue's store() entered (after the store descriptor's acquire, if any)
  kStoreEnd = 3,       // store() returned: every subtile's TMA store issued
  kAcquireEnd = 4,     // the store descriptor's acquire fence returned (0: the expert did not change)
  kReleaseBegin = 5,   // the next expert's store descriptor: its copy and release fence began (0: none)
  kReleaseEnd = 6,     //   ... and returned
  kKTiles = 7,         // the tile's k-tile count
  // Consumer warpgroup 1's thread 0 (the words above are warpgroup 0's):
  kMmaTailEnd1 = 8,
  kStoreBegin1 = 9,
  kStoreEnd1 = 10,
  kMmaBegin1 = 11,
};
// The consumer thread that writes the tile records: warpgroup 0's thread 0 (the kernel's thread 128,
// after the producer warpgroup).
CUTLASS_DEVICE bool tile_tracer() { return threadIdx.x == cutlass::NumThreadsPerWarpGroup; }
// Warpgroup 1's thread 0 (the kernel's thread 256).
CUTLASS_DEVICE bool tile_tracer1() { return threadIdx.x == 2 * cutlass::NumThreadsPerWarpGroup; }
CUTLASS_DEVICE uint64_t* tile_record(uint32_t tile) { return trace_event(2, 4 * tile); }

// The consumer loop of CUTLASS's mainloop (one MMA batch in flight, a stage released once the
// next batch is issued and the previous one has completed), with `Hook` called around each
// stage: Hook::kMma = false skips the MMAs.
template <class Base, class Hook>
struct ConsumerLoop : Base {
  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(typename Base::MainloopPipeline pipeline, typename Base::PipelineState smem_pipe_read,
                          FrgTensorC& accum, int k_tile_count, int thread_idx, typename Base::TensorStorage& shared_tensors,
                          typename Base::Params const&) {
    using TiledMma = typename Base::TiledMma;
    cute::Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), typename Base::SmemLayoutA{});
    cute::Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), typename Base::SmemLayoutB{});
    constexpr int kWarpGroups = size(TiledMma{}) / cutlass::NumThreadsPerWarpGroup;
    Layout wg_layout = make_layout(Int<kWarpGroups>{}, Int<cutlass::NumThreadsPerWarpGroup>{});
    const int wg = __shfl_sync(0xFFFFFFFF, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    TiledMma tiled_mma;
    auto thread_mma = tiled_mma.get_slice(wg_layout(wg));
    cute::Tensor tCrA = thread_mma.make_fragment_A(thread_mma.partition_A(sA));  // (MMA, MMA_M, MMA_K, PIPE)
    cute::Tensor tCrB = thread_mma.make_fragment_B(thread_mma.partition_B(sB));  // (MMA, MMA_N, MMA_K, PIPE)

    if (Hook::kTrace && thread_idx == 0) {
      if (uint64_t* t = tile_record(tiles_)) {
        t[kMmaBegin] = clock64();
        t[kKTiles] = static_cast<uint64_t>(k_tile_count);
      }
    }
    if (Hook::kTrace && thread_idx == cutlass::NumThreadsPerWarpGroup) {
      if (uint64_t* t = tile_record(tiles_)) t[kMmaBegin1] = clock64();
    }
    auto smem_pipe_release = smem_pipe_read;
    tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
    if constexpr (!Hook::kMma) clear(accum);
    warpgroup_fence_operand(accum);
    for (int k = 0; k < k_tile_count; ++k) {
      const uint64_t t0 = clock64();
      auto token = pipeline.consumer_try_wait(smem_pipe_read);
      pipeline.consumer_wait(smem_pipe_read, token);
      const uint64_t t1 = clock64();
      const int stage = smem_pipe_read.index();
      if constexpr (Hook::kMma) {
        warpgroup_fence_operand(accum);
        warpgroup_arrive();
        CUTLASS_PRAGMA_UNROLL
        for (int kb = 0; kb < size<2>(tCrA); ++kb) {
          cute::gemm(tiled_mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, stage), accum);
          tiled_mma.accumulate_ = GMMA::ScaleOut::One;
        }
        warpgroup_commit_batch();
      }
      // Free the previous stage once its MMAs are done; the last stage is mma_tail's to free.
      // Without MMAs every stage is freed as soon as it arrives (mma_tail then frees nothing).
      if (!Hook::kMma || k > 0) {
        if constexpr (Hook::kMma) warpgroup_wait<1>();
        pipeline.consumer_release(smem_pipe_release);
        ++smem_pipe_release;
      }
      if constexpr (Hook::kMma) warpgroup_fence_operand(accum);
      if (Hook::kTrace && thread_idx == 0) {
        if (uint64_t* e = trace_event(1, smem_pipe_read.count())) {
          e[0] = t0;
          e[1] = t1;
          e[2] = clock64();
          e[3] = static_cast<uint64_t>(k);
        }
      }
      ++smem_pipe_read;
    }
    warpgroup_fence_operand(accum);
  }

  CUTLASS_DEVICE void mma_tail(typename Base::MainloopPipeline pipeline, typename Base::PipelineState smem_pipe_release,
                               int k_tile_count) {
    if constexpr (Hook::kMma) Base::mma_tail(pipeline, smem_pipe_release, k_tile_count);
    if (Hook::kTrace && (tile_tracer() || tile_tracer1())) {
      if (uint64_t* t = tile_record(tiles_)) t[tile_tracer() ? kMmaTailEnd : kMmaTailEnd1] = clock64();
    }
    ++tiles_;
  }

 private:
  uint32_t tiles_ = 0;  // tiles this thread's mma() has run (each thread has its own mainloop object)
};

struct NoMmaHook {
  static constexpr bool kMma = false, kTrace = false;
};
struct TraceHook {
  static constexpr bool kMma = true, kTrace = true;
};

template <class Base>
using NoMma = ConsumerLoop<Base, NoMmaHook>;

// CUTLASS's producer one k-tile at a time, timestamped (Traced) or always at k-tile 0 (L2Hot).
template <class Base, bool kTrace, bool kHot>
struct ProducerLoop : Base {
  template <class TensorA, class TensorB, class TensorMapA, class TensorMapB, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(typename Base::Params const& params, typename Base::MainloopPipeline pipeline,
                           typename Base::PipelineState smem_pipe_write, cute::tuple<TensorA, TensorB> const& inputs,
                           cute::tuple<TensorMapA, TensorMapB> const& tensormaps, BlockCoord const& blk_coord,
                           KTileIterator k_tile_iter, int k_tile_count, int thread_idx, uint32_t block_rank_in_cluster,
                           typename Base::TensorStorage& shared_tensors) {
    const KTileIterator first = k_tile_iter;
    for (int k = 0; k < k_tile_count; ++k) {
      const uint64_t t0 = clock64();
      Base::load(params, pipeline, smem_pipe_write, inputs, tensormaps, blk_coord, kHot ? first : k_tile_iter, 1,
                 thread_idx, block_rank_in_cluster, shared_tensors);
      if (kTrace && (threadIdx.x % 32) == 0) {
        if (uint64_t* e = trace_event(0, smem_pipe_write.count())) {
          e[0] = t0;
          e[1] = clock64();
          e[2] = global_ns();
          e[3] = static_cast<uint64_t>(k);
        }
      }
      ++smem_pipe_write;
      ++k_tile_iter;
    }
  }
};

template <class Base>
using L2Hot = ProducerLoop<Base, false, true>;
template <class Base>
using Traced = ConsumerLoop<ProducerLoop<Base, true, false>, TraceHook>;

// The weights (B) of k-tile k + kAhead are prefetched into L2 (cp.async.bulk.prefetch.tensor) when
// k-tile k's loads are issued (lost everywhere, docs/perf-notes.md step 19). The shared-memory pipeline holds a few stages (4 of 48 KB for the
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

template <class Base>
struct BulkB : Base {
  int group_ = 0;  // the producer's current expert (the kernel calls tensors_perform_update on a change)

  template <class InputTensors, class ProblemShape_MNKL>
  CUTLASS_DEVICE auto tensors_perform_update(InputTensors const& inputs, typename Base::Params const& params,
                                             ProblemShape_MNKL shape, int32_t next_batch) {
    group_ = next_batch;
    return Base::tensors_perform_update(inputs, params, shape, next_batch);
  }

  template <class TensorA, class TensorB, class TensorMapA, class TensorMapB, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(typename Base::Params const& params, typename Base::MainloopPipeline pipeline,
                           typename Base::PipelineState smem_pipe_write, cute::tuple<TensorA, TensorB> const& inputs,
                           cute::tuple<TensorMapA, TensorMapB> const& tensormaps, BlockCoord const& blk_coord,
                           KTileIterator k_tile_iter, int k_tile_count, int, uint32_t,
                           typename Base::TensorStorage& shared_tensors) {
    static_assert(size(typename Base::DispatchPolicy::ClusterShape{}) == 1, "1 x 1 clusters only");
    if (!elect_one_sync()) return;
    cute::Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), typename Base::SmemLayoutA{});
    cute::Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), typename Base::SmemLayoutB{});
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    auto block_tma_a = params.tma_load_a.get_slice(0);
    cute::Tensor tAgA = block_tma_a.partition_S(get<0>(inputs)(_, _, m_coord, _, l_coord));  // (TMA, TMA_M, TMA_K, k)
    cute::Tensor tAsA = block_tma_a.partition_D(sA);                                        // (TMA, TMA_M, TMA_K, PIPE)
    constexpr int kBlockElems = size<0>(typename Base::SmemLayoutB{}) * size<1>(typename Base::SmemLayoutB{});
    constexpr int kBlockBytes = kBlockElems * static_cast<int>(sizeof(typename Base::InternalElementB));
    const int64_t k_tiles = size<3>(get<1>(inputs));
    const char* b = reinterpret_cast<const char*>(params.ptr_B[group_]);
    for (int k = 0; k < k_tile_count; ++k) {
      pipeline.producer_acquire(smem_pipe_write);
      auto* barrier = pipeline.producer_get_barrier(smem_pipe_write);
      const int stage = smem_pipe_write.index();
      copy(params.tma_load_a.with(get<0>(tensormaps), *barrier, 0), tAgA(_, _, _, *k_tile_iter), tAsA(_, _, _, stage));
      const int64_t block = static_cast<int64_t>(n_coord) * k_tiles + k;
      SM90_BULK_COPY_G2S::copy(b + block * kBlockBytes, reinterpret_cast<uint64_t*>(barrier),
                               raw_pointer_cast(sB(_, _, stage).data()), kBlockBytes);
      ++smem_pipe_write;
      ++k_tile_iter;
    }
  }
};

// CUTLASS's ptr-array TMA-store epilogue rebuilt with `StagesD` subtiles in flight (0: as built) and
// the TMA store of each subtile issued after the next subtile's shared-memory writes (`Delay`: what
// CUTLASS's builder picks for dense kernels without C and not for ptr-array ones). The epilogue's
// shared storage grows with StagesD, and the builder's carveout gives the mainloop what is left.
template <int StagesD, bool Delay, class Epilogue>
struct RebindStore;
template <int StagesD, bool Delay, int C, int D, int F, bool R, bool OldDelay, int N, class... Rest>
struct RebindStore<StagesD, Delay, cutlass::epilogue::collective::CollectiveEpilogue<
                                       cutlass::epilogue::Sm90PtrArrayTmaWarpSpecialized<C, D, F, R, OldDelay, N>, Rest...>> {
  using type = cutlass::epilogue::collective::CollectiveEpilogue<
      cutlass::epilogue::Sm90PtrArrayTmaWarpSpecialized<C, StagesD == 0 ? D : StagesD, F, R, Delay, N>, Rest...>;
};
template <class E>
using Stores4 = typename RebindStore<4, false, E>::type;
template <class E>
using Stores8 = typename RebindStore<8, false, E>::type;
template <class E>
using DelayedStore = typename RebindStore<0, true, E>::type;

// CUTLASS's ptr-array TMA-store epilogue (no C operand), timestamped per tile into the tile record
// (role 2) that Traced's consumer loop opens: the store descriptor's acquire, store(), and the next
// expert's descriptor copy and release. The kernel calls these by name on its epilogue object, so
// redefining them here wraps CUTLASS's without changing what they do.
template <class Base>
struct TracedEpilogue : Base {
  using Base::Base;
  using typename Base::Arguments;
  using typename Base::Params;
  using typename Base::TensorMapStorage;

  template <bool IsLoad>
  CUTLASS_DEVICE void tensormaps_fence_acquire(cute::TmaDescriptor const* tensormap) {
    Base::template tensormaps_fence_acquire<IsLoad>(tensormap);
    if (!IsLoad && tile_tracer()) {
      if (uint64_t* t = tile_record(tiles_)) t[kAcquireEnd] = clock64();
    }
  }

  // Called once before the first tile (no record) and after a tile whose successor is in another
  // expert (recorded in that tile's record).
  template <bool IsLoad>
  CUTLASS_DEVICE void tensormaps_cp_fence_release(TensorMapStorage& shared_tensormaps, cute::TmaDescriptor const* tensormap,
                                                  int32_t warp_group_idx = 0) {
    const uint64_t t0 = clock64();
    Base::template tensormaps_cp_fence_release<IsLoad>(shared_tensormaps, tensormap, warp_group_idx);
    if (!IsLoad && tiles_ > 0 && tile_tracer()) {
      if (uint64_t* t = tile_record(tiles_ - 1)) {
        t[kReleaseBegin] = t0;
        t[kReleaseEnd] = clock64();
      }
    }
  }

  template <class ProblemShapeMNKL, class TileShapeMNK, class TileCoordMNKL, class AccEngine, class AccLayout, class TiledMma,
            class TensorMapD>
  CUTLASS_DEVICE auto store(typename Base::LoadPipeline load_pipeline, typename Base::LoadPipelineState load_pipe_consumer_state,
                            typename Base::StorePipeline store_pipeline, typename Base::StorePipelineState store_pipe_producer_state,
                            ProblemShapeMNKL problem_shape_mnkl, TileShapeMNK tile_shape_MNK, TileCoordMNKL tile_coord_mnkl,
                            cute::Tensor<AccEngine, AccLayout> accumulators, TiledMma tiled_mma, int thread_idx,
                            typename Base::TensorStorage& shared_tensors, TensorMapD const& store_tensormap, int subtile_idx = -1) {
    const uint64_t t0 = clock64();
    auto next = Base::store(load_pipeline, load_pipe_consumer_state, store_pipeline, store_pipe_producer_state, problem_shape_mnkl,
                            tile_shape_MNK, tile_coord_mnkl, accumulators, tiled_mma, thread_idx, shared_tensors, store_tensormap,
                            subtile_idx);
    if (thread_idx == 0 || thread_idx == cutlass::NumThreadsPerWarpGroup) {
      if (uint64_t* t = tile_record(tiles_)) {
        t[thread_idx == 0 ? kStoreBegin : kStoreBegin1] = t0;
        t[thread_idx == 0 ? kStoreEnd : kStoreEnd1] = clock64();
      }
    }
    ++tiles_;
    return next;
  }

 private:
  uint32_t tiles_ = 0;  // tiles this thread has stored
};

template <class E>
using TracedStores4 = TracedEpilogue<Stores4<E>>;
template <class E>
using TracedStores8 = TracedEpilogue<Stores8<E>>;
template <class E>
using TracedDelayedStore = TracedEpilogue<DelayedStore<E>>;

}  // namespace moekit::bench_overlap
