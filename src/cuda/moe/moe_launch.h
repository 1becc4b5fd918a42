// Host entry points of the CUDA MoE kernels: plain C++ (no CUDA headers), so that the stage code in
// cuda_stages.cpp stays ordinary C++. Each launcher checks nothing the stage layer already checked;
// it only enqueues work on `stream` (a cudaStream_t) and reports launch errors. None allocates or
// synchronizes, so a whole layer can be captured in a CUDA graph.
#pragma once

#include <cstddef>
#include <cstdint>

#include "moekit/status.h"

namespace moekit::cuda::moe {

// Element types the kernels read and write.
enum class Elem : uint8_t { kF32, kF16, kBF16 };

// Whether the layer's launches may overlap through programmatic dependent launch (pdl.cuh, pdl.cu):
// a compute capability 9.0+ GPU running kernels compiled with the sm_90 instructions, and MOEKIT_PDL
// not set to 0. Read once per process.
bool pdl_enabled();

// ---- routing --------------------------------------------------------------------------------------
struct RouteArgs {
  const void* logits = nullptr;  // [T, E]
  Elem logits_type = Elem::kF32;
  const void* bias = nullptr;    // [E], DeepSeek-V3 only
  Elem bias_type = Elem::kF32;
  int64_t tokens = 0;
  int experts = 0;
  int top_k = 0;
  int method = 0;  // RoutingMethod
  bool renormalize = false;
  int n_group = 1;
  int topk_group = 1;
  int32_t* topk_ids = nullptr;      // [T, K]
  float* topk_weights = nullptr;    // [T, K]
  int32_t* copy_ids = nullptr;      // optional second destination (MoeOutputs::topk_ids)
  float* copy_weights = nullptr;    // optional (MoeOutputs::topk_weights)
};
// Shared memory one warp needs to route one token (scores, flags, group scores), bytes.
size_t route_warp_smem_bytes(int experts, int n_group);
// The most experts one warp can route given the opt-in shared memory per block.
Status check_route_fits(int experts, int n_group, int64_t smem_per_block);
Status launch_route(const RouteArgs& a, void* stream);

// ---- build maps -----------------------------------------------------------------------------------
// Where the maps go (moekit/stages.h's StageBuffers contract) plus the backend-private row_dest.
struct MapsOut {
  int64_t* expert_offsets = nullptr;  // [E_local + 1]
  int64_t* row_source = nullptr;      // [R_max]
  float* row_weight = nullptr;        // [R_max]
  int64_t* dest_offsets = nullptr;    // [out_rows + 1]
  int64_t* dest_rows = nullptr;       // [R_max]
  int32_t* row_dest = nullptr;        // [R_max]: the output row that row r goes to
};

// Standard / PreRouted maps from topk ids.
struct TopkMapsArgs {
  const int32_t* topk_ids = nullptr;
  const float* topk_weights = nullptr;
  int64_t tokens = 0;
  int top_k = 0;
  int num_experts = 0;
  int local_begin = 0;
  int local_experts = 0;
  const int32_t* expert_map = nullptr;  // optional [E]: global -> local or -1
  bool no_combine = false;
  MapsOut out;
  // Scalable path scratch (see maps_scratch_bytes).
  void* scratch = nullptr;
  size_t scratch_bytes = 0;
};
// The most T*K rows the single-CTA path (one launch) handles.
inline constexpr int64_t kSingleCtaMapsMaxRows = 4096;
// Scratch the scalable (radix sort) path needs for n rows sorted by keys below `key_limit`.
Status maps_scratch_bytes(int64_t n, int64_t key_limit, size_t* bytes);
// Scratch launch_topk_maps needs for n = T*K rows over `local_experts` experts (0: none).
Status topk_maps_scratch_bytes(int64_t n, int local_experts, size_t* bytes);
Status launch_topk_maps(const TopkMapsArgs& a, void* stream);

// Routing and the maps in one single-CTA launch (T*K <= 4096; the plan takes it for T <= 32, where
// routing the tokens a warp each inside one block is the faster way).
Status launch_route_and_maps(const RouteArgs& route, const TopkMapsArgs& maps, void* stream);

struct MaskedMapsArgs {
  const int32_t* masked_m = nullptr;  // [E_local], clamped to [0, max_m] on the device
  int local_experts = 0;
  int64_t max_m = 0;
  MapsOut out;
};
Status launch_masked_maps(const MaskedMapsArgs& a, void* stream);

struct IndexedMapsArgs {
  const int32_t* expert_offsets = nullptr;  // [E_local + 1]
  const int32_t* gather_index = nullptr;    // [R_max]
  const float* row_weights = nullptr;       // [R_max]
  int local_experts = 0;
  int64_t tokens = 0;
  int64_t max_rows = 0;
  MapsOut out;
  void* scratch = nullptr;
  size_t scratch_bytes = 0;
};
Status launch_indexed_maps(const IndexedMapsArgs& a, void* stream);

// ---- row stages -----------------------------------------------------------------------------------
struct ExpandArgs {
  const void* hidden = nullptr;  // [rows, H]
  void* out = nullptr;           // gemm1_in [R_max, H], same type
  Elem type = Elem::kBF16;
  const int64_t* row_source = nullptr;
  const float* row_weight = nullptr;  // multiplies the row when weight_on_input
  const int64_t* total_rows = nullptr;  // &expert_offsets[E_local] (device)
  int64_t max_rows = 0;
  int64_t hidden_size = 0;
  bool weight_on_input = false;
  // By token (tokens > 0): a block per token reads its hidden row once and writes every row routed
  // from it: dest_rows[dest_offsets[t * g] .. dest_offsets[(t + 1) * g]) with g = out_rows_per_token
  // (1, or top_k with no_combine). Only for maps where those are exactly the rows reading token t
  // (Standard and PreRouted); otherwise (tokens == 0) a block per row reads row_source.
  int64_t tokens = 0;
  int out_rows_per_token = 1;
  const int64_t* dest_offsets = nullptr;  // [tokens * g + 1]
  const int64_t* dest_rows = nullptr;
};
Status launch_expand(const ExpandArgs& a, void* stream);

// A per-expert bias [E_local, N] for rows grouped by expert, added by the activation or finalize
// kernel when the GEMM before it ran without it (the sm_90a kernel). data null: no bias.
struct ExpertBias {
  const void* data = nullptr;
  Elem type = Elem::kF32;
  const int64_t* expert_offsets = nullptr;  // [E_local + 1]: each row's expert
  int experts = 0;
};

struct ActivationArgs {
  const void* in = nullptr;  // gemm1_out [R_max, N1]: f32, or `type` after the sm_90a kernel
  Elem in_type = Elem::kF32;
  void* out = nullptr;        // gemm2_in [R_max, I]
  Elem type = Elem::kBF16;
  const int64_t* total_rows = nullptr;
  int64_t max_rows = 0;
  int64_t inter = 0;
  int activation = 0;  // Activation
  bool interleaved = false;
  float alpha = 0.f;
  float limit = 0.f;
  ExpertBias bias;  // gemm1's [E_local, N1], when gemm1 ran without it
};
Status launch_activation(const ActivationArgs& a, void* stream);

struct FinalizeArgs {
  const void* rows = nullptr;  // gemm2_out [R_max, H]: f32, or `type` after the sm_90a kernel
  Elem rows_type = Elem::kF32;
  void* out = nullptr;
  Elem type = Elem::kBF16;
  const int64_t* dest_offsets = nullptr;
  const int64_t* dest_rows = nullptr;
  const float* row_weight = nullptr;
  int64_t out_rows = 0;
  int64_t hidden = 0;
  float scale = 1.f;
  bool use_weights = true;   // false: weight on input, or Masked
  bool skip_empty = false;   // Masked: rows without a source stay untouched
  ExpertBias bias;  // gemm2's [E_local, H], added to each row before its factor, when gemm2 ran without it
};
Status launch_finalize(const FinalizeArgs& a, void* stream);

// out = accumulator (f32 -> type), [rows, H].
Status launch_convert(const float* acc, void* out, Elem type, int64_t count, void* stream);

// ---- grouped GEMM ---------------------------------------------------------------------------------
enum class Epilogue : uint8_t {
  kStoreF32,    // out_f32[row, n] = acc + bias
  kActivation,  // gemm1 + activation: out[row, i] = act(gate + bias, up + bias) (or act(x) not gated)
  kAtomicAdd,   // gemm2 + finalize: accumulator[row_dest[row], n] += factor(row) * (acc + bias)
  kStore,       // gemm2 + finalize, one destination: out[row_dest[row], n] = factor(row) * (acc + bias)
};

// The tile shapes the grouped GEMM is built for. The names are the tuning knob values.
// kSm90* are the CUTLASS sm_90a kernel (sm90_grouped_gemm.h) in its configurations (Sm90Tile): 16-bit
// output without the bias, then the stages' activation or finalize kernel; the one fused epilogue is
// gemm1's gated activation with its bias, for interleaved gate/up rows (sm90_gated_epilogue.cuh).
// kStreamN* are the weight-streaming kernel (stream_gemm.cuh) for 8, 16 or 32 routed rows per CTA.
enum class GemmTile : uint8_t {
  kM16N64,
  kM32N128,
  kM64N128,
  kM128N128,
  kM128N256,
  kSm90M128N256C1x1,
  kSm90M128N256C1x2,
  kSm90M64N128C1x1,
  kSm90M64N128C1x2,
  kSm90M128N128C1x1,
  kSm90M192N128C1x1,
  kStreamN8,
  kStreamN16,
  kStreamN32,
};
const char* gemm_tile_name(GemmTile t);
int gemm_tile_block_m(GemmTile t);
bool is_stream_tile(GemmTile t);
bool is_sm90_tile(GemmTile t);

struct GemmArgs {
  Elem type = Elem::kBF16;  // A and B (f16 or bf16)
  const void* a = nullptr;  // [R_max, K] rows grouped by expert
  const void* b = nullptr;  // [E_local, N, K] (out x in)
  const void* bias = nullptr;  // optional [E_local, N]
  Elem bias_type = Elem::kF32;
  const int64_t* expert_offsets = nullptr;  // [E_local + 1] on the device
  int local_experts = 0;
  int64_t max_rows = 0;  // R_max: bounds the grid
  int64_t n = 0;         // N (gemm1: gemm1_rows; gemm2: H)
  int64_t k = 0;
  Epilogue epilogue = Epilogue::kStoreF32;
  GemmTile tile = GemmTile::kM64N128;
  // kStoreF32
  float* out_f32 = nullptr;
  // kActivation: out [R_max, I] in `type`
  void* out = nullptr;
  int activation = 0;
  bool gated = true;
  bool interleaved = false;  // gate/up rows interleaved in b (GPT-OSS); else concatenated
  float alpha = 0.f;
  float limit = 0.f;
  // kAtomicAdd / kStore
  const int32_t* row_dest = nullptr;
  const float* row_weight = nullptr;  // null: factor = scale
  float scale = 1.f;
  float* accumulator = nullptr;  // kAtomicAdd: [out_rows, N] f32, zeroed by the caller
  // Stream tiles: the K split over a thread-block cluster (0: chosen from the grid), which needs
  // `clusters` (sm_90 kernels on a Hopper GPU), and the GPU's SM count the automatic split aims at.
  int split = 0;
  bool clusters = false;
  int sm_count = 0;
  // Stream tiles under PDL (pdl.cuh): the expert offsets were written at least two launches earlier,
  // so the CTA may find its tile and start streaming its weights before the previous kernel ends.
  bool weights_before_wait = false;
};
// Above kSm90MinRows routed rows (from it for large experts, below) a Hopper GPU runs the sm_90a (TMA + wgmma) kernel: its 64 x 128
// tiles without a cluster up to kSm90SmallTileMaxRows rows per active expert, and for smaller experts
// up to kSm90MidTileMaxRows (below); its 128 x 256 tiles (no cluster) above. Measured on the H200 once the 2 x 1 cluster and its padding tiles were gone
// (06b0abe, docs/perf-notes.md step 14), each tile forced on both GEMMs:
//  - 64 x 128 against the stream and mma.sync tiles at 8-32 rows per expert: DeepSeek-V3 T=64 1823
//    against 2345 us, Mixtral T=64 705 / 756, Qwen3 T=64 320 / 340; level at T=16 (GPT-OSS 612 /
//    612); 2-4% slower at T=8 (64 routed rows or fewer: Qwen3 152 / 146, GPT-OSS 378 / 364).
//  - 64 x 128 against 128 x 256: faster at 32 rows (GPT-OSS T=1024 1694 / 1761, Mixtral T=128 718 /
//    771), slower at 64 (Mixtral T=256 1009 / 803, DeepSeek-V3 T=1024 3998 / 3168).
// The 1 x 2 cluster (each A tile multicast to the two CTAs of an N pair) returned for large experts at
// a few rows on the H200 (kSm90LargeExpertClusterMaxRows, below); elsewhere it is the tuner's. Under the fixed tile order it was 0.4-1.3% faster for small experts up to 32 rows and for
// every expert up to 16 (H100, docs/perf-notes.md step 19); without it the kernel can take the
// automatic tile order (sm90_grouped_gemm.h, Sm90TileOrder), which claims tiles where every expert
// fits one M tile, and the tile without a cluster is then faster at T = 16 .. 512 on every preset
// (H100, docs/perf-notes.md step 24, the layer with both GEMMs on each tile): Qwen3 -1.0..-1.8%
// (T = 16..512), GPT-OSS -1.4..-2.2% (T = 32..512), DeepSeek-V3 -0.7..-1.6% (T = 16..256; from
// T=300 its large experts had dropped the cluster already), Mixtral -1.4% at T=32 and level
// (-0.3..+0.1%) at T = 64..128.
// The limit was 32 rows until step 34 (docs/perf-notes.md): measured on an H100 (call 6 of
// docs/device-logs/2026-11-27-two-ctas/, two turns each, the layer with both GEMMs on each tile) the
// 64 x 128 tile was faster than 128 x 256 at every point that the limit of 48 moves: Mixtral T = 144
// .. 192 (36-48 rows) -6.5..-7.0%, DeepSeek-V3 T = 576 .. 704 (36-44 expected rows) -3.4..-4.5% and
// T=768 (48) level, GPT-OSS T = 1152 .. 1408 (gemm1, 36-44 rows) -3.1% and T=1536 (48) -0.7%. Up to
// 48 rows (mean plus two standard deviations under 64 at uniform routing) an expert rarely needs a
// second 64-row M tile, which is what made the 64 x 128 tile lose at 64 rows (Mixtral T=256 on the
// H200 1009 against 803 µs, step 14; on an H100 +1.7%, step 34). Not yet measured on an H200.
inline constexpr int64_t kSm90MinRows = 64;
inline constexpr double kSm90SmallTileMaxRows = 48;
// Experts of kSm90HugeExpert elements or more (N x K: Mixtral-8x7B's 117M and 59M, no other public
// preset's) keep the 64 x 128 tile without a cluster further, up to kSm90HugeExpertSmallTileMaxRows
// rows per expected expert. Measured on an H100 (docs/perf-notes.md step 35 a, the layer with both
// GEMMs forced onto it against the heuristic's 128 x 256, two turns): Mixtral T = 208 .. 248 (52-62
// rows) -0.9..-7.2%, the most (-6.6..-7.2%) where the busiest expert held 64 rows or fewer (57, 60)
// and -0.9..-3.7% where it held 68-72 (a second M tile); T=252 (63 rows) -0.9% (step 35 a); T=256
// (64 rows) +1.7% (step 34, call 5).
// The next experts in size do not gain there: DeepSeek-V3 (29M and 15M) T = 800 .. 896 (50-56 rows)
// +1.1, -2.4, +1.0%; GPT-OSS gemm1 (17M) T = 1600 .. 1792 -0.7, -0.2, +2.9%.
inline constexpr int64_t kSm90HugeExpert = int64_t{48} << 20;
inline constexpr double kSm90HugeExpertSmallTileMaxRows = 63;
// The 64 x 128 tile's 1 x 2 cluster (each A tile multicast to the two CTAs of an N pair; the fixed
// tile order and no overlap with gemm1, which the cluster does not allow) for a GEMM whose expert
// weight holds kSm90LargeExpert elements or more, up to kSm90LargeExpertClusterMaxRows rows an
// expected expert, and up to kSm90HugeExpertClusterMaxRows for kSm90HugeExpert or more. Measured on
// the H200 (docs/perf-notes.md step 38, both GEMMs on the cluster against the heuristic's tile
// without one, best of two turns): Mixtral-8x7B (117M and 59M) T = 32, 64, 128 (8, 16, 32 rows)
// -6.3..-7.6%, -4.6..-4.9%, -2.5%, T=192 (48) -0.3%, T=248 (62) +5.3%; DeepSeek-V3 (29M and 15M,
// 128 experts reachable) T = 8, 16, 32, 64 (1, 1, 2, 4 rows) -2.6, -1.6, -0.8, -0.4%, T=256 (16)
// +0.7%, T=512 (32) +8.3%; GPT-OSS-120B
// T=32 (1 row) -0.1%, T=128 (4) -0.7%, T=512 (16) +1.3%. Never for the small experts: Qwen3-30B-A3B
// (3.1M and 1.6M) lost 4.1-5.7% at every T from 16 to 1024. Step 24 had dropped the cluster
// everywhere on an H100 (-0.7..-2.2% without it at T = 16..512 on three presets, level on Mixtral);
// the H200 streams weights 48% faster at the same tensor rate, and its answer differs.
// The limit was 4 rows until the between points were measured (step 38, calls 3 and 4): at 6 rows
// DeepSeek-V3 T=96 -1.3% and GPT-OSS T=192 (gemm1) -1.4%, at 8 rows T=128 -0.2% and T=256 -0.7%.
inline constexpr double kSm90LargeExpertClusterMaxRows = 8;
inline constexpr double kSm90HugeExpertClusterMaxRows = 48;
// Up to this many routed rows per expected expert, with gemm2 on the 64 x 128 tile without a cluster,
// gemm2's first weight stages stream under gemm1's tail (Sm90Overlap, cuda_stages.cpp sm90_overlap):
// every expert then keeps to one M tile. Measured on an H100 (docs/perf-notes.md step 27 c): a gain
// at every such point of the four presets. The limit for gemm2s of kSm90LargeExpert elements or more;
// smaller ones go further (sm90_overlap_max_rows_per_expert, below).
inline constexpr int64_t kSm90OverlapMaxRowsPerExpert = 32;
// Where gemm2's expert weight is below kSm90LargeExpert (below), up to this many. Measured on an H100
// (docs/perf-notes.md step 35 b, limit 48 against 32 in one binary, two turns) at 34-48 rows: Qwen3
// (gemm2 1.6M) T = 544, 640, 768 -2.4..-2.5%, GPT-OSS (8.3M) T = 1152 .. 1536 -0.3..-0.7%; the large
// gemm2s did not gain: Mixtral (59M) T = 144 .. 192 -0.2..+0.4%, DeepSeek-V3 (15M, uneven experts)
// T = 576 .. 768 +0.9..+2.4%.
inline constexpr int64_t kSm90OverlapSmallExpertMaxRows = 48;
// Where gemm2's expert weight is below kSm90TinyExpert (Qwen3-30B-A3B's 1.6M; K = I = 768), the pair
// runs wherever gemm2 takes the 64 x 128 tile, up to kSm90MidTileMaxRows (64) rows. Measured on an
// H100 (docs/perf-notes.md step 35 c, limit 64 against 48, two turns): Qwen3 T = 832, 896, 960, 1024
// (52-64 rows) -2.1, -1.6, -1.4, -0.7%; GPT-OSS (8.3M) T = 1664, 1792, 2048 +0.2, +0.2, +2.6%.
inline constexpr int64_t kSm90TinyExpert = int64_t{4} << 20;
inline constexpr int64_t kSm90OverlapTinyExpertMaxRows = 64;
// A GEMM whose expert weight (N x K) holds kSm90LargeExpert elements or more takes the sm_90a kernel
// from kSm90MinRows routed rows on, not only above. The tuner chose the sm_90a 64 x 128 tile at T=8
// on the H200 (810e20d, docs/tune.md) for Mixtral (N x K = 117M and 59M; 16 routed rows) and
// DeepSeek-V3 (29M and 15M; 64 rows), never for Qwen3 (3.1M and 1.6M). Measured against the stream
// kernel on an H100 (docs/perf-notes.md step 16): faster at 64 routed rows (DeepSeek-V3 T=8 1354
// against 1404 us, Mixtral T=32 990 / 995), level or slower below (Mixtral T=8 921 / 921, DeepSeek-V3
// T=4 837 / 829, GPT-OSS T=8 550 / 535, T=4 302 / 288), within 0.4% at GPT-OSS T=16 (927 / 923).
inline constexpr int64_t kSm90LargeExpert = int64_t{12} << 20;
// The overlapped pair's limit for a gemm2 whose expert weight holds `gemm2_weight` (N x K) elements.
inline constexpr int64_t sm90_overlap_max_rows_per_expert(int64_t gemm2_weight) {
  if (gemm2_weight < kSm90TinyExpert) return kSm90OverlapTinyExpertMaxRows;
  return gemm2_weight < kSm90LargeExpert ? kSm90OverlapSmallExpertMaxRows : kSm90OverlapMaxRowsPerExpert;
}
// Above kSm90SmallTileMaxRows and up to this many rows per active expert, a GEMM whose expert weight
// is below kSm90LargeExpert keeps the 64 x 128 x 128 tile, without its cluster, instead of taking
// 128 x 256 x 64. Measured on the H200 (docs/perf-notes.md step 20 h, two runs of each in turns),
// the layer against the 128 x 128 x 128 tile this range took before: Qwen3 (3.1M and 1.6M) T=600
// 356 against 432 us, T=800 364 / 434, T=1024 389 / 427; GPT-OSS gemm2 (8.3M) T=1100 1684 / 1848,
// T=1536 1728 / 1868, T=2048 1834 / 1900. (128 x 128 had been chosen on an H100 against 128 x 256,
// step 18; the 64 x 128 tile without a cluster was faster there too at Qwen3 T=1024, 513 against 520
// us.) Large weights keep 128 x 256: DeepSeek-V3 T=1024 (29M and 15M) lost 3-7% on 128 x 128 (step 18).
inline constexpr double kSm90MidTileMaxRows = 64;
// The 192 x 128 tile (Sm90Tile::kM192N128C1x1) holds an expert of 129-192 rows in one M tile, so
// its weights stream once instead of twice; random routing puts about half the experts of 128
// expected rows past one 128-row tile, while below about 136 expected rows most experts fit one and
// pay the tile's 64 extra rows (docs/perf-notes.md steps 36, 37). Not under routing that
// concentrates the rows (DeepSeek-V3's correction bias: +9.4% and +16.4% at 128 and 160 rows on an
// H100, the busiest experts past 400 rows). Windows in rows an expected expert, measured on an H200
// (steps 36 e, 37), the layer against the same GEMM on the 128 x 256 tile, best of two turns:
//   gemm1 with the gated epilogue: from kSm90TallTileMinRows to kSm90TallTileMaxRows. Lost at 120
//     (Qwen3-30B-A3B T=1920 +4.7%, GPT-OSS-120B T=3840 +13.7%) and 128 (Qwen3 T=2048 +1.5%, GPT-OSS
//     T=4096 +2.5%), won at 144 (Qwen3 T=2304 -7.2%, GPT-OSS T=4608 -8.8%) and 176 (Qwen3 T=2816
//     -4.6%, GPT-OSS T=5632 -8.1%). Experts of kSm90HugeExpert elements or more (Mixtral-8x7B) won
//     at 144 (T=576, -4.9%) and at 160 on an H100 (T=640, -5.8%), lost at 176 (T=704, +2.3%); they
//     no longer take the tile (below).
//   gemm2 (the plain epilogue, 64-row subtiles): from kSm90TallGemm2MinRows to
//     kSm90TallGemm2MaxRows. Won at 160 (Qwen3 T=2560 -2.1%, GPT-OSS T=5120 -1.8%, Mixtral T=640
//     -1.5%), lost at 128 (Qwen3 T=2048 +2.2%, GPT-OSS T=4096 +0.7%) and at 176 for Mixtral (T=704
//     +5.3%; Qwen3 -0.2%, GPT-OSS -1.7% there).
// Since step 46 only experts under kSm90TallTailMinExpert elements take the tile in these windows;
// larger ones take 128 x 256 with the tall tails on the 192 x 256 tile (cuda_stages.cpp
// heuristic_tile, heuristic_tall_tail), both GEMMs against both on 192 x 128, an H200: GPT-OSS
// T=4608 -5.3%, T=5120 -0.7%; Mixtral T=576 -8.4%, T=640 -5.0%; Qwen3 T=2560 +4.6% (kept).
inline constexpr double kSm90TallTileMinRows = 136;
inline constexpr double kSm90TallTileMaxRows = 176;
inline constexpr double kSm90TallGemm2MinRows = 144;
inline constexpr double kSm90TallGemm2MaxRows = 168;
// The experts' tall tails (Sm90RowPart, sm90_grouped_gemm.h: a GEMM in two launches, an expert's
// last two 128-row M tiles as one 192-row tile when the last holds at most 64 rows, the tails
// beside the heads): the heuristic sets a GEMM's gemm1.tall_tail / gemm2.tall_tail (to wide) where that
// GEMM runs a 128-row tile at kSm90TallTailMinRows to kSm90TallTailMaxRows rows an expected expert
// and its expert weight (N x K) holds kSm90TallTailMinExpert elements or more and less than
// kSm90HugeExpert. Measured on an H200 (docs/perf-notes.md steps 41-42). Chosen from calls 1-2, the
// layer against the heuristic without the parts, best of two turns: GPT-OSS-120B (8.3M and 16.6M)
// T=3584 -2.2%, T=4096 -6.2..-6.5% (both GEMMs), T=8192 -0.5% (gemm1); its shape with I=2816 T=4096
// -8.1% (gemm1; both GEMMs -6.2%); DeepSeek-V3 (14.7M and 29.4M) T=2048 -0.5% (gemm1), T=4096 -1.3%
// (both). Lost with smaller experts (Qwen3-30B-A3B, 1.6M and 3.1M: T=2048 +1.9% gemm1, +4.3% both;
// T=4096 +4.0%; its shapes with I=704 +0.8%, H=1920 +1.5% gemm2) and huger ones (Mixtral-8x7B, 59M
// and 117M: T=512 -0.7% gemm1 but +5.2% both, T=1024 +4.7%). Checked in call 3, the rule against
// both knobs off: GPT-OSS T=3584 -3.7%, T=4096 -3.0%, T=5664 (177 rows) -8.6%, DeepSeek-V3 T=2048
// -0.6%, T=3072 -2.5%, T=4096 -2.2%; level where one GEMM alone runs in parts at the window's
// edges (GPT-OSS T=4352, gemm2 at 136 rows, +0.5%; T=8192 +0.7%; GPT-OSS with I=1152, gemm1's 6.6M
// expert, +0.3%).
// Why the middle-sized experts win is not measured: not the last N tile's padding (the I=704 and
// I=2816 shapes test that and refute it). The lower bound lies between the largest expert that lost
// (3.1M) and the smallest that won (8.3M: GPT-OSS's gemm2 alone in parts at T=4096, -4.9%); 6.6M
// measured level.
// Since step 43 the tails run on the 192 x 256 tile (`wide`), not the 192 x 128 one (`on`): wide
// against on, the layer, two calls of two turns each: GPT-OSS T=3584 +1.4% / -0.9%, T=4096 -3.6% /
// -1.1%, T=5664 +0.3% / -5.0%, DeepSeek-V3 T=3072 -2.6% / -0.7%, T=4096 +0.5% / +0.3% (a mean of
// -1.1%, no point past +0.5% on average). Outside the window wide loses as on does (Qwen3 T=2048
// +3.5%, T=4096 +5.8%, Mixtral T=1024 +15.0% against off), except Mixtral T=512 (-1.2%, one call).
// Where wide loses, an expert of 257-320 rows is split between the launches and its weights are read
// from DRAM once a launch (step 44 f: +0.575 GB at Qwen3 T=4096). Since step 46 the heuristic's tile
// in the 192 x 128 tile's windows (above) is 128 x 256 for experts of kSm90TallTailMinExpert or more,
// so these windows lie inside this one for the middle-sized experts.
inline constexpr double kSm90TallTailMinRows = 112;
inline constexpr double kSm90TallTailMaxRows = 256;
inline constexpr int64_t kSm90TallTailMinExpert = int64_t{6} << 20;
// Experts of kSm90HugeExpert elements or more (Mixtral-8x7B's 117M and 59M) run their tall tails
// wide in windows of their own (docs/perf-notes.md step 47): gemm1's for gemm1 in either layout
// (with concatenated W13, the plain epilogue, gemm1 wide against off: T=624 (156 rows) -16.2%, T=528
// (132) and T=704 (176) -7.6%, -7.7%, T = 544, 688 -6.2%, -7.5%; step 47 e), gemm2's for gemm2. An
// H200, the layer against tails off (128 x 256 alone), best of two turns, both GEMMs wide / gemm1
// alone: T=512 (128 rows an expected expert) -0.7% / -4.2%, T=544 (136) -10.4% / -7.1%, T=560
// (140) -16.4% / -13.6%, T=688 (172) -12.5% / -10.1%, T=704 (176) +0.9% / -6.0%, T=736 (184)
// +7.9% / +0.9% (call 1); the rule built, against tails off
// (call 2): T = 512, 544, 560, 688, 704 -3.0%, -11.3%, -13.8%, -13.0%, -8.5%; gemm1 wide against the
// rule there: T=480 (120) -0.4%, T=496 (124) -5.2%, T=720 (180) -7.9%; gemm2 wide at T=528 (132)
// +0.0%. Step 46 had both wide at 144-168 -0.9..-8.4% against the 192 x 128 tile, and step 43 both
// wide at T=1024 (256) +15%. Inside the windows most experts hold 129-192 rows, one 192-row tile
// instead of two 128-row ones. Past them more experts hold 193-256 rows, which stay whole in the
// head launch (two 128-row tiles; an expert is split between the launches only from 257 rows), and
// each launch pays its own last round (ncu, step 47 f: at T=736 gemm1's head 197.3 us and tails
// 505.5 against 693.0 for the one launch). Since the head runs without its tail split beside the
// tails (sm90_grouped_gemm.h, step 47 g), gemm1 wide gains to 184 rows: T=736 -3.0%, -4.1% and
// (concatenated) -4.4% against tails off; T=752 (188) -0.3%, T=784 (196) +2.2%.
inline constexpr double kSm90HugeExpertWideGemm1MinRows = 124;
inline constexpr double kSm90HugeExpertWideGemm1MaxRows = 184;
inline constexpr double kSm90HugeExpertWideGemm2MinRows = 136;
inline constexpr double kSm90HugeExpertWideGemm2MaxRows = 172;
// Up to this many rows per active expert the weight-streaming kernel runs where the sm_90a kernel
// does not (other GPUs, and on Hopper up to kSm90MinRows routed rows), whatever the expert count.
// Measured on the H200 once its 32-row tile kept two CTAs per SM (5d97b8a, fce3b98; docs/perf-notes.md
// step 10), stream_n32k128 against sm90_m64n128k128: at 16 rows per expert Mixtral T=64 770 / 1107
// us, Qwen3 T=256 421 / 477, GPT-OSS T=512 1824 / 2258; at 24 rows Mixtral T=96 878 / 1074, GPT-OSS
// T=768 1996 / 2228, Qwen3 T=384 473 / 471 (a tie: with 128 experts the busiest pass 32 rows).
inline constexpr double kStreamMaxRowsPerExpert = 24;
// Up to this K, and from this many (expected) 64-column tiles on, the heuristic prefers the
// mma.sync m16n64k64 tile to the stream tiles' 8/16 rows (cuda_stages.cpp, heuristic_tile).
inline constexpr int64_t kShortK = 2048;
inline constexpr int64_t kManyTiles = 4096;
// The heuristic mma.sync tile for a GEMM of `rows_per_expert` expected rows per active expert.
GemmTile choose_gemm_tile(double rows_per_expert);
Status launch_grouped_gemm(const GemmArgs& a, void* stream);


// ---- the whole layer for a few tokens (decode_layer.cuh) ------------------------------------------
// Two launches: one CTA routes the tokens (or reads PreRouted ids) and lists the active local experts
// with their routed rows; then one grid runs every gemm1 tile (gathered hidden rows in, activation in
// the epilogue), every gemm2 tile (each waits for its expert's gemm1 tiles after prefetching its own
// weights) and the combine (the last gemm2 tile of each 64-column block sums its tokens in slot order).
struct DecodeLayerArgs {
  Elem type = Elem::kBF16;
  RouteArgs route;             // topk_ids/topk_weights: where the routing goes (or the PreRouted inputs)
  bool route_on_device = true;  // false: PreRouted (topk_ids/topk_weights below are the caller's)
  const int32_t* topk_ids = nullptr;    // [T, K]: what the layer reads (route's output when routed here)
  const float* topk_weights = nullptr;  // [T, K]
  const int32_t* expert_map = nullptr;  // optional [E]: global -> local or -1
  int local_begin = 0;
  int local_experts = 0;
  const void* hidden = nullptr;  // [T, H]
  const void* w13 = nullptr;     // [E_local, N1, H]
  const void* w2 = nullptr;      // [E_local, H, I]
  const void* w13_bias = nullptr;
  Elem w13_bias_type = Elem::kF32;
  const void* w2_bias = nullptr;
  Elem w2_bias_type = Elem::kF32;
  int64_t hidden_size = 0;  // H
  int64_t inter = 0;        // I
  int activation = 0;
  bool gated = true;
  bool interleaved = false;
  float alpha = 0.f;
  float limit = 0.f;
  float scale = 1.f;        // routed_scaling_factor
  bool no_combine = false;  // out [T*K, H]: one row per slot
  void* out = nullptr;
  void* act = nullptr;      // [T*K, I] in `type`: gemm1's activated rows (gemm2_in)
  int split = 1;            // gemm2's K split (1..8): partial sums added in rank order by the combine
  void* scratch = nullptr;  // decode_layer_scratch_bytes (decode_token_scratch_bytes for the one-token kernel)
  size_t scratch_bytes = 0;
  int sm_count = 0;  // the one-token kernel's grid: one CTA per SM
};
// The most tokens and routed slots (T*K) the decode layer takes.
inline constexpr int64_t kDecodeMaxTokens = 32;
inline constexpr int64_t kDecodeMaxSlots = 1024;
inline constexpr int kDecodeMaxSplit = 8;
// The k tile of the decode layer's GEMMs (the stream kernel's StreamShape::BK; decode_layer.cuh
// checks that they agree): gemm2's split divides ceil(I / kDecodeKTile) k tiles.
inline constexpr int64_t kDecodeKTile = 128;
// K splits of k_tiles into ranks of ceil(k_tiles / split) tiles each (the stream tiles' cluster split
// and the decode layer's gemm2 split): whether every rank gets some, and the split that results
// when the tiles per rank, rounded up, decide how many ranks there are.
inline bool split_leaves_no_empty_rank(int64_t k_tiles, int64_t split) { return (split - 1) * ((k_tiles + split - 1) / split) < k_tiles; }
inline int64_t split_without_empty_ranks(int64_t k_tiles, int64_t split) {
  const int64_t per_rank = (k_tiles + split - 1) / split;
  return (k_tiles + per_rank - 1) / per_rank;
}
size_t decode_layer_scratch_bytes(int64_t tokens, int top_k, int64_t hidden, int split);
// gemm2's K split the decode layer takes by default: about as many k tiles per gemm2 tile as a gemm1
// tile streams (Mixtral's I = 14336 against H = 4096: 3), at most 8.
int decode_default_split(int64_t hidden, int64_t inter);
// Whether the decode layer takes gemm2 split `split` for intermediate size `inter`: 1..kDecodeMaxSplit,
// every rank with some k tiles (the launcher's check and the tuning knob's values).
bool decode_split_is_legal(int64_t inter, int split);
Status launch_decode_layer(const DecodeLayerArgs& a, void* stream);

// ---- the whole layer for one token (decode_token.cu) ------------------------------------------------
// A reset launch, then one kernel: every CTA routes the token, then the warps stream W13 and W2 as
// GEMVs over statically walked rows (gemm1 + activation, gemm2, then the combine in slot order),
// each waiting on the values it reads, not on a barrier. Takes DecodeLayerArgs with route.tokens == 1;
// `split` and `act` are not used.
inline constexpr int kDecodeTokenMaxSlots = 64;  // top_k: the slot tables live in shared memory
// The shared memory the plan lets it take (decode_token_smem_bytes): within what both an sm_80 GPU
// (A100: 163 KB per block) and Hopper (227 KB) allow, so a plan does not depend on which it is.
inline constexpr int64_t kDecodeTokenSmemBudget = 160 * 1024;
// Its scratch: float act rows [K][I] and gemm2 rows [K][H].
size_t decode_token_scratch_bytes(int top_k, int64_t hidden, int64_t inter);
// Its dynamic shared memory: the hidden row in float, the slot tables, and one warp's routing scratch
// (route_smem_per_warp); the plan declines what does not fit.
int64_t decode_token_smem_bytes(int experts, int n_group, int top_k, int64_t hidden);
Status launch_decode_token(const DecodeLayerArgs& a, void* stream);

// ---- the whole layer for a few tokens (decode_tokens.cu) ---------------------------------------------
// The one-token kernel's design for T = 2 .. kDecodeTokensMax: a reset launch, then one kernel in
// which every CTA routes the T tokens, groups the routed pairs by expert, and streams each expert's
// weights once for all its tokens. Takes DecodeLayerArgs with route.tokens in that range and
// T*K <= kDecodeTokensMaxSlots; `split` and `act` are not used.
inline constexpr int64_t kDecodeTokensMax = 8;
inline constexpr int64_t kDecodeTokensMaxSlots = 64;  // T*K: warp 0 groups the slots in two rounds of 32
// Its scratch: float act rows [T*K][I] and gemm2 rows [T*K][H].
size_t decode_tokens_scratch_bytes(int64_t tokens, int top_k, int64_t hidden, int64_t inter);
// Its dynamic shared memory: the T hidden rows (in float where that fits kDecodeTokenSmemBudget, else
// in the activation dtype), the slot and pair tables, and a routing scratch per token
// (route_smem_per_warp); the plan declines what does not fit the budget even with 16-bit rows.
int64_t decode_tokens_smem_bytes(int64_t tokens, int experts, int n_group, int top_k, int64_t hidden);
Status launch_decode_tokens(const DecodeLayerArgs& a, void* stream);

}  // namespace moekit::cuda::moe
