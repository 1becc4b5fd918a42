// The sm_90a grouped GEMM's dispatcher: checks the arguments and sends them to the tile's CUTLASS
// kernels (sm90_grouped_gemm_kernel.cuh, built once per tile by sm90_tile_instance.cu). Plain C++.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda/moe/sm90_grouped_gemm.h"
#include "cuda/moe/sm90_grouped_gemm_tiles.h"
#include "moekit/moe_problem.h"

namespace moekit::cuda::moe {

namespace sm90 {

const char* elem_name(Elem e) {
  switch (e) {
    case Elem::kF32: return "f32";
    case Elem::kF16: return "f16";
    case Elem::kBF16: return "bf16";
  }
  return "?";
}

}  // namespace sm90

namespace {

constexpr size_t kScratchAlign = 256;

// Calls f(std::integral_constant<Sm90Tile, T>) for the tile t names; false for an unknown value.
template <class F>
bool with_tile(Sm90Tile t, F&& f) {
  switch (t) {
    case Sm90Tile::kM128N256C1x1: f(std::integral_constant<Sm90Tile, Sm90Tile::kM128N256C1x1>{}); return true;
    case Sm90Tile::kM128N256C1x2: f(std::integral_constant<Sm90Tile, Sm90Tile::kM128N256C1x2>{}); return true;
    case Sm90Tile::kM64N128C1x1: f(std::integral_constant<Sm90Tile, Sm90Tile::kM64N128C1x1>{}); return true;
    case Sm90Tile::kM64N128C1x2: f(std::integral_constant<Sm90Tile, Sm90Tile::kM64N128C1x2>{}); return true;
    case Sm90Tile::kM128N128C1x1: f(std::integral_constant<Sm90Tile, Sm90Tile::kM128N128C1x1>{}); return true;
    case Sm90Tile::kM192N128C1x1: f(std::integral_constant<Sm90Tile, Sm90Tile::kM192N128C1x1>{}); return true;
    case Sm90Tile::kM192N256C1x1: f(std::integral_constant<Sm90Tile, Sm90Tile::kM192N256C1x1>{}); return true;
  }
  return false;
}

}  // namespace

size_t sm90_gemm_scratch_bytes(int experts, int64_t /*n*/, int64_t /*k*/, Elem /*type*/, int sm_count) {
  if (experts <= 0 || sm_count <= 0) return 0;
  // One scratch serves every tile: the largest need over them.
  size_t bytes = 0;
  for (Sm90Tile t : kSm90TileList)
    with_tile(t, [&](auto tile) { bytes = std::max(bytes, sm90::tile_scratch_bytes<decltype(tile)::value>(experts, sm_count)); });
  return bytes;
}

Status launch_sm90_grouped_gemm(const Sm90GemmArgs& a, void* stream) {
  if (a.experts <= 0) return Status::InvalidArgument("sm90 grouped GEMM: experts must be positive");
  if (a.n <= 0 || a.k <= 0 || a.n % 8 != 0 || a.k % 8 != 0)
    return Status::InvalidArgument("sm90 grouped GEMM: n and k must be positive multiples of 8 (n=" +
                                   std::to_string(a.n) + ", k=" + std::to_string(a.k) + ")");
  if (a.n > INT32_MAX || a.k > INT32_MAX || a.max_rows < 0 || a.max_rows > INT32_MAX)
    return Status::Unsupported("sm90 grouped GEMM: n, k and max_rows must fit in int32");
  if (a.sm_count <= 0) return Status::InvalidArgument("sm90 grouped GEMM: sm_count must be positive");
  if (a.tail_split != Sm90TailSplit::kOff && a.tail_split != Sm90TailSplit::kAuto && a.tail_split != Sm90TailSplit::kAlways)
    return Status::InvalidArgument("sm90 grouped GEMM: tail_split=" + std::to_string(static_cast<int>(a.tail_split)) +
                                   " (0 off, 1 auto, 2 always)");
  // The parts' rule (sm90_tall_tail_rows) sizes the head in 128-row tiles and the tail for one 192-row tile.
  if (a.row_part == Sm90RowPart::kHead && !sm90_is_head_tile(a.tile))
    return Status::InvalidArgument("sm90 grouped GEMM: row_part=head needs a 128-row tile, not tile " +
                                   std::to_string(static_cast<int>(a.tile)));
  if (a.row_part == Sm90RowPart::kTail && !sm90_is_tail_tile(a.tile))
    return Status::InvalidArgument("sm90 grouped GEMM: row_part=tail needs a 192-row tile (kM192N128C1x1, kM192N256C1x1), not tile " +
                                   std::to_string(static_cast<int>(a.tile)));
  if (a.row_part != Sm90RowPart::kAll && a.row_part != Sm90RowPart::kHead && a.row_part != Sm90RowPart::kTail)
    return Status::InvalidArgument("sm90 grouped GEMM: row_part=" + std::to_string(static_cast<int>(a.row_part)) +
                                   " (0 all, 1 head, 2 tail)");
  if (a.expert_offsets == nullptr || a.scratch == nullptr)
    return Status::InvalidArgument("sm90 grouped GEMM: null expert_offsets or scratch");
  if (reinterpret_cast<uintptr_t>(a.scratch) % kScratchAlign != 0)
    return Status::InvalidArgument("sm90 grouped GEMM: scratch must be 256-byte aligned");
  // TMA: every group's base address must be 16-byte aligned; with n, k % 8 == 0 that holds for every
  // row offset once the bases are.
  if (reinterpret_cast<uintptr_t>(a.a) % 16 != 0 || reinterpret_cast<uintptr_t>(a.b) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(a.d) % 16 != 0)
    return Status::InvalidArgument("sm90 grouped GEMM: A, B and D must be 16-byte aligned");
  if (a.max_rows == 0) return Status::Ok();
  if (a.type != Elem::kBF16 && a.type != Elem::kF16)
    return Status::Unsupported(std::string("sm90 grouped GEMM: input type ") + sm90::elem_name(a.type) + " (bf16 or f16 only)");
  if (a.gated_activation >= 0) {
    if (!activation_is_gated(static_cast<Activation>(a.gated_activation)))
      return Status::InvalidArgument("sm90 grouped GEMM: gated_activation=" + std::to_string(a.gated_activation) +
                                     " is not a gated activation");
    if (a.d_type != a.type)
      return Status::Unsupported(std::string("sm90 grouped GEMM: the gated epilogue writes the input type (") +
                                 sm90::elem_name(a.type) + "), not d_type=" + sm90::elem_name(a.d_type));
    if (a.bias != nullptr && a.bias_type != Elem::kF32 && a.bias_type != Elem::kBF16 && a.bias_type != Elem::kF16)
      return Status::InvalidArgument("sm90 grouped GEMM: unknown bias_type");
  }
  Status st = Status::InvalidArgument("sm90 grouped GEMM: unknown tile " + std::to_string(static_cast<int>(a.tile)));
  if (a.gated_activation >= 0)
    with_tile(a.tile, [&](auto tile) { st = sm90::launch_gated_tile<decltype(tile)::value>(a, stream); });
  else
    with_tile(a.tile, [&](auto tile) { st = sm90::launch_tile<decltype(tile)::value>(a, stream); });
  return st;
}

Status launch_sm90_grouped_gemm_in_parts(const Sm90GemmArgs& a, Sm90Tile tail_tile, void* tail_scratch, size_t tail_scratch_bytes,
                                         bool beside, void* stream) {
  if (a.overlap != Sm90Overlap::kNone || a.row_part != Sm90RowPart::kAll || a.setup_job != nullptr || !a.run_setup || !a.run_gemm)
    return Status::InvalidArgument("sm90 grouped GEMM in parts: the whole GEMM's arguments (overlap none, row_part all, "
                                   "its own setup and GEMM), not a part's or a pair's");
  if (!sm90_is_tail_tile(tail_tile))
    return Status::InvalidArgument("sm90 grouped GEMM in parts: tail_tile=" + std::to_string(static_cast<int>(tail_tile)) +
                                   " is not a 192-row tile (kM192N128C1x1, kM192N256C1x1)");
  Sm90GemmArgs head = a, tail = a;
  head.row_part = Sm90RowPart::kHead;
  tail.row_part = Sm90RowPart::kTail;
  tail.tile = tail_tile;
  tail.scratch = tail_scratch;
  tail.scratch_bytes = tail_scratch_bytes;
  head.overlap = beside ? Sm90Overlap::kFirst : Sm90Overlap::kNone;
  tail.overlap = beside ? Sm90Overlap::kBeside : Sm90Overlap::kNone;
  // Beside the tails the head runs its last round whole: the tail split would spread that round over
  // every CTA, so that no SM is left for the tails' CTAs until the head ends. Mixtral-8x7B, gemm1 in
  // parts, the head with its split off against on: T=736 (a head of 3 rounds and 52 tiles) -3.3% and
  // -3.5% the layer, T=720 -2.1%, -0.1..-0.5% elsewhere in the window (docs/perf-notes.md step 47 g).
  if (beside) head.tail_split = Sm90TailSplit::kOff;
  // Each part writes its setup job (its arguments checked, the head's tile among them); one kernel
  // runs both; then the two GEMMs.
  Sm90SetupJob jobs[2];
  head.run_gemm = tail.run_gemm = false;
  head.setup_job = &jobs[0];
  tail.setup_job = &jobs[1];
  MOEKIT_RETURN_IF_ERROR(launch_sm90_grouped_gemm(head, stream));
  MOEKIT_RETURN_IF_ERROR(launch_sm90_grouped_gemm(tail, stream));
  if (a.max_rows == 0) return Status::Ok();  // neither wrote a job: nothing to run
  MOEKIT_RETURN_IF_ERROR(launch_sm90_setups(jobs, 2, beside, stream));
  for (Sm90GemmArgs* part : {&head, &tail}) {
    part->setup_job = nullptr;
    part->run_setup = false;
    part->run_gemm = true;
    MOEKIT_RETURN_IF_ERROR(launch_sm90_grouped_gemm(*part, stream));
  }
  return Status::Ok();
}

}  // namespace moekit::cuda::moe
