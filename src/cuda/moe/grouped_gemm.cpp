// Host side of the grouped GEMM: the tile names (the tuning knob's values), the heuristic that picks
// a tile, and the dispatch on the element type.
#include "cuda/moe/moe_launch.h"

namespace moekit::cuda::moe {

Status launch_grouped_gemm_bf16(const GemmArgs& a, void* stream);
Status launch_grouped_gemm_f16(const GemmArgs& a, void* stream);

const char* gemm_tile_name(GemmTile t) {
  switch (t) {
    case GemmTile::kM16N64: return "m16n64k64";
    case GemmTile::kM32N128: return "m32n128k64";
    case GemmTile::kM64N128: return "m64n128k64";
    case GemmTile::kM128N128: return "m128n128k64";
    case GemmTile::kM128N256: return "m128n256k64";
    case GemmTile::kSm90M128N256: return "sm90_m128n256k64";
  }
  return "unknown";
}

int gemm_tile_block_m(GemmTile t) {
  switch (t) {
    case GemmTile::kM16N64: return 16;
    case GemmTile::kM32N128: return 32;
    case GemmTile::kM64N128: return 64;
    case GemmTile::kM128N128: return 128;
    case GemmTile::kM128N256: return 128;
    case GemmTile::kSm90M128N256: return 128;
  }
  return 0;
}

// Few rows per expert: the weights are streamed once and the tile is mostly padding, so the
// smallest M tile (more CTAs over the weight stream); many rows: the largest tile, which reuses each
// loaded element the most.
GemmTile choose_gemm_tile(double rows_per_expert) {
  if (rows_per_expert <= 16) return GemmTile::kM16N64;
  if (rows_per_expert <= 40) return GemmTile::kM32N128;
  if (rows_per_expert <= 96) return GemmTile::kM64N128;
  return GemmTile::kM128N256;
}

Status launch_grouped_gemm(const GemmArgs& a, void* stream) {
  switch (a.type) {
    case Elem::kBF16: return launch_grouped_gemm_bf16(a, stream);
    case Elem::kF16: return launch_grouped_gemm_f16(a, stream);
    case Elem::kF32: break;
  }
  return Status::Unsupported("grouped GEMM: the CUDA backend takes f16 or bf16 operands");
}

}  // namespace moekit::cuda::moe
