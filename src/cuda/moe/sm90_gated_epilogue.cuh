// The sm_90a grouped GEMM's gated-activation epilogue: gemm1 and the gated activation in one kernel.
//
// gemm1's weight W13 holds the gate and up rows interleaved (gate j at row 2j, up j at row 2j + 1:
// GateUpLayout::kInterleaved, GPT-OSS's checkpoint layout). A wgmma accumulator fragment holds two
// adjacent columns per register pair (the F32 C layout of SM90_64xNx16: value modes (2, 2, N/8) with
// column strides 1, -, 8; cute/atom/mma_traits_sm90_gmma.hpp, CLayout_64xN), so each thread owns
// gate j and up j of the same row and applies act(gate + bias, up + bias) in float32 straight from
// the accumulators: the N-wide gemm1 rows are never written, nor read back by an activation kernel,
// and the output (N / 2 wide) is the GEMM's rounding only (the unfused path rounds gemm1's rows to
// 16 bits first).
//
// Stores: the four threads of a quad own columns 2q, 2q + 1 of every 8-column group, so each writes
// one output of four consecutive ones. A 4 x 4 transpose inside the quad (three xor shuffles per four
// groups) gives each thread four consecutive outputs of one group: an 8-byte store per row instead
// of four 2-byte ones.
//
// No shared memory, no TMA store: registers to global memory (CUTLASS's PtrArrayNoSmemWarpSpecialized
// epilogue schedule, wrapped in Sm90TmaWarpSpecializedAdapter as CUTLASS's own DefaultEpilogueArray
// is; its interface is what the ptr-array cooperative and ping-pong kernels call).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/detail.hpp"
#include "cutlass/epilogue/dispatch_policy.hpp"
#include "cutlass/numeric_conversion.h"

#include "cuda/moe/activation.cuh"
#include "cuda/moe/expert_bias.cuh"

namespace moekit::cuda::moe::sm90 {

template <class ElementD_, class StrideD_>
class GatedEpilogueArray {
 public:
  using EpilogueSchedule = cutlass::epilogue::PtrArrayNoSmemWarpSpecialized;
  using DispatchPolicy = EpilogueSchedule;
  using ElementD = ElementD_;
  using ElementOutput = ElementD;
  using ElementC = void;  // no source operand
  using ElementAccumulator = float;
  using ElementCompute = float;
  using ElementScalar = float;
  using StrideD = StrideD_;  // a pointer type: one stride per group
  using InternalStrideD = cute::remove_pointer_t<StrideD>;
  using StrideC = StrideD;
  using InternalStrideC = InternalStrideD;
  using GmemTiledCopyC = void;
  using GmemTiledCopyD = void;
  // Named by GemmUniversalAdapter only (as its EpilogueOutputOp); this epilogue applies none.
  struct ThreadEpilogueOp {
    using ElementOutput = ElementD;
    using ElementAccumulator = float;
    using ElementCompute = float;
  };
  static_assert(sizeof(ElementD) == 2, "the gated epilogue writes 16-bit outputs");

  struct SharedStorage {};
  using TensorMapStorage = SharedStorage;

  struct Arguments {
    ElementD** ptr_D = nullptr;  // per group: its first output row (N / 2 wide)
    StrideD dD{};                // per group: the output row stride, get<0>
    int activation = 0;          // a gated moekit::Activation
    float alpha = 1.0f, limit = 0.0f;
    const void* bias = nullptr;  // [groups, N] (the gate/up rows' biases, interleaved like W13) or null
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
    return args.ptr_D != nullptr && args.dD != nullptr && activation_is_gated(static_cast<Activation>(args.activation));
  }

  CUTLASS_HOST_DEVICE explicit GatedEpilogueArray(Params const& p) : params(p) {}

  CUTLASS_DEVICE bool is_source_needed() { return false; }

