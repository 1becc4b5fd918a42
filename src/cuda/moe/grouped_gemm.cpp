// Host side of the grouped GEMM: the tile names (the tuning knob's values), the heuristic that picks
// a tile, and the dispatch on the element type.
#include "cuda/moe/moe_launch.h"

namespace moekit::cuda::moe {

Status launch_grouped_gemm_bf16(const GemmArgs& a, void* stream);
Status launch_grouped_gemm_f16(const GemmArgs& a, void* stream);
Status launch_stream_gemm_bf16(const GemmArgs& a, void* stream);
Status launch_stream_gemm_f16(const GemmArgs& a, void* stream);

bool is_stream_tile(GemmTile t) { return t == GemmTile::kStreamN8 || t == GemmTile::kStreamN16 || t == GemmTile::kStreamN32; }
bool is_sm90_tile(GemmTile t) {
  switch (t) {
    case GemmTile::kSm90M128N256C1x2:
    case GemmTile::kSm90M64N128C1x2:
    case GemmTile::kSm90M128N256C1x1:
    case GemmTile::kSm90M64N128C1x1:
    case GemmTile::kSm90M128N128C1x1:
    case GemmTile::kSm90M192N128C1x1: return true;
    default: return false;
  }
}

const char* gemm_tile_name(GemmTile t) {
  switch (t) {
    case GemmTile::kM16N64: return "m16n64k64";
    case GemmTile::kM32N128: return "m32n128k64";
    case GemmTile::kM64N128: return "m64n128k64";
    case GemmTile::kM128N128: return "m128n128k64";
    case GemmTile::kM128N256: return "m128n256k64";
    case GemmTile::kSm90M128N256C1x2: return "sm90_m128n256k64_c1x2";
    case GemmTile::kSm90M64N128C1x2: return "sm90_m64n128k128_c1x2";
    case GemmTile::kSm90M128N256C1x1: return "sm90_m128n256k64_c1x1";
    case GemmTile::kSm90M64N128C1x1: return "sm90_m64n128k128_c1x1";
    case GemmTile::kSm90M128N128C1x1: return "sm90_m128n128k128_c1x1";
    case GemmTile::kSm90M192N128C1x1: return "sm90_m192n128k64_c1x1";
    case GemmTile::kStreamN8: return "stream_n8k128";
    case GemmTile::kStreamN16: return "stream_n16k128";
    case GemmTile::kStreamN32: return "stream_n32k128";
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
    case GemmTile::kSm90M128N256C1x2: return 128;
    case GemmTile::kSm90M64N128C1x2: return 64;
    case GemmTile::kSm90M128N256C1x1: return 128;
    case GemmTile::kSm90M64N128C1x1: return 64;
    case GemmTile::kSm90M128N128C1x1: return 128;
    case GemmTile::kSm90M192N128C1x1: return 192;
    case GemmTile::kStreamN8: return 8;
    case GemmTile::kStreamN16: return 16;
    case GemmTile::kStreamN32: return 32;
  }
  return 0;
}

// Few rows per expert: the weight-streaming kernel, whose CTA holds a few routed rows (no token is
// padded to 16 rows or more), with room for the busiest experts' extra rows; many rows: the largest
// tile, which reuses each loaded element the most.
GemmTile choose_gemm_tile(double rows_per_expert) {
  if (rows_per_expert <= 4) return GemmTile::kStreamN8;
  if (rows_per_expert <= 10) return GemmTile::kStreamN16;
  if (rows_per_expert <= kStreamMaxRowsPerExpert) return GemmTile::kStreamN32;
  if (rows_per_expert <= 40) return GemmTile::kM32N128;
  if (rows_per_expert <= 96) return GemmTile::kM64N128;
  return GemmTile::kM128N256;
}

Status launch_grouped_gemm(const GemmArgs& a, void* stream) {
  if (is_stream_tile(a.tile)) {
    if (a.type == Elem::kBF16) return launch_stream_gemm_bf16(a, stream);
    if (a.type == Elem::kF16) return launch_stream_gemm_f16(a, stream);
  }
  switch (a.type) {
    case Elem::kBF16: return launch_grouped_gemm_bf16(a, stream);
    case Elem::kF16: return launch_grouped_gemm_f16(a, stream);
    case Elem::kF32: break;
  }
  return Status::Unsupported("grouped GEMM: the CUDA backend takes f16 or bf16 operands");
}

}  // namespace moekit::cuda::moe
