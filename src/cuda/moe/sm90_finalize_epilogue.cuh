// The sm_90a grouped GEMM's finalize epilogue: gemm2 and the weighted combine in one kernel.
//
// Routed row r (rows grouped by expert; expert e's rows start at expert_offsets[e]) belongs to token
// row_dest[r] with the routing weight row_weight[r]. Instead of writing gemm2's rows for a finalize
// kernel to read back and sum, each accumulator goes straight into the token's float32 sum:
//   accumulator[row_dest[r], n] += scale * row_weight[r] * (acc[r, n] + bias[e, n])
// (row_weight null: factor = scale), with vector reductions (red.global.add.v4.f32, sm_90) that the
// L2 carries out. The caller zeroes the accumulator before and converts it to the output type after
// (launch_convert). The order of the K adds into one token is the order the tiles finish in, so the
// result is bitwise reproducible only where a token receives at most two rows (0 + a + b == 0 + b + a);
// the plan rule gemm2_finalize_fusion keeps the fixed-order finalize in deterministic mode otherwise.
//
// What it saves (the stage path: gemm2 writes 16-bit rows, the finalize kernel reads them back): the
// rows' bytes twice (T*K*H*2 written and read), against the accumulator's T*H*4 zeroed, reduced into
// L2 K times, and read once. Where the accumulator does not stay in L2 each of the K reductions would
// reach DRAM, which is why the rule turns the fusion off above a size (plan_rules.cpp).
//
// Stores: a quad's four threads own columns 2q, 2q + 1 of each 8-column group (the F32 C layout of
// SM90_64xNx16; sm90_gated_epilogue.cuh says more). One xor-1 exchange of a column pair per two groups
// gives each thread four consecutive columns: the even lane of a pair takes columns 2q .. 2q + 3 of the
// first group, the odd lane 2q - 2 .. 2q + 1 of the second, so every reduction is one 16-byte v4.
//
// No shared memory, no TMA store: registers to global memory, like the gated epilogue (CUTLASS's
// PtrArrayNoSmemWarpSpecialized schedule wrapped in Sm90TmaWarpSpecializedAdapter).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/detail.hpp"
#include "cutlass/epilogue/dispatch_policy.hpp"

#include "cuda/moe/expert_bias.cuh"

namespace moekit::cuda::moe::sm90 {

// accumulator[0..3] += v (one 16-byte reduction in L2; p 16-byte aligned).
CUTLASS_DEVICE void reduce_add_v4(float* p, float v0, float v1, float v2, float v3) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v0), "f"(v1), "f"(v2), "f"(v3) : "memory");
}

template <class ElementD_, class StrideD_>
class FinalizeEpilogueArray {
 public:
  using EpilogueSchedule = cutlass::epilogue::PtrArrayNoSmemWarpSpecialized;
  using DispatchPolicy = EpilogueSchedule;
  using ElementD = ElementD_;  // the kernel's interface names it; nothing of this type is written
  using ElementOutput = ElementD;
  using ElementC = void;
  using ElementAccumulator = float;
  using ElementCompute = float;
  using ElementScalar = float;
  using StrideD = StrideD_;
  using InternalStrideD = cute::remove_pointer_t<StrideD>;
  using StrideC = StrideD;
  using InternalStrideC = InternalStrideD;
  using GmemTiledCopyC = void;
  using GmemTiledCopyD = void;
  struct ThreadEpilogueOp {
    using ElementOutput = ElementD;
    using ElementAccumulator = float;
    using ElementCompute = float;
  };

  struct SharedStorage {};
  using TensorMapStorage = SharedStorage;

  struct Arguments {
    ElementD** ptr_D = nullptr;  // unused (the grouped kernel's interface)
    StrideD dD{};
    const int64_t* expert_offsets = nullptr;  // [groups + 1]: group e's first routed row
    int64_t max_rows = 0;                     // the bound the offsets are clamped to
    const int32_t* row_dest = nullptr;        // [rows]: each routed row's token (accumulator row)
    const float* row_weight = nullptr;        // [rows] or null
    float scale = 1.0f;
    float* accumulator = nullptr;             // [tokens, N] float32, 16-byte aligned
    const void* bias = nullptr;               // [groups, N] or null
    Elem bias_type = Elem::kF32;
  };
  using Params = Arguments;

