// The CUDA backend's stage implementations: each turns the StageContext (moekit/stages.h) into the
// arguments of one or more launches (moe_launch.h) on the caller's stream. Nothing here allocates or
// synchronizes; the runner has validated the call through this backend's hooks first.
//
// Buffer types: gemm1_in and gemm2_in hold the activation dtype (tensor-core operands), gemm1_out and
// gemm2_out float32 (the sm_90a kernel writes its rows there in the activation dtype, in the first
// half of the bytes; gemm_rows_stage). Backend-private scratch (StageBuffers::scratch): row_dest (the output row of
// each routed row), the float32 accumulator of the atomic gemm2 + finalize, and the radix-sort
// scratch of the scalable maps.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cpu/validate.h"
#include "cuda/cuda_check.h"
#include "cuda/moe/cuda_backend.h"
#include "cuda/moe/moe_launch.h"
#if MOEKIT_HAS_SM90_GEMM
#include "cuda/moe/sm90_grouped_gemm.h"
#endif
#include "moekit/cpu_reference.h"
#include "moekit/plan.h"

namespace moekit::cuda {
namespace {

using namespace moe;

size_t align256(size_t x) { return (x + 255) / 256 * 256; }

Elem elem_of(DType d) {
  switch (d) {
    case DType::kBF16: return Elem::kBF16;
    case DType::kF16: return Elem::kF16;
    default: return Elem::kF32;
  }
}

template <typename T>
T* ptr(const TensorView& v) { return v.data_as<T>(); }

void* stream_of(const StageContext& c) { return c.stream.handle; }
int64_t local_experts(const StageContext& c) { return c.problem.local_experts(); }
int64_t max_rows(const StageContext& c) { return c.buffers.row_source.size(0); }
int64_t out_rows(const StageContext& c) { return c.buffers.dest_offsets.size(0) - 1; }
int64_t num_tokens(const StageContext& c) { return c.inputs.hidden.size(0); }
const int64_t* total_rows(const StageContext& c) { return ptr<const int64_t>(c.buffers.expert_offsets) + local_experts(c); }

bool combines(const MoeProblem& p) { return p.input_format != InputFormat::kMasked && !p.no_combine; }

// ---- scratch ---------------------------------------------------------------------------------------
// The multiprocessor count of the current GPU (the sm_90a kernel's persistent grid), read once.
int device_sm_count() {
  static const int count = [] {
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
    return n;
  }();
  return count;
}

// Whether the stream tiles can split K over a thread-block cluster: the sm_90a kernels (which reduce
// the split through distributed shared memory) on a compute capability 9.0 GPU.
bool cluster_split_available(int compute_capability) {
#if MOEKIT_HAS_SM90_GEMM
  return compute_capability == 90;
#else
  (void)compute_capability;
  return false;
#endif
}

// The compute capability of the current GPU (as 90 for 9.0), read once.
int device_compute_capability() {
  static const int cc = [] {
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
      return 0;
    return 10 * major + minor;
  }();
  return cc;
}

// Whether the CUTLASS sm_90a GEMM can run here: built for sm_90a, on a Hopper GPU. Its only bias is
// gemm1's in the gated epilogue (interleaved gate/up rows); otherwise the activation and finalize
// kernels add the biases after it (activation_stage, finalize_stage).
bool sm90_gemm_available(int compute_capability) {
#if MOEKIT_HAS_SM90_GEMM
  return compute_capability == 90;
#else
  (void)compute_capability;
  return false;
#endif
}

size_t sm90_scratch_bytes(const MoeProblem& p) {
#if MOEKIT_HAS_SM90_GEMM
  const int sms = device_sm_count();
  return sms > 0 ? sm90_gemm_scratch_bytes(p.local_experts(), p.hidden, p.intermediate, elem_of(p.activation_dtype), sms) : 0;
#else
  (void)p;
  return 0;
#endif
}

// The input formats of both decode kernels (their registrations below) and their other rules
// (defined with them).
const std::vector<InputFormat> kDecodeLayerFormats = {InputFormat::kStandard, InputFormat::kPreRouted};
std::optional<std::string> decode_layer_declines(const PlanQuery& q);
std::optional<std::string> decode_token_declines(const PlanQuery& q);
std::optional<std::string> decode_tokens_declines(const PlanQuery& q);

// The decode region of the scratch, for a problem and token count: the decode layer's (its
// counters, lists and gemm2 partial rows at the largest split) or the GEMV kernels' (their float
// act and gemm2 rows), whichever is larger among those that take the problem, by the
// registrations' formats and their declines, so the workspace and the plan cannot disagree. Weight
// traits enter neither decision.
size_t decode_scratch_bytes(const MoeProblem& p, int64_t tokens) {
  if (std::ranges::find(kDecodeLayerFormats, p.input_format) == kDecodeLayerFormats.end()) return 0;
  const PlanQuery q{p, tokens, {}};
  size_t bytes = 0;
  if (!decode_layer_declines(q)) bytes = decode_layer_scratch_bytes(tokens, p.top_k, p.hidden, kDecodeMaxSplit);
  if (!decode_token_declines(q)) bytes = std::max(bytes, decode_token_scratch_bytes(p.top_k, p.hidden, p.intermediate));
  if (!decode_tokens_declines(q)) bytes = std::max(bytes, decode_tokens_scratch_bytes(tokens, p.top_k, p.hidden, p.intermediate));
  return bytes;
}

struct FixedScratch {
  size_t row_dest = 0, accumulator = 0, sm90 = 0, decode = 0, maps = 0;  // offsets; maps = the fixed part's size
  size_t sm90_bytes = 0, decode_bytes = 0;
};

// The regions whose sizes follow from the shapes come first; the maps' sort scratch (sized by CUB)
// is last and takes the rest, so carving at run time needs no CUB size query (the maps launcher
// checks that the rest is enough).
FixedScratch fixed_scratch(const MoeProblem& p, int64_t tokens, int64_t max_rows, int64_t out_rows) {
  FixedScratch l;
  size_t end = align256(static_cast<size_t>(max_rows) * 4);
  l.accumulator = end;
  if (combines(p)) end += align256(static_cast<size_t>(out_rows * p.hidden) * 4);
  l.sm90 = end;
  l.sm90_bytes = sm90_scratch_bytes(p);  // each GEMM's region; gemm2's follows gemm1's (sm90_args)
  l.decode = end + 2 * align256(l.sm90_bytes);
  l.decode_bytes = decode_scratch_bytes(p, tokens);
  l.maps = l.decode + align256(l.decode_bytes);
  return l;
}

Result<size_t> scratch_bytes(const MoeProblem& p, int64_t tokens, int64_t max_rows, int64_t out_rows) {
  size_t maps_bytes = 0;
  const auto f = p.input_format;
  if (f == InputFormat::kStandard || f == InputFormat::kPreRouted)
    MOEKIT_RETURN_IF_ERROR(topk_maps_scratch_bytes(tokens * p.top_k, static_cast<int>(p.local_experts()), &maps_bytes));
  if (f == InputFormat::kIndexed) MOEKIT_RETURN_IF_ERROR(maps_scratch_bytes(max_rows, tokens, &maps_bytes));
  return fixed_scratch(p, tokens, max_rows, out_rows).maps + align256(maps_bytes);
}

struct Scratch {
  int32_t* row_dest;
  float* accumulator;
  void* maps;
  size_t maps_bytes;
  void* sm90;
  size_t sm90_bytes;
  void* decode;
  size_t decode_bytes;
};

Result<Scratch> carve(const StageContext& c) {
  const FixedScratch l = fixed_scratch(c.problem, num_tokens(c), max_rows(c), out_rows(c));
  const size_t given = static_cast<size_t>(c.buffers.scratch.numel());
  if (given < l.maps) return Status::Internal(fmt::format("cuda scratch: {} bytes given, {} needed", given, l.maps));
  auto* base = ptr<unsigned char>(c.buffers.scratch);
  return Scratch{reinterpret_cast<int32_t*>(base + l.row_dest), reinterpret_cast<float*>(base + l.accumulator), base + l.maps,
                 given - l.maps, base + l.sm90, l.sm90_bytes, base + l.decode, l.decode_bytes};
}

// ---- routing and maps ------------------------------------------------------------------------------
// The expert groups the routing selects over: DeepSeek-V3's n_group, one group for every other method.
int routing_groups(const MoeProblem& p) { return p.routing.method == RoutingMethod::kDeepSeekV3 ? p.routing.n_group : 1; }

RouteArgs route_args(const StageContext& c) {
  const auto& p = c.problem;
  RouteArgs a;
  a.logits = c.inputs.router_logits.data();
  a.logits_type = elem_of(c.inputs.router_logits.dtype());
  a.bias = c.inputs.e_score_correction_bias.data();
  a.bias_type = elem_of(c.inputs.e_score_correction_bias.dtype());
  a.tokens = num_tokens(c);
  a.experts = p.num_experts;
  a.top_k = p.top_k;
  a.method = static_cast<int>(p.routing.method);
  a.renormalize = p.routing.renormalize;
  a.n_group = routing_groups(p);
  a.topk_group = p.routing.topk_group;
  a.topk_ids = ptr<int32_t>(c.buffers.topk_ids);
  a.topk_weights = ptr<float>(c.buffers.topk_weights);
  a.copy_ids = ptr<int32_t>(c.outputs.topk_ids);
  a.copy_weights = ptr<float>(c.outputs.topk_weights);
  return a;
}

MapsOut maps_out(const StageContext& c, const Scratch& s) {
  const auto& b = c.buffers;
  return {ptr<int64_t>(b.expert_offsets), ptr<int64_t>(b.row_source), ptr<float>(b.row_weight),
          ptr<int64_t>(b.dest_offsets),   ptr<int64_t>(b.dest_rows),  s.row_dest};
}

TopkMapsArgs topk_args(const StageContext& c, const Scratch& s) {
  const auto& p = c.problem;
  TopkMapsArgs a;
  a.topk_ids = ptr<const int32_t>(c.buffers.topk_ids);
  a.topk_weights = ptr<const float>(c.buffers.topk_weights);
  a.tokens = num_tokens(c);
  a.top_k = p.top_k;
  a.num_experts = p.num_experts;
  a.local_begin = p.local_expert_begin;
  a.local_experts = p.local_experts();
  a.expert_map = ptr<const int32_t>(c.weights.expert_map);
  a.no_combine = p.no_combine;
  a.out = maps_out(c, s);
  a.scratch = s.maps;
  a.scratch_bytes = s.maps_bytes;
  return a;
}

Status route_stage(const StageContext& c) { return launch_route(route_args(c), stream_of(c)); }

Status route_build_maps_stage(const StageContext& c) {
  auto s = carve(c);
  if (!s.ok()) return s.status();
  return launch_route_and_maps(route_args(c), topk_args(c, *s), stream_of(c));
}

Status build_maps_stage(const StageContext& c) {
  auto s = carve(c);
  if (!s.ok()) return s.status();
  switch (c.problem.input_format) {
    case InputFormat::kStandard:
    case InputFormat::kPreRouted: return launch_topk_maps(topk_args(c, *s), stream_of(c));
    case InputFormat::kMasked: {
      MaskedMapsArgs a;
      a.masked_m = ptr<const int32_t>(c.inputs.masked_m);
      a.local_experts = c.problem.local_experts();
      a.max_m = c.inputs.hidden.size(1);
      a.out = maps_out(c, *s);
      return launch_masked_maps(a, stream_of(c));
    }
    case InputFormat::kIndexed: {
      IndexedMapsArgs a;
      a.expert_offsets = ptr<const int32_t>(c.inputs.expert_offsets);
      a.gather_index = ptr<const int32_t>(c.inputs.gather_index);
      a.row_weights = ptr<const float>(c.inputs.row_weights);
      a.local_experts = c.problem.local_experts();
      a.tokens = num_tokens(c);
      a.max_rows = max_rows(c);
      a.out = maps_out(c, *s);
      a.scratch = s->maps;
      a.scratch_bytes = s->maps_bytes;
      return launch_indexed_maps(a, stream_of(c));
    }
  }
  return Status::Internal("cuda build_maps: unknown input format");
}

// ---- expand ----------------------------------------------------------------------------------------
Status expand_stage(const StageContext& c) {
  ExpandArgs a;
  a.hidden = c.inputs.hidden.data();
  a.out = c.buffers.gemm1_in.data();
  a.type = elem_of(c.problem.activation_dtype);
  a.row_source = ptr<const int64_t>(c.buffers.row_source);
  a.row_weight = ptr<const float>(c.buffers.row_weight);
  a.total_rows = total_rows(c);
  a.max_rows = max_rows(c);
  a.hidden_size = c.problem.hidden;
  a.weight_on_input = c.problem.apply_router_weight_on_input;
  // Standard and PreRouted maps list each token's rows in the dest CSR (output rows t, or t * K ..
  // t * K + K - 1 with no_combine), so the expand can read each token once. Masked rows are one a slot
  // anyway; Indexed maps leave rows with an invalid gather index out of the CSR, which the row-major
  // expand still fills (from token 0) so that gemm1 never reads unwritten rows.
  const InputFormat f = c.problem.input_format;
  if (f == InputFormat::kStandard || f == InputFormat::kPreRouted) {
    a.tokens = num_tokens(c);
    a.out_rows_per_token = c.problem.no_combine ? c.problem.top_k : 1;
    a.dest_offsets = ptr<const int64_t>(c.buffers.dest_offsets);
    a.dest_rows = ptr<const int64_t>(c.buffers.dest_rows);
    if (out_rows(c) != a.tokens * a.out_rows_per_token)
      return Status::Internal("cuda expand: " + std::to_string(out_rows(c)) + " output rows for " + std::to_string(a.tokens) +
                              " tokens x " + std::to_string(a.out_rows_per_token));
  }
  return launch_expand(a, stream_of(c));
}

// ---- GEMMs -----------------------------------------------------------------------------------------
// ---- knobs -----------------------------------------------------------------------------------------
constexpr GemmTile kAllTiles[] = {GemmTile::kStreamN8,  GemmTile::kStreamN16, GemmTile::kStreamN32, GemmTile::kM16N64,
                                  GemmTile::kM32N128,   GemmTile::kM64N128,   GemmTile::kM128N128,  GemmTile::kM128N256};
// The sm_90a kernel's configurations (Hopper builds; biases go to the activation and finalize kernels).
constexpr GemmTile kSm90Tiles[] = {GemmTile::kSm90M128N256C1x1, GemmTile::kSm90M128N256C1x2, GemmTile::kSm90M64N128C1x1,
                                   GemmTile::kSm90M64N128C1x2, GemmTile::kSm90M128N128C1x1, GemmTile::kSm90M192N128C1x1};
// The stream tiles' K split ("auto": from the grid, stream_gemm_launch.cuh); other tiles ignore it.
constexpr const char* kSplits[] = {"auto", "1", "2", "4", "8"};

// gemm1 (W13: N = gate/up rows, K = H) or gemm2 (W2: N = H, K = I).
int64_t gemm_n(const MoeProblem& p, bool first) { return first ? p.gemm1_rows() : p.hidden; }
int64_t gemm_k(const MoeProblem& p, bool first) { return first ? p.hidden : p.intermediate; }

// The experts the heuristic expects the rows to spread over. Routing with a correction bias
// (DeepSeek-V3's) can concentrate them: the bench's random bias (uniform in +-0.3) reaches 35-46% of
// the 256 experts from T=64 to 1024, so a plan sized for all of them chose tiles of 8-16 rows for
// experts holding 11-40 (measured on the H200, 5d97b8a: T=256 4311 us on the 16-row stream tile,
// 3307 on the 32-row one). Half of them is the hedge: when the load is even after all, the tile is
// one size larger than needed (about 6% slower: Qwen3 T=128, 400 against 377 us).
bool routing_concentrates(const MoeProblem& p) {
  return p.input_format == InputFormat::kStandard && p.routing.method == RoutingMethod::kDeepSeekV3;
}
int64_t expected_experts(const MoeProblem& p) {
  const int64_t local = p.local_experts();
  if (routing_concentrates(p)) return std::max<int64_t>(1, local / 2);
  return local;
}

// The windows of rows an expected expert in which the heuristic takes the 192 x 128 tile
// (moe_launch.h, kSm90TallTileMinRows etc.): none, gemm1's (the gated epilogue) or gemm2's (the plain
// one). huge_expert_tail_window names the huge experts' tall-tail windows the same way.
enum class TallWindow : uint8_t { kNone, kGemm1, kGemm2 };

// The experts `max_rows` routed rows can reach (at most one a row, at least one), and the rows each
// of them expects: the heuristic's tile, the tall tails' and the overlapped pair's rules all count
// rows an expected expert this way.
int64_t active_experts(int64_t max_rows, int64_t experts) { return std::max<int64_t>(1, std::min(max_rows, experts)); }
double rows_per_expected_expert(int64_t max_rows, int64_t experts) {
  return static_cast<double>(max_rows) / static_cast<double>(active_experts(max_rows, experts));
}

// A window of rows an expected expert, both ends inside it.
struct RowsWindow {
  double min, max;
};

// The window `which` names (gemm1's or gemm2's; not kNone).
RowsWindow window_of(TallWindow which, RowsWindow gemm1, RowsWindow gemm2) { return which == TallWindow::kGemm2 ? gemm2 : gemm1; }

// Whether `rows_per_expert` lies in the window `which` names (none, gemm1's or gemm2's): the one
// test both the 192 x 128 tile's windows (tall_window) and the huge experts' tall-tail windows
// (huge_expert_tail_window) go through.
bool in_rows_window(double rows_per_expert, TallWindow which, RowsWindow gemm1, RowsWindow gemm2) {
  if (which == TallWindow::kNone) return false;
  const RowsWindow w = window_of(which, gemm1, gemm2);
  return rows_per_expert >= w.min && rows_per_expert <= w.max;
}

// The heuristic's tile and why: `moekit explain` prints `why` under the knob (KnobSpec::why), so it
// names the numbers the rule read and the bound it crossed.
struct TileDecision {
  GemmTile tile;
  std::string why;
};

// A bound of moe_launch.h in elements, as the reasons print it ("48M": 48 << 20), so the text follows
// the constant.
std::string mega(int64_t elements) { return fmt::format("{}M", elements >> 20); }

// An expert's weight size, in the classes the sm_90a rules use (moe_launch.h).
std::string expert_size_words(int64_t n, int64_t k) {
  const int64_t e = n * k;
  const std::string cls = e >= kSm90HugeExpert    ? ">= " + mega(kSm90HugeExpert) + ": huge"
                          : e >= kSm90LargeExpert ? ">= " + mega(kSm90LargeExpert) + ": large"
                                                  : "< " + mega(kSm90LargeExpert);
  return fmt::format("experts of {} x {} = {:.1f}M elements ({})", n, k, static_cast<double>(e) / (1 << 20), cls);
}

// The heuristic tile: expected rows per active expert = the most rows over the experts they can reach.
// On a Hopper GPU above kSm90MinRows routed rows (from it, for large experts): the CUTLASS TMA + wgmma kernel, which streams the
// weights faster than the cp.async kernels even at a few rows per expert, with a tile chosen by rows
// per expert and the expert weight's size (moe_launch.h: 64 x 128, in its 1 x 2 cluster for large experts at a few rows, or 128 x 256).
// Otherwise
// the weight-streaming kernel up to kStreamMaxRowsPerExpert, except for a short K over many tiles
// (below), and the mma.sync tiles above.
// `tall`: the window of rows in which the heuristic takes the 192 x 128 tile (tall_window), if any.
TileDecision decide_tile(int64_t max_rows, int64_t experts, int64_t n, int64_t k, bool sm90, TallWindow tall = TallWindow::kNone) {
  const int64_t active = active_experts(max_rows, experts);
  const double rows_per_expert = rows_per_expected_expert(max_rows, experts);
  const bool large_expert = n * k >= kSm90LargeExpert;
  const bool huge_expert = n * k >= kSm90HugeExpert;
  const std::string rows = fmt::format("{} routed rows over {} expected experts = {:.1f} rows an expected expert, {}", max_rows, active,
                                       rows_per_expert, expert_size_words(n, k));
  if (sm90 && (max_rows > kSm90MinRows || (max_rows == kSm90MinRows && large_expert))) {
    // The 64 x 128 tile's bound by expert size: the one number the test below and its reason read.
    static_assert(kSm90HugeExpert >= kSm90LargeExpert && kSm90HugeExpertSmallTileMaxRows >= kSm90SmallTileMaxRows &&
                  kSm90MidTileMaxRows >= kSm90SmallTileMaxRows);
    const double small_max = huge_expert ? kSm90HugeExpertSmallTileMaxRows : large_expert ? kSm90SmallTileMaxRows : kSm90MidTileMaxRows;
    if (rows_per_expert <= small_max) {
      const double cluster_max = huge_expert ? kSm90HugeExpertClusterMaxRows : large_expert ? kSm90LargeExpertClusterMaxRows : 0;
      if (rows_per_expert <= cluster_max)
        return {GemmTile::kSm90M64N128C1x2,
                fmt::format("{}: at most {:g} rows, the 64 x 128 tile in its 1 x 2 cluster (docs/perf-notes.md step 38)", rows, cluster_max)};
      return {GemmTile::kSm90M64N128C1x1, fmt::format("{}: at most {:g} rows, the 64 x 128 tile{}", rows, small_max,
                                                      cluster_max > 0 ? fmt::format(" without its cluster (above {:g} rows)", cluster_max) : "")};
    }
    // In the 192-row tile's window, experts of kSm90TallTailMinExpert elements or more take the
    // 128 x 256 tile, whose tall tails (decide_tall_tail) hold their 129-192 rows on the 192 x 256
    // tile instead (docs/perf-notes.md step 46).
    const RowsWindow tall_gemm1{kSm90TallTileMinRows, kSm90TallTileMaxRows}, tall_gemm2{kSm90TallGemm2MinRows, kSm90TallGemm2MaxRows};
    if (in_rows_window(rows_per_expert, tall, tall_gemm1, tall_gemm2)) {
      const RowsWindow w = window_of(tall, tall_gemm1, tall_gemm2);
      const std::string window = fmt::format("the 192-row tile's window for {}, {:g}-{:g} rows",
                                             tall == TallWindow::kGemm2 ? "gemm2" : "gemm1 (gated epilogue)", w.min, w.max);
      if (n * k >= kSm90TallTailMinExpert)
        return {GemmTile::kSm90M128N256C1x1, fmt::format("{}: in {}, but experts of {} elements or more take 128 x 256 with tall tails there "
                                                         "(step 46)", rows, window, mega(kSm90TallTailMinExpert))};
      return {GemmTile::kSm90M192N128C1x1, fmt::format("{}: in {} (steps 36-37)", rows, window)};
    }
    return {GemmTile::kSm90M128N256C1x1, fmt::format("{}: above {:g} rows, the 128 x 256 tile", rows, small_max)};
  }
  const std::string kernel = sm90 ? fmt::format("the sm_90a kernel takes more than {} routed rows ({} or more for experts of {} "
                                                "elements or more)", kSm90MinRows, kSm90MinRows, mega(kSm90LargeExpert))
                                  : std::string("no sm_90a kernel on this device");
  const GemmTile tile = choose_gemm_tile(rows_per_expert);
  // A stream CTA (two per SM) pays its pipeline fill once per tile; with a short K there is little
  // stream to hide it behind, and over many waves of tiles the m16n64k64 tile (more CTAs per SM)
  // keeps more loads in flight. Measured by `moekit tune` on the H200 (docs/perf-notes.md):
  // DeepSeek-V3 T=64 gemm2 (K=2048, ~10,000 tiles) 642 us against 851 on stream_n8k128, Qwen3 T=64
  // gemm2 (K=768) also m16n64k64; with K >= 2880 (GPT-OSS, Mixtral, DeepSeek gemm1) the stream tiles win.
  const int64_t tiles = active * ((n + 63) / 64);
  if (is_stream_tile(tile) && tile != GemmTile::kStreamN32 && k <= kShortK && tiles >= kManyTiles)
    return {GemmTile::kM16N64, fmt::format("{}; {}: K={} <= {} over {} tiles of 64 columns (>= {}), m16n64k64 instead of the stream tile",
                                           kernel, rows, k, kShortK, tiles, kManyTiles)};
  return {tile, fmt::format("{}; {}: the tile for that many rows (choose_gemm_tile)", kernel, rows)};
}
GemmTile heuristic_tile(int64_t max_rows, int64_t experts, int64_t n, int64_t k, bool sm90, TallWindow tall = TallWindow::kNone) {
  return decide_tile(max_rows, experts, n, k, sm90, tall).tile;
}

// What neither decode kernel takes, whatever T: quantized weights, f32 activations, and the router
// weight on the input (gemm1 reads the hidden rows as they are).
std::optional<std::string> decode_kernels_decline(const MoeProblem& p) {
  if (p.quant != QuantScheme::kNone) return fmt::format("quant={}: the decode kernels take f16/bf16 weights only", quant_scheme_name(p.quant));
  if (p.activation_dtype != DType::kBF16 && p.activation_dtype != DType::kF16)
    return fmt::format("activation_dtype={}: the decode kernels take f16 or bf16", dtype_name(p.activation_dtype));
  if (p.apply_router_weight_on_input)
    return std::string("apply_router_weight_on_input: gemm1 reads the hidden rows as they are (the stage pipeline's expand applies the weight)");
  return std::nullopt;
}

// ---- the decode layer (decode_layer.cuh) -------------------------------------------------------------
// Why the two-launch decode layer does not take this problem (nullopt: it does).
std::optional<std::string> decode_layer_declines(const PlanQuery& q) {
  const auto& p = q.problem;
  if (q.num_tokens > kDecodeMaxTokens)
    return fmt::format("T={} > {}: a CTA holds all of an expert's routed rows (up to T), at most {} of them", q.num_tokens, kDecodeMaxTokens,
                       kDecodeMaxTokens);
  if (q.num_tokens * p.top_k > kDecodeMaxSlots)
    return fmt::format("T*K={} > {}: one CTA lists the routed slots", q.num_tokens * p.top_k, kDecodeMaxSlots);
  return decode_kernels_decline(p);
}

// Why the one-token kernel (decode_token.cu) does not take this problem (nullopt: it does).
std::optional<std::string> decode_token_declines(const PlanQuery& q) {
  const auto& p = q.problem;
  if (q.num_tokens != 1)
    return fmt::format("T={}: the one-token kernel runs decode at batch 1 (the few-token kernel, the decode layer and the stages take other T)", q.num_tokens);
  if (p.top_k > kDecodeTokenMaxSlots)
    return fmt::format("top_k={} > {}: the slot tables live in shared memory", p.top_k, kDecodeTokenMaxSlots);
  if (auto why = decode_kernels_decline(p)) return why;
  const int64_t smem = decode_token_smem_bytes(p.num_experts, routing_groups(p), p.top_k, p.hidden);
  if (smem > kDecodeTokenSmemBudget)
    return fmt::format("{} bytes of shared memory (the hidden row of H={} in float, the slot tables, the routing scratch of E={}) > {}", smem,
                       p.hidden, p.num_experts, kDecodeTokenSmemBudget);
  return std::nullopt;
}

// Why the few-token kernel (decode_tokens.cu) does not take this problem (nullopt: it does).
std::optional<std::string> decode_tokens_declines(const PlanQuery& q) {
  const auto& p = q.problem;
  if (q.num_tokens < 2 || q.num_tokens > kDecodeTokensMax)
    return fmt::format("T={}: the few-token kernel runs T = 2..{} (the one-token kernel takes T=1, the stages the rest)", q.num_tokens,
                       kDecodeTokensMax);
  if (q.num_tokens * p.top_k > kDecodeTokensMaxSlots)
    return fmt::format("T*top_k={} > {}: one warp groups the routed slots", q.num_tokens * p.top_k, kDecodeTokensMaxSlots);
  if (auto why = decode_kernels_decline(p)) return why;
  const int64_t smem = decode_tokens_smem_bytes(q.num_tokens, p.num_experts, routing_groups(p), p.top_k, p.hidden);
  if (smem > kDecodeTokenSmemBudget)
    return fmt::format("{} bytes of shared memory (T={} hidden rows of H={} in 16 bits, the slot tables, T routing scratches of E={}) > {}", smem,
                       q.num_tokens, p.hidden, p.num_experts, kDecodeTokenSmemBudget);
  return std::nullopt;
}

// Measured on the H200 (docs/perf-notes.md, step 21; device calls 4-10 of
// docs/device-logs/2026-11-26-small-t/): the few-token kernel is faster than the stages at every T
// from 2 to 8 where the routed slots are fewer than the experts (Qwen3-30B-A3B -4..-18%,
// GPT-OSS-120B -2..-14%, DeepSeek-V3 T = 2..7 -4..-9%, Mixtral-8x7B T = 2, 3 -1..-3%), and slower
// where they are not (Mixtral T = 4..8, every one of its 8 experts expected to be hit: +6..+30%):
// there each expert's gemm2 rows meet more tokens' act rows, which the kernel re-reads from L2 once
// per token.
std::optional<std::string> decode_tokens_prefers_stages(const PlanQuery& q) {
  const auto& p = q.problem;
  if (q.num_tokens * p.top_k < p.num_experts) return std::nullopt;
  return fmt::format("T*top_k={} >= E={} (every expert expected to be hit): measured slower than the stages on the H200 "
                     "(docs/perf-notes.md, step 21); fusion.whole_layer=on takes it",
                     q.num_tokens * p.top_k, p.num_experts);
}

// Measured on the H200 (docs/perf-notes.md, step 7; 76256b4): the stage pipeline was as fast at
// T=1 (Qwen3 41.0 against 41.0 us, GPT-OSS 73.9 against 76.6) and 1-6% faster at T=8, so the decode
// layer is the tuner's and the caller's to turn on, not the default.
std::optional<std::string> decode_layer_prefers_stages(const PlanQuery&) {
  return std::string("on the H200 it measured no faster than the stages at T=1 and slower from T=8 (docs/perf-notes.md); "
                     "fusion.whole_layer=on takes it");
}

// gemm2's K split inside the decode layer: the powers of two that leave no rank without k tiles, and
// the default split, which need not be one (Mixtral's is 3: 112 k tiles of gemm2 over 32 of gemm1).
// The default must be a value: a tuned row that keeps the heuristic's values is checked against
// this list, and step 39's re-tune wrote a Mixtral T=8 row that the dispatcher then refused.
KnobSpec decode_split_knob(const MoeProblem& p) {
  const int heuristic = decode_default_split(p.hidden, p.intermediate);
  KnobSpec k{"decode.split", {}, std::to_string(heuristic), Stage::kGemm2,
             fmt::format("the decode layer's default: about as many k tiles a gemm2 tile as a gemm1 tile streams (I={} against H={}), at most {}",
                         p.intermediate, p.hidden, kDecodeMaxSplit)};
  for (int split = 1; split <= kDecodeMaxSplit; ++split) {
    const bool power_of_two = (split & (split - 1)) == 0;
    if ((power_of_two || split == heuristic) && decode_split_is_legal(p.intermediate, split)) k.values.push_back(std::to_string(split));
  }
  return k;
}

// Whether gemm1 runs the sm_90a kernel's gated epilogue (gemm1_activation_stage): a gated activation
// with its gate/up rows interleaved.
bool gemm1_gated_epilogue(const MoeProblem& p) {
  return activation_is_gated(p.activation.kind) && p.gate_up_layout == GateUpLayout::kInterleaved;
}

// Which of moe_launch.h's windows for the 192 x 128 tile the heuristic applies to a GEMM: gemm1's
// where gemm1 has the gated epilogue (where it was measured), gemm2's always; none under routing that
// concentrates the rows on a few experts (DeepSeek-V3's correction bias: the layer measured 9-16%
// slower with gemm1 on it at 128-160 expected rows, docs/perf-notes.md step 36). The tuner and the
// caller may choose the tile anywhere on Hopper.
TallWindow tall_window(const MoeProblem& p, bool first) {
  if (routing_concentrates(p)) return TallWindow::kNone;
  if (!first) return TallWindow::kGemm2;
  return gemm1_gated_epilogue(p) ? TallWindow::kGemm1 : TallWindow::kNone;
}

// Which of decide_tall_tail's windows for experts of kSm90HugeExpert elements or more a GEMM takes
// (moe_launch.h kSm90HugeExpertWide*): gemm1's for gemm1 in either layout (interleaved W13 with the
// gated epilogue, steps 47 a-c; concatenated with the plain one, -7.6% and -7.7% at 132 and 176 rows,
// step 47 e), gemm2's for gemm2, none under routing that concentrates the rows (never measured).
TallWindow huge_expert_tail_window(const MoeProblem& p, bool first) {
  if (routing_concentrates(p)) return TallWindow::kNone;
  return first ? TallWindow::kGemm1 : TallWindow::kGemm2;
}

// Whether the heuristic runs a GEMM's experts' tall tails in a second launch (gemm1.tall_tail /
// gemm2.tall_tail wide: on the 192 x 256 tile), on the heuristic's 128-row tile, in the windows of
// rows an expected expert and of expert sizes where the layer measured faster (moe_launch.h):
// experts of kSm90TallTailMinExpert up to kSm90HugeExpert elements at kSm90TallTailMinRows to
// kSm90TallTailMaxRows, which holds the 192 x 128 tile's windows, where heuristic_tile gives them the
// 128 x 256 tile (step 46); larger experts (Mixtral-8x7B's) in the window `huge_window` names
// (huge_expert_tail_window), step 47.
struct TallTailDecision {
  bool wide;
  std::string why;
};
TallTailDecision decide_tall_tail(GemmTile heuristic, int64_t max_rows, int64_t experts, int64_t n, int64_t k, TallWindow huge_window) {
  if (heuristic != GemmTile::kSm90M128N256C1x1) return {false, "the tails run only beside the 128 x 256 tile, and the heuristic's tile is another"};
  if (n * k < kSm90TallTailMinExpert)
    return {false, fmt::format("{}: below the tails' {} (step 42)", expert_size_words(n, k), mega(kSm90TallTailMinExpert))};
  const double rows_per_expert = rows_per_expected_expert(max_rows, experts);
  const std::string rows = fmt::format("{:.1f} rows an expected expert, {}", rows_per_expert, expert_size_words(n, k));
  if (n * k < kSm90HugeExpert) {
    const bool in = rows_per_expert >= kSm90TallTailMinRows && rows_per_expert <= kSm90TallTailMaxRows;
    return {in, fmt::format("{}: {} the window {:g}-{:g} rows for experts of {} to {} elements (steps 42-46)", rows, in ? "in" : "outside",
                            kSm90TallTailMinRows, kSm90TallTailMaxRows, mega(kSm90TallTailMinExpert), mega(kSm90HugeExpert))};
  }
  if (huge_window == TallWindow::kNone)
    return {false, fmt::format("{}: routing that concentrates rows on a few experts, never measured with the tails", rows)};
  const RowsWindow w1{kSm90HugeExpertWideGemm1MinRows, kSm90HugeExpertWideGemm1MaxRows};
  const RowsWindow w2{kSm90HugeExpertWideGemm2MinRows, kSm90HugeExpertWideGemm2MaxRows};
  const RowsWindow w = window_of(huge_window, w1, w2);
  const bool in = in_rows_window(rows_per_expert, huge_window, w1, w2);
  return {in, fmt::format("{}: {} {}'s window for experts of {} elements or more, {:g}-{:g} rows (step 47)", rows, in ? "in" : "outside",
                          huge_window == TallWindow::kGemm2 ? "gemm2" : "gemm1", mega(kSm90HugeExpert), w.min, w.max)};
}

std::vector<KnobSpec> knob_space(const PlanQuery& q, const DeviceTarget& device) {
  const auto& p = q.problem;
  const int64_t rows = p.input_format == InputFormat::kMasked ? q.num_tokens : q.num_tokens * p.top_k;
  std::vector<KnobSpec> knobs;
  const bool sm90 = sm90_gemm_available(device.compute_capability);
  for (const bool first : {true, false}) {
    std::vector<std::string> names;
    for (GemmTile t : kAllTiles) names.emplace_back(gemm_tile_name(t));
    if (sm90)
      for (GemmTile t : kSm90Tiles) names.emplace_back(gemm_tile_name(t));
    const Stage stage = first ? Stage::kGemm1 : Stage::kGemm2;
    const TileDecision tile = decide_tile(rows, expected_experts(p), gemm_n(p, first), gemm_k(p, first), sm90, tall_window(p, first));
    const GemmTile heuristic = tile.tile;
    const std::string concentrated =
        routing_concentrates(p) ? fmt::format(" (expected experts: half the {} local ones, since DeepSeek-V3's correction bias concentrates "
                                              "the rows)", p.local_experts())
                                : "";
    knobs.push_back({first ? "gemm1.tile" : "gemm2.tile", names, std::string(gemm_tile_name(heuristic)), stage, tile.why + concentrated});
    // The order in which the sm_90a kernel hands out its tiles (sm90_grouped_gemm.h, Sm90TileOrder):
    // auto claims them on a tile without a cluster while every expert fits one M tile of it, where
    // the claimed order measured 1-5% faster a GEMM, and keeps the fixed order elsewhere, where
    // claimed measured from 8% faster to 13% slower (docs/perf-notes.md steps 23-25).
    if (sm90)
      knobs.push_back({first ? "gemm1.order" : "gemm2.order", {"auto", "fixed", "claimed"}, "auto", stage,
                       "decided on the device from the routing: claimed on a tile without a cluster while every expert fits one M tile, "
                       "fixed elsewhere (steps 23-25)"});
    // The tail split of the sm_90a cooperative tiles (Sm90TailSplit): auto runs the last round
    // stream-K where that measured faster (a few whole rounds and a sparse last one: Mixtral's gemm2
    // at T = 1024..4096, -2..-7% a GEMM; docs/perf-notes.md step 32), decided on the device.
    if (sm90)
      knobs.push_back({first ? "gemm1.tail" : "gemm2.tail", {"auto", "off"}, "auto", stage,
                       "decided on the device from the expert offsets: the last round runs stream-K on the cooperative tiles without a "
                       "cluster, under the fixed order, after 1-8 whole rounds when at most half a round is left and a tile has 16 "
                       "k-tiles or more (step 32); not in a head beside its tall tails (step 47 g)"});
    // The experts' tall tails (an expert's last two M tiles, when the last holds at most 64 rows, as
    // one 192-row tile in a second launch; sm90_tall_tail below): on the 128-row tiles only, on by
    // default (wide) where decide_tall_tail measured faster. `on` runs the tails on the 192 x 128
    // tile, `wide` on the 192 x 256 one (docs/perf-notes.md step 43).
    if (sm90) {
      const TallTailDecision tall_tail =
          decide_tall_tail(heuristic, rows, expected_experts(p), gemm_n(p, first), gemm_k(p, first), huge_expert_tail_window(p, first));
      knobs.push_back({first ? "gemm1.tall_tail" : "gemm2.tall_tail", {"off", "on", "wide"}, tall_tail.wide ? "wide" : "off", stage,
                       tall_tail.why});
    }
    // The split matters only where the stream tiles can run clusters.
    if (cluster_split_available(device.compute_capability))
      knobs.push_back({first ? "gemm1.split" : "gemm2.split", {std::begin(kSplits), std::end(kSplits)}, "auto", stage,
                       "the stream tiles' K split over a cluster, from the grid (stream_gemm_launch.cuh); the other tiles ignore it"});
  }
  // gemm2's first weight stages under gemm1's tail (sm90_overlap below): auto where the rows rule
  // measured faster, on wherever the tiles allow it (both GEMMs on the sm_90a kernel, gemm2 on the
  // 64 x 128 tile without a cluster), off never. A knob of both GEMMs' stages; it is gemm2's weights
  // that move.
  if (sm90) {
    const int64_t limit = sm90_overlap_max_rows_per_expert(gemm_n(p, false) * gemm_k(p, false));
    knobs.push_back({"gemm2.overlap", {"auto", "on", "off"}, "auto", Stage::kGemm2,
                     fmt::format("decided per call: on where both GEMMs run the sm_90a kernel, gemm2 on the 64 x 128 tile without a cluster, "
                                 "at most {} routed rows an expected expert (the limit for gemm2's {}; steps 27 c, 35), with PDL on",
                                 limit, expert_size_words(gemm_n(p, false), gemm_k(p, false)))});
  }
  // At T = 1 the one-token kernel is the whole-layer path, and it has no split.
  if (!decode_layer_declines(q) && decode_token_declines(q)) knobs.push_back(decode_split_knob(p));
  return knobs;
}

// The plan's tile for this GEMM (its knob: the heuristic's, a table's or the caller's value).
GemmTile tile_for(const StageContext& c, bool first) {
  const std::string_view v = knob_value(c, first ? "gemm1.tile" : "gemm2.tile", "");
  for (GemmTile t : kAllTiles)
    if (v == gemm_tile_name(t)) return t;
  for (GemmTile t : kSm90Tiles)
    if (v == gemm_tile_name(t)) return t;
  const auto& p = c.problem;  // a step run without a plan's knobs
  return heuristic_tile(max_rows(c), expected_experts(p), gemm_n(p, first), gemm_k(p, first), false);
}

// The plan's K split of a stream tile (0: automatic).
int split_for(const StageContext& c, bool first) {
  const std::string_view v = knob_value(c, first ? "gemm1.split" : "gemm2.split", "auto");
  for (const char* s : kSplits)
    if (v == s && v != "auto") return std::stoi(s);
  return 0;
}

#if MOEKIT_HAS_SM90_GEMM
Sm90Tile sm90_tile_of(GemmTile t) {
  switch (t) {
    case GemmTile::kSm90M128N256C1x2: return Sm90Tile::kM128N256C1x2;
    case GemmTile::kSm90M64N128C1x1: return Sm90Tile::kM64N128C1x1;
    case GemmTile::kSm90M64N128C1x2: return Sm90Tile::kM64N128C1x2;
    case GemmTile::kSm90M128N128C1x1: return Sm90Tile::kM128N128C1x1;
    case GemmTile::kSm90M192N128C1x1: return Sm90Tile::kM192N128C1x1;
    default: return Sm90Tile::kM128N256C1x1;
  }
}

// The order knob's value as the kernel's (values outside the knob's list never reach here: plans
// are checked against the knob space).
Sm90TileOrder sm90_tile_order(std::string_view v) {
  if (v == "fixed") return Sm90TileOrder::kFixed;
  if (v == "claimed") return Sm90TileOrder::kClaimed;
  return Sm90TileOrder::kAuto;
}
#endif

// The sm_90a kernel: rows in the activation dtype into `d` (gemm1_out or gemm2_out), without bias;
// the activation or finalize kernel completes them. With `gated` (gemm1, a gated activation, gate/up
// rows interleaved) its epilogue applies the activation and gemm1's bias and writes gemm2's input
// rows, I wide, into `d` (gemm2_in).
GemmArgs gemm_args(const StageContext& c, bool first);

#if MOEKIT_HAS_SM90_GEMM
Result<Sm90GemmArgs> sm90_args(const StageContext& c, const GemmArgs& g, void* d, bool first, bool gated) {
  auto s = carve(c);
  if (!s.ok()) return s.status();
  Sm90GemmArgs a;
  a.tile = sm90_tile_of(g.tile);
  a.type = g.type;
  a.a = g.a;
  a.b = g.b;
  a.d = d;
  a.d_type = g.type;  // 16-bit rows: half the bytes of float32 to write and to read back
  a.expert_offsets = g.expert_offsets;
  a.experts = g.local_experts;
  a.max_rows = g.max_rows;
  a.n = g.n;
  a.k = g.k;
  // Each GEMM its own region: an overlapped gemm2 (sm90_overlap) is set up while gemm1 runs. A
  // GEMM in two parts (sm90_tall_tail_gemm) runs its tail in the other GEMM's region.
  a.scratch = static_cast<unsigned char*>(s->sm90) + (first ? 0 : align256(s->sm90_bytes));
  a.scratch_bytes = s->sm90_bytes;
  a.sm_count = device_sm_count();
  a.tile_order = sm90_tile_order(knob_value(c, first ? "gemm1.order" : "gemm2.order", "auto"));
  a.tail_split = knob_value(c, first ? "gemm1.tail" : "gemm2.tail", "auto") == "off" ? Sm90TailSplit::kOff : Sm90TailSplit::kAuto;
  if (gated) {
    a.gated_activation = g.activation;
    a.alpha = g.alpha;
    a.limit = g.limit;
    a.bias = g.bias;
    a.bias_type = g.bias_type;
  }
  return a;
}
#endif

// Whether gemm2's first weight stages stream under gemm1's tail (Sm90Overlap; docs/perf-notes.md
// step 27 c): both GEMMs on the sm_90a kernel, PDL on, and gemm2 on the 64 x 128 tile without a
// cluster at up to 32 routed rows an expected expert, where nearly every expert keeps to one M tile
// and the claimed order runs; up to 48 where gemm2's expert weight is small, 64 where it is tiny
// (sm90_overlap_max_rows_per_expert, moe_launch.h). Measured on an H100 up to 32 rows: Qwen3-30B-A3B
// T=64 -1.6% and T=256 -1.4% a layer, GPT-OSS, Mixtral and DeepSeek-V3 -0.1..-0.3%; on the 128 x 256
// tile up to +1.4% (Mixtral T=1024); at 34-48 rows (step 35 b) Qwen3 -2.5%, GPT-OSS -0.5%,
// DeepSeek-V3 +0.9..+2.4%; at 52-64 rows (step 35 c) Qwen3 -2.1..-0.7% (step 27 c had +0.3% at 64
// rows before step 28), GPT-OSS +0.2..+2.6%. Both setups then run as one kernel (step 28: up to 0.5%
// more at Qwen3 T=16). The knob gemm2.overlap (auto: this rule; on: wherever the tiles allow it;
// off) chooses per plan, MOEKIT_SM90_OVERLAP=0 turns it off for the process. Both GEMMs' stages ask,
// with the same knobs, so they agree.
[[maybe_unused]] bool sm90_overlap(const StageContext& c) {
  static const bool allowed = [] {
    const char* v = std::getenv("MOEKIT_SM90_OVERLAP");
    return !(v != nullptr && v[0] == '0');
  }();
  const std::string_view knob = knob_value(c, "gemm2.overlap", "auto");
  if (knob == "off" || !allowed || !pdl_enabled() || !is_sm90_tile(tile_for(c, true)) || tile_for(c, false) != GemmTile::kSm90M64N128C1x1)
    return false;
  const int64_t rows = max_rows(c);
  // No rows (T = 0): each GEMM returns before its setup, so there is no pair to set up.
  if (rows == 0) return false;
  if (knob == "on") return true;
  const int64_t active = active_experts(rows, expected_experts(c.problem));
  const int64_t limit = sm90_overlap_max_rows_per_expert(gemm_n(c.problem, false) * gemm_k(c.problem, false));
  return rows <= limit * active;
}

#if MOEKIT_HAS_SM90_GEMM
// The 192-row tile this GEMM runs its experts' tall tails on, if it runs in two parts (Sm90RowPart,
// sm90_grouped_gemm.h; docs/perf-notes.md steps 41, 43): the knob gemm1.tall_tail / gemm2.tall_tail
// on (192 x 128) or wide (192 x 256), the plan's tile (`tile`) one of 128 rows, some rows, and not
// an overlapped pair's GEMM (whose setups and launches are the pair's). Elsewhere the knob changes
// nothing (nullopt: one launch).
std::optional<Sm90Tile> sm90_tall_tail(const StageContext& c, bool first, Sm90Tile tile) {
  const std::string_view v = knob_value(c, first ? "gemm1.tall_tail" : "gemm2.tall_tail", "off");
  if (v != "on" && v != "wide") return std::nullopt;
  if (!sm90_is_head_tile(tile) || max_rows(c) == 0 || sm90_overlap(c)) return std::nullopt;
  return v == "wide" ? Sm90Tile::kM192N256C1x1 : Sm90Tile::kM192N128C1x1;
}

// The GEMM in two launches (launch_sm90_grouped_gemm_in_parts), the tall tails on `tail_tile` in the
// other GEMM's scratch region: free, since the GEMMs of a layer run one after the other and no
// overlapped pair runs beside the parts. With PDL the tails launch beside the heads (their CTAs take
// the SMs the heads' last round leaves, docs/perf-notes.md step 41 d); without it, after them.
Status sm90_tall_tail_gemm(const StageContext& c, const Sm90GemmArgs& a, Sm90Tile tail_tile, bool first) {
  const auto region = static_cast<ptrdiff_t>(align256(a.scratch_bytes));
  void* tail_scratch = static_cast<unsigned char*>(a.scratch) + (first ? region : -region);
  return launch_sm90_grouped_gemm_in_parts(a, tail_tile, tail_scratch, a.scratch_bytes, pdl_enabled(), stream_of(c));
}
#endif

Status sm90_gemm(const StageContext& c, const GemmArgs& g, void* d, bool first, bool gated = false) {
#if MOEKIT_HAS_SM90_GEMM
  auto a = sm90_args(c, g, d, first, gated);
  if (!a.ok()) return a.status();
  if (const auto tail_tile = sm90_tall_tail(c, first, a->tile)) return sm90_tall_tail_gemm(c, *a, *tail_tile, first);
  if (!sm90_overlap(c)) return launch_sm90_grouped_gemm(*a, stream_of(c));
  if (!first) {  // set up by gemm1's stage
    a->overlap = Sm90Overlap::kSecond;
    a->run_setup = false;
    return launch_sm90_grouped_gemm(*a, stream_of(c));
  }
  // gemm1: both setups as one kernel (each GEMM writes its job instead of launching it), then the
  // GEMM; gemm2's setup is then two launches before gemm2.
  auto second = sm90_args(c, gemm_args(c, false), c.buffers.gemm2_out.data(), false, false);
  if (!second.ok()) return second.status();
  a->overlap = Sm90Overlap::kFirst;
  second->overlap = Sm90Overlap::kSecond;
  a->run_gemm = second->run_gemm = false;
  Sm90SetupJob jobs[2];
  a->setup_job = &jobs[0];
  second->setup_job = &jobs[1];
  MOEKIT_RETURN_IF_ERROR(launch_sm90_grouped_gemm(*a, stream_of(c)));
  MOEKIT_RETURN_IF_ERROR(launch_sm90_grouped_gemm(*second, stream_of(c)));
  MOEKIT_RETURN_IF_ERROR(launch_sm90_setups(jobs, 2, /*pdl=*/true, stream_of(c)));
  a->setup_job = nullptr;
  a->run_gemm = true;
  a->run_setup = false;
  return launch_sm90_grouped_gemm(*a, stream_of(c));
#else
  (void)c, (void)g, (void)d, (void)gated;
  return Status::Unsupported(std::string("gemm tile ") + gemm_tile_name(g.tile) + ": this build has no sm_90a kernels (MOEKIT_CUDA_ARCHS without 90a)");
#endif
}

GemmArgs gemm_args(const StageContext& c, bool first) {
  const auto& p = c.problem;
  const auto& w = c.weights;
  GemmArgs a;
  a.type = elem_of(p.activation_dtype);
  a.a = first ? c.buffers.gemm1_in.data() : c.buffers.gemm2_in.data();
  a.b = first ? w.w13.data() : w.w2.data();
  const TensorView& bias = first ? w.w13_bias : w.w2_bias;
  a.bias = bias.data();
  a.bias_type = elem_of(bias.dtype());
  a.expert_offsets = ptr<const int64_t>(c.buffers.expert_offsets);
  a.local_experts = p.local_experts();
  a.max_rows = max_rows(c);
  a.n = gemm_n(p, first);
  a.k = gemm_k(p, first);
  a.tile = tile_for(c, first);
  a.split = split_for(c, first);
  a.clusters = cluster_split_available(device_compute_capability());
  a.sm_count = device_sm_count();
  // gemm1 always follows the expand step (plan.cpp) and gemm2 follows gemm1 or the activation: the
  // offsets come from the maps, two or more launches back, which PDL's ordering makes safe to read early.
  a.weights_before_wait = true;
  a.activation = static_cast<int>(p.activation.kind);
  a.gated = activation_is_gated(p.activation.kind);
  a.interleaved = p.gate_up_layout == GateUpLayout::kInterleaved;
  a.alpha = p.activation.alpha;
  a.limit = p.activation.limit;
  return a;
}

// gemm1 or gemm2 into its rows (gemm1_out / gemm2_out), on whichever kernel the plan's tile names:
// float32 rows with the bias from the mma.sync and stream tiles; rows in the activation dtype without
// the bias from the sm_90a kernel (rows_are_sm90 below), which the activation and finalize kernels
// then read and complete.
Status gemm_rows_stage(const StageContext& c, bool first) {
  GemmArgs a = gemm_args(c, first);
  void* rows = first ? c.buffers.gemm1_out.data() : c.buffers.gemm2_out.data();
  if (is_sm90_tile(a.tile)) return sm90_gemm(c, a, rows, first);
  a.epilogue = Epilogue::kStoreF32;
  a.out_f32 = static_cast<float*>(rows);
  return launch_grouped_gemm(a, stream_of(c));
}

// Whether gemm1's (first) or gemm2's rows come from the sm_90a kernel: 16-bit, without the bias.
bool rows_are_sm90(const StageContext& c, bool first) { return is_sm90_tile(tile_for(c, first)); }

// The bias the activation (first) or finalize kernel adds to the sm_90a kernel's rows, which come
// without it: gemm1's or gemm2's, with the expert offsets that place each row (none if no bias).
ExpertBias sm90_bias(const StageContext& c, bool first) {
  const TensorView& bias = first ? c.weights.w13_bias : c.weights.w2_bias;
  ExpertBias b;
  if (!bias.defined()) return b;
  b.data = bias.data();
  b.type = elem_of(bias.dtype());
  b.expert_offsets = ptr<const int64_t>(c.buffers.expert_offsets);
  b.experts = static_cast<int>(c.problem.local_experts());
  return b;
}

Status gemm1_stage(const StageContext& c) { return gemm_rows_stage(c, true); }
Status gemm2_stage(const StageContext& c) { return gemm_rows_stage(c, false); }

Status activation_stage(const StageContext& c);

Status gemm1_activation_stage(const StageContext& c) {
  GemmArgs a = gemm_args(c, true);
  if (is_sm90_tile(a.tile)) {
    // Interleaved gate/up rows: each thread's accumulators hold a gate and its up, so the epilogue
    // activates them (sm90_gated_epilogue.cuh). Concatenated ones lie a tile apart: the two stages.
    if (a.gated && a.interleaved) return sm90_gemm(c, a, c.buffers.gemm2_in.data(), /*first=*/true, /*gated=*/true);
    MOEKIT_RETURN_IF_ERROR(gemm1_stage(c));
    return activation_stage(c);
  }
  a.epilogue = Epilogue::kActivation;
  a.out = c.buffers.gemm2_in.data();
  return launch_grouped_gemm(a, stream_of(c));
}

Status activation_stage(const StageContext& c) {
  const auto& p = c.problem;
  ActivationArgs a;
  a.in = c.buffers.gemm1_out.data();
  a.out = c.buffers.gemm2_in.data();
  a.type = elem_of(p.activation_dtype);
  a.total_rows = total_rows(c);
  a.max_rows = max_rows(c);
  a.inter = p.intermediate;
  a.activation = static_cast<int>(p.activation.kind);
  a.interleaved = p.gate_up_layout == GateUpLayout::kInterleaved;
  a.alpha = p.activation.alpha;
  a.limit = p.activation.limit;
  if (rows_are_sm90(c, true)) {  // 16-bit rows without the bias
    a.in_type = a.type;
    a.bias = sm90_bias(c, true);
  }
  return launch_activation(a, stream_of(c));
}

// ---- finalize --------------------------------------------------------------------------------------
// Masked applies neither routing weights nor routed_scaling_factor (the dispatcher's combine does);
// weight-on-input applied the weight before gemm1.
bool uses_weights(const MoeProblem& p) { return p.input_format != InputFormat::kMasked && !p.apply_router_weight_on_input; }
float scale_of(const MoeProblem& p) { return p.input_format == InputFormat::kMasked ? 1.0f : p.routing.routed_scaling_factor; }

Status finalize_stage(const StageContext& c) {
  const auto& p = c.problem;
  FinalizeArgs a;
  a.rows = c.buffers.gemm2_out.data();
  a.out = c.outputs.out.data();
  a.type = elem_of(p.activation_dtype);
  a.dest_offsets = ptr<const int64_t>(c.buffers.dest_offsets);
  a.dest_rows = ptr<const int64_t>(c.buffers.dest_rows);
  a.row_weight = ptr<const float>(c.buffers.row_weight);
  a.out_rows = out_rows(c);
  a.hidden = p.hidden;
  a.scale = scale_of(p);
  a.use_weights = uses_weights(p);
  a.skip_empty = p.input_format == InputFormat::kMasked;
  if (rows_are_sm90(c, false)) {  // 16-bit rows without the bias
    a.rows_type = a.type;
    a.bias = sm90_bias(c, false);
  }
  return launch_finalize(a, stream_of(c));
}

// gemm2 with finalize in its epilogue: one destination per row (Masked, no_combine) is a scaled
// store; a combined output is an atomic add into a zeroed float32 accumulator, converted at the end.
Status gemm2_finalize_stage(const StageContext& c) {
  const auto& p = c.problem;
  GemmArgs a = gemm_args(c, false);
  if (is_sm90_tile(a.tile)) {  // no finalize epilogue: gemm2's rows, then the fixed-order finalize
    MOEKIT_RETURN_IF_ERROR(gemm2_stage(c));
    return finalize_stage(c);
  }
  auto s = carve(c);
  if (!s.ok()) return s.status();
  a.row_dest = s->row_dest;
  a.row_weight = uses_weights(p) ? ptr<const float>(c.buffers.row_weight) : nullptr;
  a.scale = scale_of(p);
  const auto st = static_cast<cudaStream_t>(stream_of(c));
  const int64_t count = out_rows(c) * p.hidden;
  if (!combines(p)) {
    // no_combine rows of remote experts are zeros; Masked rows past masked_m stay untouched.
    if (p.no_combine) MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c.outputs.out.data(), 0, c.outputs.out.storage_bytes(), st));
    a.epilogue = Epilogue::kStore;
    a.out = c.outputs.out.data();
    return launch_grouped_gemm(a, stream_of(c));
  }
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(s->accumulator, 0, static_cast<size_t>(count) * 4, st));
  a.epilogue = Epilogue::kAtomicAdd;
  a.accumulator = s->accumulator;
  MOEKIT_RETURN_IF_ERROR(launch_grouped_gemm(a, stream_of(c)));
  return launch_convert(s->accumulator, c.outputs.out.data(), elem_of(p.activation_dtype), count, stream_of(c));
}