  template <class ProblemShapeMNKL, class BlockShapeMNK, class BlockCoordMNKL, class FrgEngine, class FrgLayout,
            class TiledMma, class ResidueMNK>
  CUTLASS_DEVICE void operator()(ProblemShapeMNKL problem_shape_mnkl, BlockShapeMNK blk_shape_mnk,
                                 BlockCoordMNKL blk_coord_mnkl, cute::Tensor<FrgEngine, FrgLayout> const& acc,
                                 TiledMma tiled_mma, ResidueMNK, int thread_idx, char*) {
    // The epilogue is straight-line code (the accumulators are registers, so its loops unroll) run
    // once per tile, and an instruction run once costs about 3 ns of fetch (docs/perf-notes.md step
    // 8 a): so the activation and the bias's type are chosen here, once, and each tile runs only the
    // compact body of its own case.
    const auto a = static_cast<Activation>(params.activation);
    const bool f32 = params.bias_type == Elem::kF32;
    if (a == Activation::kSwiGLU) {
      if (params.bias == nullptr) return body<Act::kSwiGLU, Bias::kNone>(problem_shape_mnkl, blk_shape_mnk, blk_coord_mnkl, acc, tiled_mma, thread_idx);
      if (f32) return body<Act::kSwiGLU, Bias::kF32>(problem_shape_mnkl, blk_shape_mnk, blk_coord_mnkl, acc, tiled_mma, thread_idx);
      return body<Act::kSwiGLU, Bias::k16>(problem_shape_mnkl, blk_shape_mnk, blk_coord_mnkl, acc, tiled_mma, thread_idx);
    }
    if (a == Activation::kSwiGLUClamped) {
      if (params.bias == nullptr) return body<Act::kClamped, Bias::kNone>(problem_shape_mnkl, blk_shape_mnk, blk_coord_mnkl, acc, tiled_mma, thread_idx);
      if (f32) return body<Act::kClamped, Bias::kF32>(problem_shape_mnkl, blk_shape_mnk, blk_coord_mnkl, acc, tiled_mma, thread_idx);
      return body<Act::kClamped, Bias::k16>(problem_shape_mnkl, blk_shape_mnk, blk_coord_mnkl, acc, tiled_mma, thread_idx);
    }
    body<Act::kOther, Bias::kAny>(problem_shape_mnkl, blk_shape_mnk, blk_coord_mnkl, acc, tiled_mma, thread_idx);
  }

 private:
  // kSwiGLU and kClamped (GPT-OSS) with the fast exponential and division (the result is rounded to
  // 16 bits); kOther: the GeGLU variants through activation.cuh's gated_act, as the unfused kernel.
  enum class Act { kSwiGLU, kClamped, kOther };
  // The bias: none, float32, 16-bit (bf16 or f16), or any of them chosen per element (kOther).
  enum class Bias { kNone, kF32, k16, kAny };

  template <Act A>
  CUTLASS_DEVICE float activate(float gate, float up) const {
    if constexpr (A == Act::kSwiGLU) {
      return __fdividef(gate, 1.0f + __expf(-gate)) * up;
    } else if constexpr (A == Act::kClamped) {
      const float g = fminf(gate, params.limit);
      const float u = fminf(fmaxf(up, -params.limit), params.limit);
      return (u + 1.0f) * __fdividef(g, 1.0f + __expf(-params.alpha * g));
    } else {
      return gated_act(params.activation, gate, up, params.alpha, params.limit);
    }
  }

  template <Bias B>
  CUTLASS_DEVICE float bias_at(int64_t i) const {
    if constexpr (B == Bias::kF32) {
      return static_cast<const float*>(params.bias)[i];
    } else if constexpr (B == Bias::k16) {
      const uint16_t u = static_cast<const uint16_t*>(params.bias)[i];
      return params.bias_type == Elem::kBF16 ? __uint_as_float(static_cast<uint32_t>(u) << 16)
                                             : __half2float(__ushort_as_half(u));
    } else {
      return load_bias(params.bias, params.bias_type, i);
    }
  }