  template <class ProblemShape>
  static constexpr Params to_underlying_arguments(ProblemShape const&, Arguments const& args, void*) {
    return args;
  }
  template <class ProblemShape>
  static size_t get_workspace_size(ProblemShape const&, Arguments const&, int) {
    return 0;
  }
  template <class ProblemShape>
  static cutlass::Status initialize_workspace(ProblemShape const&, Arguments const&, void*, cudaStream_t,
                                              cutlass::CudaHostAdapter* = nullptr) {
    return cutlass::Status::kSuccess;
  }
  template <class ProblemShape>
  static bool can_implement(ProblemShape const&, Arguments const& args) {
    return args.expert_offsets != nullptr && args.row_dest != nullptr && args.accumulator != nullptr &&
           reinterpret_cast<uintptr_t>(args.accumulator) % 16 == 0;
  }

  CUTLASS_HOST_DEVICE explicit FinalizeEpilogueArray(Params const& p) : params(p) {}

  CUTLASS_DEVICE bool is_source_needed() { return false; }

  template <class ProblemShapeMNKL, class BlockShapeMNK, class BlockCoordMNKL, class FrgEngine, class FrgLayout,
            class TiledMma, class ResidueMNK>
  CUTLASS_DEVICE void operator()(ProblemShapeMNKL problem_shape_mnkl, BlockShapeMNK blk_shape_mnk,
                                 BlockCoordMNKL blk_coord_mnkl, cute::Tensor<FrgEngine, FrgLayout> const& acc,
                                 TiledMma tiled_mma, ResidueMNK, int thread_idx, char*) {
    // The bias's type is chosen once per tile, so each tile runs only its own case's body (an
    // instruction run once costs fetch time: docs/perf-notes.md step 8 a).
    if (params.bias == nullptr) return body<Bias::kNone>(problem_shape_mnkl, blk_shape_mnk, blk_coord_mnkl, acc, tiled_mma, thread_idx);
    if (params.bias_type == Elem::kF32) return body<Bias::kF32>(problem_shape_mnkl, blk_shape_mnk, blk_coord_mnkl, acc, tiled_mma, thread_idx);
    body<Bias::k16>(problem_shape_mnkl, blk_shape_mnk, blk_coord_mnkl, acc, tiled_mma, thread_idx);
  }

 private:
  enum class Bias { kNone, kF32, k16 };

  template <Bias B>
  CUTLASS_DEVICE float bias_at(int64_t i) const {
    if constexpr (B == Bias::kF32) {
      return static_cast<const float*>(params.bias)[i];
    } else {
      const uint16_t u = static_cast<const uint16_t*>(params.bias)[i];
      return params.bias_type == Elem::kBF16 ? __uint_as_float(static_cast<uint32_t>(u) << 16)
                                             : __half2float(__ushort_as_half(u));
    }
  }