// The arguments of both decode kernels; the scratch is the decode region.
DecodeLayerArgs decode_args(const StageContext& c, const Scratch& s) {
  const auto& p = c.problem;
  const auto& w = c.weights;
  DecodeLayerArgs a;
  a.type = elem_of(p.activation_dtype);
  a.route = route_args(c);
  a.route_on_device = p.input_format == InputFormat::kStandard;
  a.topk_ids = ptr<const int32_t>(c.buffers.topk_ids);
  a.topk_weights = ptr<const float>(c.buffers.topk_weights);
  a.expert_map = ptr<const int32_t>(w.expert_map);
  a.local_begin = p.local_expert_begin;
  a.local_experts = p.local_experts();
  a.hidden = c.inputs.hidden.data();
  a.w13 = w.w13.data();
  a.w2 = w.w2.data();
  a.w13_bias = w.w13_bias.data();
  a.w13_bias_type = elem_of(w.w13_bias.dtype());
  a.w2_bias = w.w2_bias.data();
  a.w2_bias_type = elem_of(w.w2_bias.dtype());
  a.hidden_size = p.hidden;
  a.inter = p.intermediate;
  a.activation = static_cast<int>(p.activation.kind);
  a.gated = activation_is_gated(p.activation.kind);
  a.interleaved = p.gate_up_layout == GateUpLayout::kInterleaved;
  a.alpha = p.activation.alpha;
  a.limit = p.activation.limit;
  a.scale = p.routing.routed_scaling_factor;
  a.no_combine = p.no_combine;
  a.out = c.outputs.out.data();
  a.act = c.buffers.gemm2_in.data();
  a.scratch = s.decode;
  a.scratch_bytes = s.decode_bytes;
  return a;
}