  template <Act A, Bias B, class ProblemShapeMNKL, class BlockShapeMNK, class BlockCoordMNKL, class FrgEngine,
            class FrgLayout, class TiledMma>
  CUTLASS_DEVICE void body(ProblemShapeMNKL problem_shape_mnkl, BlockShapeMNK blk_shape_mnk,
                           BlockCoordMNKL blk_coord_mnkl, cute::Tensor<FrgEngine, FrgLayout> const& acc,
                           TiledMma tiled_mma, int thread_idx) const {
    using namespace cute;
    static_assert(is_static<FrgLayout>::value, "the accumulator layout must be static");
    // (VEC, MMA_M, MMA_N) with VEC = (2 adjacent columns, 2 rows 8 apart, G groups 8 columns apart).
    static_assert(rank<0>(FrgLayout{}) == 3 && size<0, 0>(FrgLayout{}) == 2 && size<0, 1>(FrgLayout{}) == 2,
                  "the gated epilogue expects the SM90 wgmma F32 accumulator layout");
    constexpr int G = size<0, 2>(FrgLayout{});
    static_assert(G % 4 == 0, "the quad transpose takes four 8-column groups at a time");
    constexpr int MmaM = size<1>(FrgLayout{});
    constexpr int MmaN = size<2>(FrgLayout{});
    // Flat index of (v0, v1, g, mm, nn): the fragment and its coordinate tensor share this shape.
    auto at = [](int v0, int v1, int g, int mm, int nn) { return v0 + 2 * v1 + 4 * g + 4 * G * (mm + MmaM * nn); };

    const int M = static_cast<int>(get<0>(problem_shape_mnkl));
    const int N = static_cast<int>(get<1>(problem_shape_mnkl));
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord_mnkl;
    const int group = static_cast<int>(l_coord);
    ElementD* d = params.ptr_D[group];
    const int64_t ldd = get<0>(params.dD[group]);

    auto c_mn = local_tile(make_identity_tensor(make_shape(M, N)), take<0, 2>(blk_shape_mnk), make_coord(m_coord, n_coord));
    auto tCcD = tiled_mma.get_thread_slice(thread_idx).partition_C(c_mn);  // (VEC, MMA_M, MMA_N) -> (m, n)
    CUTE_STATIC_ASSERT_V(size(tCcD) == size(acc), "one coordinate per accumulator");

    const int q = thread_idx & 3;  // the lane's place in its quad
    const int64_t bias_base = static_cast<int64_t>(group) * N;
    cutlass::NumericArrayConverter<ElementD, float, 4> to_out;

    CUTLASS_PRAGMA_UNROLL
    for (int nn = 0; nn < MmaN; ++nn) {
      CUTLASS_PRAGMA_UNROLL
      for (int h = 0; h < G / 4; ++h) {
        // The biases of this thread's four gate/up column pairs (the same for every row it holds).
        float bg[4] = {}, bu[4] = {};
        if constexpr (B != Bias::kNone) {
          if (B != Bias::kAny || params.bias != nullptr) {
            CUTLASS_PRAGMA_UNROLL
            for (int j = 0; j < 4; ++j) {
              const int col = static_cast<int>(get<1>(tCcD(at(0, 0, 4 * h + j, 0, nn))));
              if (col < N) {
                bg[j] = bias_at<B>(bias_base + col);
                bu[j] = bias_at<B>(bias_base + col + 1);
              }
            }
          }
        }
        CUTLASS_PRAGMA_UNROLL
        for (int mm = 0; mm < MmaM; ++mm) {
          CUTLASS_PRAGMA_UNROLL
          for (int v1 = 0; v1 < 2; ++v1) {
            // o[j]: this thread's output of group 4h + j (output column = gate column / 2).
            float o[4];
            CUTLASS_PRAGMA_UNROLL
            for (int j = 0; j < 4; ++j)
              o[j] = activate<A>(acc(at(0, v1, 4 * h + j, mm, nn)) + bg[j], acc(at(1, v1, 4 * h + j, mm, nn)) + bu[j]);
            // Transpose inside the quad: lane q ends with the four outputs of group 4h + q.
            auto pick = [&](int i) { return i == 0 ? o[0] : i == 1 ? o[1] : i == 2 ? o[2] : o[3]; };
            const float r1 = __shfl_xor_sync(0xffffffffu, pick(q ^ 1), 1);
            const float r2 = __shfl_xor_sync(0xffffffffu, pick(q ^ 2), 2);
            const float r3 = __shfl_xor_sync(0xffffffffu, pick(q ^ 3), 3);
            const float own = pick(q);
            auto from = [&](int p) {  // output p of the group comes from lane p (p ^ q rounds away)
              const int r = p ^ q;
              return r == 0 ? own : r == 1 ? r1 : r == 2 ? r2 : r3;
            };
            cutlass::Array<float, 4> f;
            CUTLASS_PRAGMA_UNROLL
            for (int p = 0; p < 4; ++p) f[p] = from(p);
            // The group's coordinates: this lane's gate column of group 4h + q is 8 (4h + q) + 2q past
            // the tile's first column, so the group's first gate column is that minus 2q.
            const auto c = tCcD(at(0, v1, 4 * h + q, mm, nn));
            const int row = static_cast<int>(get<0>(c));
            const int col0 = static_cast<int>(get<1>(c)) - 2 * q;  // a multiple of 8; N % 8 == 0
            if (row < M && col0 < N) {
              const cutlass::Array<ElementD, 4> out = to_out(f);
              *reinterpret_cast<uint2*>(d + row * ldd + col0 / 2) = *reinterpret_cast<const uint2*>(&out);
            }
          }
        }
      }
    }
  }

  Params params;
};

}  // namespace moekit::cuda::moe::sm90
