// The sm_90a grouped GEMM's mainloop with the expand fused into gemm1's A load: A's routed rows are
// read from the hidden states through the row map (row r of the routed rows is hidden row
// row_source[r]) instead of from rows the expand kernel wrote. docs/perf-notes.md step 26 measured
// the pieces:
//  - Hopper's TMA copies one box; a copy per row lands right in the 128-byte-swizzled stage but the
//    TMA unit issues about one a 26 ns, five times too slow for a 128-row k-block. So A comes by
//    cp.async, 16 bytes a copy, each to its swizzled place (the stage's CuTe layout gives it), and B
//    (the weight tile) by TMA as before.
//  - One warp of cp.async gathers a k-block in 1.0-1.4 µs, two warps with the row indices in shared
//    memory in 0.6, against the MMAs' 0.69. So two warps gather, half the rows each: the mainloop
//    producer warp (load(), which also issues B's TMA copy) and CUTLASS's auxiliary producer warp
//    (load_auxiliary(), enabled by kernel::detail::HasAuxiliaryLoad, the blockwise-scaling
//    mainloop's place for its scale loads).
// A stage completes on 65 producer events: the leader's arrival with B's transaction bytes (B only:
// A's bytes come by cp.async, which the transaction count does not see) and each gathering thread's
// cp.async.mbarrier.arrive.noinc, which arrives once that thread's copies have landed.
// Rows past the group's M and 8-element chunks past K are zero-filled (cp.async with source size 0),
// as the TMA load fills them, so every stage holds what the TMA path's does: the same bits out.
#pragma once

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/gemm/dispatch_policy.hpp"

namespace moekit::cuda::moe::sm90 {

// The base mainloop's dispatch policy, marked as one with an auxiliary load warp (below).
template <class BasePolicy>
struct GatherPolicy : BasePolicy {};

template <class Base>
struct GatherAMainloop : Base {
  using DispatchPolicy = GatherPolicy<typename Base::DispatchPolicy>;
  using typename Base::ElementA;
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::SmemLayoutA;
  using typename Base::SmemLayoutB;
  using typename Base::TensorStorage;
  using TileShape = typename Base::TileShape;

  static constexpr int kBlockM = cute::size<0>(TileShape{});
  static constexpr int kBlockK = cute::size<2>(TileShape{});
  static constexpr int kChunk = 16 / sizeof(ElementA);                     // elements a 16-byte copy
  static constexpr int kChunksPerRow = kBlockK / kChunk;                   // 8 for a 64-wide k-block of bf16
  static constexpr int kRowsPerWarp = kBlockM / 2;                         // two gathering warps
  static constexpr int kRowsPerPass = 32 / kChunksPerRow;                  // rows one warp instruction covers
  static_assert(sizeof(ElementA) == 2 && kChunksPerRow == 8, "the gather copies 64-wide k-blocks of 16-bit A");
  static_assert(kRowsPerWarp % kRowsPerPass == 0 && kRowsPerWarp <= 64, "each warp gathers whole passes");
  static_assert(cute::size(typename Base::DispatchPolicy::ClusterShape{}) == 1, "the gather is for 1 x 1 clusters");

  static constexpr int NumProducerThreadEvents = 1 + 2 * 32;
  static constexpr uint32_t kTransactionBytesB = static_cast<uint32_t>(
      cute::size<0>(SmemLayoutB{}) * cute::size<1>(SmemLayoutB{}) * sizeof(typename Base::ElementB));

  struct Arguments : Base::Arguments {
    const ElementA* hidden = nullptr;         // the rows to gather from, K wide
    const int64_t* row_source = nullptr;      // [max_rows]: routed row -> hidden row
    const int64_t* expert_offsets = nullptr;  // [groups + 1]: group g's routed rows start at offsets[g]
    int64_t max_rows = 0;                     // offsets are clamped to [0, max_rows], as the setup kernel does
  };
  struct Params : Base::Params {
    const ElementA* hidden = nullptr;
    const int64_t* row_source = nullptr;
    const int64_t* expert_offsets = nullptr;
    int64_t max_rows = 0;
  };

  template <class ProblemShape>
  static constexpr Params to_underlying_arguments(ProblemShape problem_shapes, Arguments const& args, void* workspace) {
    Params p;
    static_cast<typename Base::Params&>(p) = Base::to_underlying_arguments(problem_shapes, args, workspace);
    p.tma_transaction_bytes = kTransactionBytesB;
    p.hidden = args.hidden;
    p.row_source = args.row_source;
    p.expert_offsets = args.expert_offsets;
    p.max_rows = args.max_rows;
    return p;
  }

  // The kernel calls this in both producer warps whenever their next tile is another group's.
  template <class InputTensors, class ProblemShapeMNKL>
  CUTLASS_DEVICE InputTensors tensors_perform_update(InputTensors const& inputs, typename Base::Params const& params,
                                                     ProblemShapeMNKL shape, int32_t next_batch) {
    group_ = next_batch;
    rows_ = static_cast<int>(cute::get<0>(shape));
    k_ = static_cast<int>(cute::get<2>(shape));
    return Base::tensors_perform_update(inputs, params, shape, next_batch);
  }