// The whole layer for a few tokens in two launches (decode_layer.cuh).
Status decode_layer_stage(const StageContext& c) {
  auto s = carve(c);
  if (!s.ok()) return s.status();
  DecodeLayerArgs a = decode_args(c, *s);
  const std::string_view split = knob_value(c, "decode.split", "");
  a.split = split.empty() ? decode_default_split(c.problem.hidden, c.problem.intermediate) : std::stoi(std::string(split));
  return launch_decode_layer(a, stream_of(c));
}

// The whole layer for one token: a reset launch and one GEMV kernel (decode_token.cu).
Status decode_token_stage(const StageContext& c) {
  auto s = carve(c);
  if (!s.ok()) return s.status();
  DecodeLayerArgs a = decode_args(c, *s);
  a.sm_count = device_sm_count();
  return launch_decode_token(a, stream_of(c));
}

// The whole layer for 2..kDecodeTokensMax tokens: a reset launch and one GEMV kernel (decode_tokens.cu).
Status decode_tokens_stage(const StageContext& c) {
  auto s = carve(c);
  if (!s.ok()) return s.status();
  DecodeLayerArgs a = decode_args(c, *s);
  a.sm_count = device_sm_count();
  return launch_decode_tokens(a, stream_of(c));
}

// ---- checks ----------------------------------------------------------------------------------------
Status check_aligned(std::string_view name, const TensorView& t, size_t bytes) {
  if (t.data() != nullptr && reinterpret_cast<uintptr_t>(t.data()) % bytes != 0)
    return Status::InvalidArgument(fmt::format("{}: address {} is not {}-byte aligned, which the CUDA kernels' vector loads need", name,
                                               t.data(), bytes));
  return Status::Ok();
}