  template <Bias B, class ProblemShapeMNKL, class BlockShapeMNK, class BlockCoordMNKL, class FrgEngine, class FrgLayout,
            class TiledMma>
  CUTLASS_DEVICE void body(ProblemShapeMNKL problem_shape_mnkl, BlockShapeMNK blk_shape_mnk,
                           BlockCoordMNKL blk_coord_mnkl, cute::Tensor<FrgEngine, FrgLayout> const& acc,
                           TiledMma tiled_mma, int thread_idx) const {
    using namespace cute;
    static_assert(is_static<FrgLayout>::value, "the accumulator layout must be static");
    // (VEC, MMA_M, MMA_N) with VEC = (2 adjacent columns, 2 rows 8 apart, G groups 8 columns apart).
    static_assert(rank<0>(FrgLayout{}) == 3 && size<0, 0>(FrgLayout{}) == 2 && size<0, 1>(FrgLayout{}) == 2,
                  "the finalize epilogue expects the SM90 wgmma F32 accumulator layout");
    constexpr int G = size<0, 2>(FrgLayout{});
    static_assert(G % 2 == 0, "the pair exchange takes two 8-column groups at a time");
    constexpr int MmaM = size<1>(FrgLayout{});
    constexpr int MmaN = size<2>(FrgLayout{});
    auto at = [](int v0, int v1, int g, int mm, int nn) { return v0 + 2 * v1 + 4 * g + 4 * G * (mm + MmaM * nn); };

    const int M = static_cast<int>(get<0>(problem_shape_mnkl));
    const int N = static_cast<int>(get<1>(problem_shape_mnkl));
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord_mnkl;
    const int group = static_cast<int>(l_coord);
    // The group's first routed row, clamped as the setup kernel clamps it (a bad offset array cannot
    // send the epilogue past row_dest).
    const int64_t begin = min(max(params.expert_offsets[group], int64_t{0}), params.max_rows);

    auto c_mn = local_tile(make_identity_tensor(make_shape(M, N)), take<0, 2>(blk_shape_mnk), make_coord(m_coord, n_coord));
    auto tCcD = tiled_mma.get_thread_slice(thread_idx).partition_C(c_mn);  // (VEC, MMA_M, MMA_N) -> (m, n)
    CUTE_STATIC_ASSERT_V(size(tCcD) == size(acc), "one coordinate per accumulator");

    // Each of this thread's rows: its token's accumulator row and its factor (rows past M: none).
    float* dst[MmaM][2];
    float factor[MmaM][2];
    CUTLASS_PRAGMA_UNROLL
    for (int mm = 0; mm < MmaM; ++mm) {
      CUTLASS_PRAGMA_UNROLL
      for (int v1 = 0; v1 < 2; ++v1) {
        const int row = static_cast<int>(get<0>(tCcD(at(0, v1, 0, mm, 0))));
        dst[mm][v1] = nullptr;
        factor[mm][v1] = 0.0f;
        if (row < M) {
          const int64_t r = begin + row;
          dst[mm][v1] = params.accumulator + static_cast<int64_t>(params.row_dest[r]) * N;
          factor[mm][v1] = params.scale * (params.row_weight ? params.row_weight[r] : 1.0f);
        }
      }
    }

    const bool odd = (thread_idx & 1) != 0;  // the lane's place in its pair of a quad
    const int64_t bias_base = static_cast<int64_t>(group) * N;
    CUTLASS_PRAGMA_UNROLL
    for (int nn = 0; nn < MmaN; ++nn) {
      CUTLASS_PRAGMA_UNROLL
      for (int h = 0; h < G / 2; ++h) {
        // The four columns this lane reduces: the even lane's own pair of group 2h and its partner's
        // after it; the odd lane's partner's pair of group 2h + 1 and its own after it.
        const int own_col = static_cast<int>(get<1>(tCcD(at(0, 0, 2 * h + (odd ? 1 : 0), 0, nn))));
        const int col = odd ? own_col - 2 : own_col;  // a multiple of 4
        float b[4] = {0.f, 0.f, 0.f, 0.f};
        if constexpr (B != Bias::kNone) {
          if (col < N) {
            CUTLASS_PRAGMA_UNROLL
            for (int j = 0; j < 4; ++j) b[j] = bias_at<B>(bias_base + col + j);
          }
        }
        CUTLASS_PRAGMA_UNROLL
        for (int mm = 0; mm < MmaM; ++mm) {
          CUTLASS_PRAGMA_UNROLL
          for (int v1 = 0; v1 < 2; ++v1) {
            const float e0 = acc(at(0, v1, 2 * h, mm, nn)), e1 = acc(at(1, v1, 2 * h, mm, nn));
            const float o0 = acc(at(0, v1, 2 * h + 1, mm, nn)), o1 = acc(at(1, v1, 2 * h + 1, mm, nn));
            // The even lane sends its group-2h+1 pair and gets its partner's group-2h pair; the odd
            // lane the reverse. Every lane shuffles (no divergence before the exchange).
            const float s0 = __shfl_xor_sync(0xffffffffu, odd ? e0 : o0, 1);
            const float s1 = __shfl_xor_sync(0xffffffffu, odd ? e1 : o1, 1);
            float v[4];
            if (odd) {
              v[0] = s0, v[1] = s1, v[2] = o0, v[3] = o1;
            } else {
              v[0] = e0, v[1] = e1, v[2] = s0, v[3] = s1;
            }
            float* p = dst[mm][v1];
            if (p != nullptr && col < N) {
              const float f = factor[mm][v1];
              reduce_add_v4(p + col, f * (v[0] + b[0]), f * (v[1] + b[1]), f * (v[2] + b[2]), f * (v[3] + b[3]));
            }
          }
        }
      }
    }
  }

  Params params;
};

}  // namespace moekit::cuda::moe::sm90