  // The mainloop producer warp: B's TMA copy, and the gather of the tile's first half of rows.
  template <class TensorA, class TensorB, class TensorMapA, class TensorMapB, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(Params const& params, MainloopPipeline pipeline, PipelineState smem_pipe_write,
                           cute::tuple<TensorA, TensorB> const& load_inputs,
                           cute::tuple<TensorMapA, TensorMapB> const& input_tensormaps, BlockCoord const& blk_coord,
                           KTileIterator k_tile_iter, int k_tile_count, int thread_idx, uint32_t, TensorStorage& shared_tensors) {
    using namespace cute;
    __shared__ int table[kRowsPerWarp];
    auto sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), SmemLayoutB{});
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    auto block_tma_b = params.tma_load_b.get_slice(0);
    auto tBgB = block_tma_b.partition_S(get<1>(load_inputs)(_, _, n_coord, _, l_coord));  // (TMA,TMA_N,TMA_K,k)
    auto tBsB = block_tma_b.partition_D(sB);                                             // (TMA,TMA_N,TMA_K,PIPE)
    fill_table(params, table, static_cast<int>(m_coord), 0, thread_idx);
    const bool elected = elect_one_sync();
    for (; k_tile_count > 0; --k_tile_count) {
      pipeline.producer_acquire(smem_pipe_write);  // every lane waits; the leader arrives with B's bytes
      auto* barrier = pipeline.producer_get_barrier(smem_pipe_write);
      if (elected)
        copy(params.tma_load_b.with(get<1>(input_tensormaps), *barrier, 0), tBgB(_, _, _, *k_tile_iter),
             tBsB(_, _, _, smem_pipe_write.index()));
      gather(params, table, 0, k_index(*k_tile_iter), smem_pipe_write, barrier, thread_idx, shared_tensors);
      ++k_tile_iter;
      ++smem_pipe_write;
    }
  }

  // The auxiliary producer warp: the gather of the tile's second half of rows.
  template <class LoadInputs, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load_auxiliary(Params const& params, MainloopPipeline pipeline, PipelineState smem_pipe_write,
                                     LoadInputs const&, BlockCoord const& blk_coord, KTileIterator k_tile_iter,
                                     int k_tile_count, int thread_idx, uint32_t, TensorStorage& shared_tensors) {
    __shared__ int table[kRowsPerWarp];
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    fill_table(params, table, static_cast<int>(m_coord), 1, thread_idx);
    for (; k_tile_count > 0; --k_tile_count) {
      pipeline.producer_acquire(smem_pipe_write);  // not the leader: a wait only
      gather(params, table, 1, k_index(*k_tile_iter), smem_pipe_write,
             pipeline.producer_get_barrier(smem_pipe_write), thread_idx, shared_tensors);
      ++k_tile_iter;
      ++smem_pipe_write;
    }
  }

 private:
  int group_ = 0, rows_ = 0, k_ = 0;  // the current group (tensors_perform_update), its M and K

  // The k-tile iterator's coordinate: an integer for the one K mode (a tuple if K were nested).
  template <class Coord>
  CUTLASS_DEVICE static int k_index(Coord const& c) {
    if constexpr (cute::is_tuple<Coord>::value)
      return static_cast<int>(cute::get<0>(c));
    else
      return static_cast<int>(c);
  }

  // The hidden row of each of this warp's rows of tile m (half h), or -1 past the group's rows.
  CUTLASS_DEVICE void fill_table(Params const& params, int* table, int m, int h, int lane) const {
    __syncwarp();  // every lane is done reading the last tile's table
    const int64_t begin = min(max(params.expert_offsets[group_], int64_t{0}), params.max_rows);
    for (int i = lane; i < kRowsPerWarp; i += 32) {
      const int row = m * kBlockM + h * kRowsPerWarp + i;  // within the group
      table[i] = row < rows_ ? static_cast<int>(params.row_source[begin + row]) : -1;
    }
    __syncwarp();
  }

  // One k-block of this warp's rows: lane l copies chunk l % 8 of rows l / 8, l / 8 + 4, ... (eight
  // lanes read one row's 128 bytes), then arrives on the stage's barrier once its copies land.
  template <class Barrier>
  CUTLASS_DEVICE void gather(Params const& params, const int* table, int h, int k_block, PipelineState const& state,
                             Barrier* barrier, int lane, TensorStorage& shared_tensors) const {
    using namespace cute;
    auto sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), SmemLayoutA{});  // (BLK_M,BLK_K,PIPE)
    const int c = lane % kChunksPerRow;
    const int col = k_block * kBlockK + c * kChunk;
    const int stage = state.index();
    CUTLASS_PRAGMA_UNROLL
    for (int j = 0; j < kRowsPerWarp / kRowsPerPass; ++j) {
      const int i = lane / kChunksPerRow + kRowsPerPass * j;
      const int src_row = table[i];
      const bool in = src_row >= 0 && col < k_;
      const ElementA* src = params.hidden + (in ? static_cast<int64_t>(src_row) * k_ + col : 0);
      const uint32_t dst = cast_smem_ptr_to_uint(raw_pointer_cast(&sA(h * kRowsPerWarp + i, c * kChunk, stage)));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(in ? 16 : 0) : "memory");
    }
    cutlass::arch::cpasync_barrier_arrive_noinc(reinterpret_cast<const uint64_t*>(barrier));
  }
};

}  // namespace moekit::cuda::moe::sm90

// The kernel runs load_auxiliary in its auxiliary producer warp for mainloops whose policy says so.
namespace cutlass::gemm::kernel::detail {
template <class BasePolicy>
struct HasAuxiliaryLoad<moekit::cuda::moe::sm90::GatherPolicy<BasePolicy>> : cute::true_type {};
}  // namespace cutlass::gemm::kernel::detail