Status validate_weights(const MoeProblem& p, const MoeWeights& w) {
  MOEKIT_RETURN_IF_ERROR(cpu::validate_weights_on(p, w, cpu::Residence::kCuda));
  MOEKIT_RETURN_IF_ERROR(check_aligned("w13", w.w13, 16));
  MOEKIT_RETURN_IF_ERROR(check_aligned("w2", w.w2, 16));
  if (w.expert_map.defined()) {
    // Read once here (prepare time may synchronize; run may not).
    std::vector<int32_t> map(static_cast<size_t>(p.num_experts));
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemcpy(map.data(), w.expert_map.data(), map.size() * 4, cudaMemcpyDeviceToHost));
    for (int g = 0; g < p.num_experts; ++g)
      if (map[g] < -1 || map[g] >= p.local_experts())
        return Status::InvalidArgument(fmt::format("expert_map[{}]={} is outside [-1, E_local={})", g, map[g], p.local_experts()));
  }
  return Status::Ok();
}

Status validate_io(const MoeProblem& p, const MoeInputs& in, const MoeOutputs& out) {
  MOEKIT_RETURN_IF_ERROR(cpu::validate_io_on(p, in, out, cpu::Residence::kCuda));
  MOEKIT_RETURN_IF_ERROR(check_aligned("hidden", in.hidden, 16));
  return check_aligned("out", out.out, 16);
}

}  // namespace

Status register_cuda_backend(Registry& r) {
  using F = InputFormat;
  const std::vector<F> all = {F::kStandard, F::kPreRouted, F::kMasked, F::kIndexed};
  const BackendKind cuda = BackendKind::kCuda;
  r.set_hooks(cuda, {.validate_weights = validate_weights,
                     .validate_io = validate_io,
                     .scratch_bytes = scratch_bytes,
                     .rows_dtype = DType::kF32,
                     .operands_in_activation_dtype = true});
  r.set_knob_space(cuda, knob_space);
  // The GEMV kernels first: where they and the decode layer take a problem (T <= 8), they are tried
  // first (the decode layer prefers the stages; FusionControls::whole_layer_impl picks it by name).
  MOEKIT_RETURN_IF_ERROR(r.add_fused_layer({"cuda.decode_token", cuda, kDecodeLayerFormats, decode_token_declines, decode_token_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_fused_layer({"cuda.decode_tokens", cuda, kDecodeLayerFormats, decode_tokens_declines, decode_tokens_stage,
                                            decode_tokens_prefers_stages}));
  MOEKIT_RETURN_IF_ERROR(r.add_fused_layer({"cuda.decode_layer", cuda, kDecodeLayerFormats, decode_layer_declines, decode_layer_stage, decode_layer_prefers_stages}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cuda.route", cuda, Stage::kRoute, Stage::kRoute, {F::kStandard}, route_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cuda.route_build_maps", cuda, Stage::kRoute, Stage::kBuildMaps, {F::kStandard}, route_build_maps_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cuda.build_maps", cuda, Stage::kBuildMaps, Stage::kBuildMaps, all, build_maps_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cuda.expand", cuda, Stage::kExpand, Stage::kExpand, all, expand_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cuda.gemm1", cuda, Stage::kGemm1, Stage::kGemm1, all, gemm1_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cuda.gemm1_activation", cuda, Stage::kGemm1, Stage::kActivation, all, gemm1_activation_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cuda.activation", cuda, Stage::kActivation, Stage::kActivation, all, activation_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cuda.gemm2", cuda, Stage::kGemm2, Stage::kGemm2, all, gemm2_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cuda.gemm2_finalize", cuda, Stage::kGemm2, Stage::kFinalize, all, gemm2_finalize_stage}));
  return r.add_stage({"cuda.finalize", cuda, Stage::kFinalize, Stage::kFinalize, all, finalize_stage});
}

}  // namespace moekit::cuda
