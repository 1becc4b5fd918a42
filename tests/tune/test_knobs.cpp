// The validity filter: the knob space (fusion knobs from the rules, the backend's knobs from the
// registry), check_choice, and the tuner's candidates, which must all pass the check the dispatcher
// applies to a table row.
#include <gtest/gtest.h>

#include <algorithm>

#include "cuda/moe/moe_launch.h"
#include "moekit/plan.h"
#include "moekit/presets.h"
#include "sm90_tiles_built.h"
#include "tune/tuner.h"

namespace moekit {
namespace {

const KnobSpec* find(const std::vector<KnobSpec>& space, std::string_view name) {
  auto it = std::find_if(space.begin(), space.end(), [&](const KnobSpec& k) { return k.name == name; });
  return it == space.end() ? nullptr : &*it;
}

MoeProblem qwen3() { return model_presets()[1].problem; }

TEST(Knobs, TheCpuBackendRegistersItsRowBlocks) {
  const DeviceTarget cpu = *DeviceTarget::named("cpu");
  const MoeProblem p = qwen3();
  const auto space = knob_space({p, 32, {}}, cpu);
  const KnobSpec* rb = find(space, "gemm1.row_block");
  ASSERT_NE(rb, nullptr);
  EXPECT_EQ(rb->values, (std::vector<std::string>{"4", "8", "16"}));
  EXPECT_EQ(rb->heuristic, "8");
  EXPECT_EQ(rb->stage, Stage::kGemm1);
  ASSERT_NE(find(space, "gemm2.row_block"), nullptr);
  // Fusion knobs: the rule's value first; "off" where it is on, "on" where it is off for cost.
  const KnobSpec* g2 = find(space, "fusion.gemm2_finalize");
  ASSERT_NE(g2, nullptr);
  EXPECT_EQ(g2->heuristic, "off");
  EXPECT_EQ(g2->values, (std::vector<std::string>{"off", "on"}));
  EXPECT_EQ(find(space, "fusion.gemm1_activation")->values, (std::vector<std::string>{"on", "off"}));
  // No whole-layer implementation accepts T=32: "on" is not legal.
  EXPECT_EQ(find(space, "fusion.whole_layer")->values, (std::vector<std::string>{"off"}));
  EXPECT_EQ(find(space, "fusion.whole_layer")->values, (std::vector<std::string>{"off"}));
  // A named GPU architecture: the generic fusion knobs, and the CUDA backend's tiles when this build
  // has it. Its heuristic for 32 tokens x 8 slots over 128 experts (256 routed rows, 2 per expert):
  // with the sm_90a kernels built, their 64 x 128 tile (more than kSm90MinRows routed rows);
  // without, the decode tile for gemm1 and, for gemm2's K = 768 over 128 x 32 tiles, m16n64k64.
  const auto gpu_space = knob_space({p, 32, {}}, *DeviceTarget::named("sm90"));
  if (!default_registry().has_backend(BackendKind::kCuda)) {
    for (const auto& k : gpu_space) EXPECT_TRUE(k.name.starts_with("fusion.")) << k.name;
    return;
  }
  const auto& tiles = find(gpu_space, "gemm1.tile")->values;
  const bool sm90_build = std::find(tiles.begin(), tiles.end(), "sm90_m128n256k64_c1x1") != tiles.end();
  for (const char* name : {"gemm1.tile", "gemm2.tile"}) {
    const KnobSpec* tile = find(gpu_space, name);
    ASSERT_NE(tile, nullptr) << name;
    const char* expected = sm90_build ? "sm90_m64n128k128_c1x1" : std::string(name) == "gemm1.tile" ? "stream_n8k128" : "m16n64k64";
    EXPECT_EQ(tile->heuristic, expected) << name;
    EXPECT_NE(std::find(tile->values.begin(), tile->values.end(), "m128n256k64"), tile->values.end()) << name;
  }
  // The knobs that exist only with the sm_90a kernels built, each GEMM's, with their values (empty:
  // not checked) and heuristic value: the stream tiles' K split (thread-block clusters); the order
  // in which the sm_90a kernels hand out tiles (claimed on the ping-pong tile while every expert fits
  // one M tile, decided on the device); the tail split of their cooperative tiles; the experts' tall
  // tails on the 192-row tile (off by default: docs/perf-notes.md step 41).
  struct Sm90Knob {
    const char* gemm1;
    const char* gemm2;
    std::vector<std::string> values;
    std::string heuristic = "auto";
  };
  for (const Sm90Knob& knob : {Sm90Knob{"gemm1.split", "gemm2.split", {}},
                               Sm90Knob{"gemm1.order", "gemm2.order", {"auto", "fixed", "claimed"}},
                               Sm90Knob{"gemm1.tail", "gemm2.tail", {"auto", "off"}},
                               Sm90Knob{"gemm1.tall_tail", "gemm2.tall_tail", {"off", "on", "wide"}, "off"}})
    for (const char* name : {knob.gemm1, knob.gemm2}) {
      const KnobSpec* k = find(gpu_space, name);
      if (!sm90_build) {
        EXPECT_EQ(k, nullptr) << name;
        continue;
      }
      ASSERT_NE(k, nullptr) << name;
      if (!knob.values.empty()) EXPECT_EQ(k->values, knob.values) << name;
      EXPECT_EQ(k->heuristic, knob.heuristic) << name;
    }
  // gemm2's weights under gemm1's tail, a knob of the pair (one, not one a GEMM).
  const KnobSpec* overlap = find(gpu_space, "gemm2.overlap");
  EXPECT_EQ(find(gpu_space, "gemm1.overlap"), nullptr);
  if (sm90_build) {
    ASSERT_NE(overlap, nullptr);
    EXPECT_EQ(overlap->values, (std::vector<std::string>{"auto", "on", "off"}));
    EXPECT_EQ(overlap->heuristic, "auto");
  } else {
    EXPECT_EQ(overlap, nullptr);
  }
  for (const auto& k : gpu_space)
    EXPECT_TRUE(k.name.starts_with("fusion.") || k.name.ends_with(".tile") || k.name.ends_with(".split") ||
                k.name.ends_with(".order") || k.name.ends_with(".tail") || k.name.ends_with(".tall_tail") ||
                k.name == "gemm2.overlap")
        << k.name;
  // sm_80 has no clusters: no stream-tile split knob. The decode layer's gemm2 split (its partial
  // sums meet in its combine, no cluster) is there up to 32 tokens, with the splits that leave no
  // rank without k tiles (I = 768: 6 k tiles of 128, so 1 and 2).
  const auto sm80_space = knob_space({p, 32, {}}, *DeviceTarget::named("sm80"));
  for (const auto& k : sm80_space) {
    EXPECT_FALSE(k.name.ends_with(".split") && k.name != "decode.split") << k.name;
    EXPECT_FALSE(k.name.ends_with(".order") || k.name.ends_with(".tail") || k.name.ends_with(".overlap")) << k.name;  // the sm_90a kernels' knobs
  }
  const KnobSpec* decode = find(sm80_space, "decode.split");
  ASSERT_NE(decode, nullptr);
  EXPECT_EQ(decode->values, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(decode->heuristic, "1");
  EXPECT_EQ(find(knob_space({p, 33, {}}, *DeviceTarget::named("sm80")), "decode.split"), nullptr);
  EXPECT_EQ(find(gpu_space, "fusion.whole_layer")->heuristic, "off");  // preferred off for cost, forceable
  EXPECT_EQ(find(gpu_space, "fusion.whole_layer")->values, (std::vector<std::string>{"off", "on"}));
  // At T = 1 the one-token kernel takes the layer by default ("off" runs the stages), and the decode
  // layer's split, which it would not read, is not a knob.
  const auto one = knob_space({p, 1, {}}, *DeviceTarget::named("sm80"));
  EXPECT_EQ(find(one, "decode.split"), nullptr);
  EXPECT_EQ(find(one, "fusion.whole_layer")->heuristic, "on");
  EXPECT_EQ(find(one, "fusion.whole_layer")->values, (std::vector<std::string>{"on", "off"}));
}

// The knob space on sm_90 of a public preset, unquantized, with W13 in `layout` (and intermediate
// size `inter` where it is not 0), at T tokens.
std::vector<KnobSpec> sm90_knobs(const char* preset, int64_t tokens, GateUpLayout layout, int64_t inter = 0) {
  MoeProblem p = find_preset(preset)->problem;
  p.quant = QuantScheme::kNone;
  p.gate_up_layout = layout;
  if (inter > 0) p.intermediate = inter;
  return knob_space({p, tokens, {}}, *DeviceTarget::named("sm90"));
}

// The heuristic's gemm1 and gemm2 tiles on sm_90 for a public preset (unquantized) at T tokens.
std::pair<std::string, std::string> sm90_heuristic_tiles(const char* preset, int64_t tokens) {
  MoeProblem p = find_preset(preset)->problem;
  p.quant = QuantScheme::kNone;
  const auto space = knob_space({p, tokens, {}}, *DeviceTarget::named("sm90"));
  return {find(space, "gemm1.tile")->heuristic, find(space, "gemm2.tile")->heuristic};
}

// On sm_90 the heuristic takes the sm_90a kernel from 64 routed rows (kSm90MinRows) for large experts
// (N x K >= kSm90LargeExpert), above 64 for the others: DeepSeek-V3 T=8 (64 rows; N x K = 29M and
// 15M) and Mixtral T=32 (64 rows; 117M and 59M) take it, Mixtral T=16 (32 rows) does not; at GPT-OSS
// T=16 (64 rows) gemm1 (17M) takes it, gemm2 (8.3M) does not; Qwen3 T=8 (64 rows; 3.1M, 1.6M) not.
// (At these few rows an expected expert the large ones run the tile in its 1 x 2 cluster:
// LargeExpertsRunThe64x128TileInItsClusterAtAFewRows.)
TEST(Knobs, LargeExpertsTakeTheSm90KernelFrom64Rows) {
  if (!sm90_tiles_built()) GTEST_SKIP() << "no CUDA backend with the sm_90a kernels in this build";
  const auto tiles = sm90_heuristic_tiles;
  const std::string sm90_tile = "sm90_m64n128k128_c1x2";
  EXPECT_EQ(tiles("deepseek-v3", 8), std::make_pair(sm90_tile, sm90_tile));
  EXPECT_EQ(tiles("mixtral-8x7b", 32), std::make_pair(sm90_tile, sm90_tile));
  EXPECT_NE(tiles("mixtral-8x7b", 16).first, sm90_tile);
  EXPECT_NE(tiles("deepseek-v3", 4).first, sm90_tile);
  const auto gpt_oss = tiles("gpt-oss-120b", 16);
  EXPECT_EQ(gpt_oss.first, sm90_tile);
  EXPECT_NE(gpt_oss.second, sm90_tile);
  const auto qwen = tiles("qwen3-30b-a3b", 8);
  EXPECT_NE(qwen.first, sm90_tile);
  EXPECT_NE(qwen.second, sm90_tile);
}

// The 64 x 128 tile's 1 x 2 cluster (moe_launch.h kSm90LargeExpertClusterMaxRows,
// kSm90HugeExpertClusterMaxRows; docs/perf-notes.md step 38, on an H200): a GEMM whose expert weight
// holds 12M elements or more takes it up to 8 rows an expected expert, 48M or more up to 48 rows.
// DeepSeek-V3 (29M and 15M; 128 experts reachable) T = 8, 64, 96, 128 (1, 4, 6, 8 rows) both GEMMs,
// T = 136 and 256 (8.5, 16 rows) neither; GPT-OSS-120B T = 64, 192, 256 (2, 6, 8 rows) gemm1 (17M) but
// never gemm2 (8.3M), T=288 (9 rows) neither; Mixtral (117M and 59M) T = 32, 128, 192 (8, 32, 48
// rows) both, T = 196 (49) neither;
// Qwen3-30B-A3B (3.1M and 1.6M) never: T = 16, 64, 1024.
TEST(Knobs, LargeExpertsRunThe64x128TileInItsClusterAtAFewRows) {
  if (!sm90_tiles_built()) GTEST_SKIP() << "no CUDA backend with the sm_90a kernels in this build";
  const auto tiles = sm90_heuristic_tiles;
  const std::string cluster = "sm90_m64n128k128_c1x2", single = "sm90_m64n128k128_c1x1";
  for (int64_t t : {8, 64, 96, 128}) EXPECT_EQ(tiles("deepseek-v3", t), std::make_pair(cluster, cluster)) << t;
  for (int64_t t : {136, 256}) EXPECT_EQ(tiles("deepseek-v3", t), std::make_pair(single, single)) << t;
  for (int64_t t : {64, 192, 256}) EXPECT_EQ(tiles("gpt-oss-120b", t), std::make_pair(cluster, single)) << t;
  EXPECT_EQ(tiles("gpt-oss-120b", 288), std::make_pair(single, single));
  for (int64_t t : {32, 128, 192}) EXPECT_EQ(tiles("mixtral-8x7b", t), std::make_pair(cluster, cluster)) << t;
  EXPECT_EQ(tiles("mixtral-8x7b", 196), std::make_pair(single, single));
  for (int64_t t : {16, 64, 1024}) EXPECT_EQ(tiles("qwen3-30b-a3b", t), std::make_pair(single, single)) << t;
}

// Above 48 and up to 64 rows per expected expert, GEMMs whose expert weight is below 12M elements keep
// the 64 x 128 tile (moe_launch.h, kSm90MidTileMaxRows): Qwen3 T=1024 (64 rows; 3.1M and 1.6M) both,
// GPT-OSS T=2048 (64 rows) gemm2 (8.3M) but not gemm1 (17M); at 128 rows (Qwen3 T=2048) 128 x 256;
// DeepSeek-V3 T=1024 (29M and 15M) and Mixtral T=256 (117M and 59M) 128 x 256. (From 33 to 48 rows
// every expert keeps it: The64x128TileRunsUpTo48Rows.)
TEST(Knobs, SmallExpertsAt49To64RowsKeepThe64x128Tile) {
  if (!sm90_tiles_built()) GTEST_SKIP() << "no CUDA backend with the sm_90a kernels in this build";
  const auto tiles = sm90_heuristic_tiles;
  const std::string mid = "sm90_m64n128k128_c1x1", large = "sm90_m128n256k64_c1x1";
  EXPECT_EQ(tiles("qwen3-30b-a3b", 1024), std::make_pair(mid, mid));
  EXPECT_EQ(tiles("qwen3-30b-a3b", 600), std::make_pair(mid, mid));
  EXPECT_EQ(tiles("qwen3-30b-a3b", 2048), std::make_pair(large, large));
  EXPECT_EQ(tiles("gpt-oss-120b", 2048), std::make_pair(large, mid));
  EXPECT_EQ(tiles("deepseek-v3", 1024), std::make_pair(large, large));
  EXPECT_EQ(tiles("mixtral-8x7b", 256), std::make_pair(large, large));
}

// Up to 48 rows per expected expert every expert takes the 64 x 128 tile (moe_launch.h,
// docs/perf-notes.md steps 24 and 34), without a cluster, where the automatic tile order can claim
// tiles, except the large experts at a few rows and Mixtral's (in its 1 x 2 cluster:
// LargeExpertsRunThe64x128TileInItsClusterAtAFewRows): DeepSeek-V3 at T = 256, 300, 512, 768 (16
// to 48 rows of 128 expected experts), Qwen3 at T = 256, 512, GPT-OSS T = 1024, 1536 (32, 48 rows) both GEMMs
// without, Mixtral at T = 64, 144, 192 (16, 36, 48 rows) in the cluster. One row more
// and the large experts (12M elements or more) take 128 x 256: DeepSeek-V3 T=784 (49 rows) both,
// GPT-OSS T=1568 (49) gemm1; Mixtral's (48M or more) above 63 rows (T=253), up to it they keep
// 64 x 128 (The64x128TileRunsUpTo63RowsForMixtralSizedExperts). The 1 x 2 cluster is a value of the knob.
TEST(Knobs, The64x128TileRunsUpTo48Rows) {
  if (!sm90_tiles_built()) GTEST_SKIP() << "no CUDA backend with the sm_90a kernels in this build";
  const auto tiles = sm90_heuristic_tiles;
  const std::string single = "sm90_m64n128k128_c1x1", cluster = "sm90_m64n128k128_c1x2", large = "sm90_m128n256k64_c1x1";
  for (int64_t t : {256, 300, 512, 768}) EXPECT_EQ(tiles("deepseek-v3", t), std::make_pair(single, single)) << t;
  for (int64_t t : {256, 512}) EXPECT_EQ(tiles("qwen3-30b-a3b", t), std::make_pair(single, single)) << t;
  for (int64_t t : {64, 144, 192}) EXPECT_EQ(tiles("mixtral-8x7b", t), std::make_pair(cluster, cluster)) << t;
  for (int64_t t : {1024, 1536}) EXPECT_EQ(tiles("gpt-oss-120b", t), std::make_pair(single, single)) << t;
  EXPECT_EQ(tiles("deepseek-v3", 784), std::make_pair(large, large));
  EXPECT_EQ(tiles("gpt-oss-120b", 1568), std::make_pair(large, single));
  MoeProblem p = find_preset("qwen3-30b-a3b")->problem;
  p.quant = QuantScheme::kNone;
  const auto space = knob_space({p, 256, {}}, *DeviceTarget::named("sm90"));
  const auto& values = find(space, "gemm1.tile")->values;
  EXPECT_NE(std::find(values.begin(), values.end(), "sm90_m64n128k128_c1x2"), values.end());
}

// Experts of 48M elements or more (Mixtral's: 117M and 59M) keep the 64 x 128 tile up to 63 rows an
// expected expert (moe_launch.h kSm90HugeExpertSmallTileMaxRows, docs/perf-notes.md step 35 a, d):
// Mixtral T = 196, 224, 252 (49, 56, 63 rows) both GEMMs; T = 253 (63.25) and 256 (64) 128 x 256. The
// same rows leave DeepSeek-V3 (29M and 15M) on 128 x 256: T = 896 (56 rows).
TEST(Knobs, The64x128TileRunsUpTo63RowsForMixtralSizedExperts) {
  if (!sm90_tiles_built()) GTEST_SKIP() << "no CUDA backend with the sm_90a kernels in this build";
  const auto tiles = sm90_heuristic_tiles;
  const std::string single = "sm90_m64n128k128_c1x1", large = "sm90_m128n256k64_c1x1";
  for (int64_t t : {196, 224, 252}) EXPECT_EQ(tiles("mixtral-8x7b", t), std::make_pair(single, single)) << t;
  for (int64_t t : {253, 256}) EXPECT_EQ(tiles("mixtral-8x7b", t), std::make_pair(large, large)) << t;
  EXPECT_EQ(tiles("deepseek-v3", 896), std::make_pair(large, large));
}

// The heuristic's windows for the 192 x 128 tile (moe_launch.h kSm90TallTileMinRows etc.,
// docs/perf-notes.md step 37), in rows an expected expert: gemm1 with the gated epilogue (a gated
// activation, gate/up rows interleaved) from 136 to 176; gemm2 from 144 to 168 whatever the layout;
// neither under DeepSeek-V3's routing (it concentrates the rows; the tile stays a value of its
// knobs), nor gemm1 with concatenated gate/up rows (no gated epilogue). Since step 46 only experts under 6M elements (Qwen3-30B-A3B's) take it there; larger
// ones (GPT-OSS-120B's, Mixtral-8x7B's) take 128 x 256 with wide tall tails (the next test). Each end
// is checked on both sides.
TEST(Knobs, TheHeuristicTakesThe192RowTileInItsWindows) {
  if (!sm90_tiles_built()) GTEST_SKIP() << "no CUDA backend with the sm_90a kernels in this build";
  const std::string tall = "sm90_m192n128k64_c1x1", large = "sm90_m128n256k64_c1x1";
  const auto inter = GateUpLayout::kInterleaved;
  struct Point {  // the comments give the rows an expected expert
    const char* preset;
    int64_t tokens;
    bool gemm1_tall, gemm2_tall;
  };
  const Point points[] = {
      {"qwen3-30b-a3b", 2048, false, false},  // 128
      {"qwen3-30b-a3b", 2160, false, false},  // 135
      {"qwen3-30b-a3b", 2176, true, false},   // 136
      {"qwen3-30b-a3b", 2288, true, false},   // 143
      {"qwen3-30b-a3b", 2304, true, true},    // 144
      {"qwen3-30b-a3b", 2688, true, true},    // 168
      {"qwen3-30b-a3b", 2704, true, false},   // 169
      {"qwen3-30b-a3b", 2816, true, false},   // 176
      {"qwen3-30b-a3b", 2832, false, false},  // 177
      {"gpt-oss-120b", 4096, false, false},   // 128
      {"gpt-oss-120b", 4352, false, false},   // 136: in gemm1's window, experts of 16.6M elements
      {"gpt-oss-120b", 5120, false, false},   // 160: in both windows
      {"gpt-oss-120b", 5632, false, false},   // 176
      {"mixtral-8x7b", 560, false, false},    // 140
      {"mixtral-8x7b", 576, false, false},    // 144: in both windows, experts of 117M and 59M elements
      {"mixtral-8x7b", 672, false, false},    // 168
      {"mixtral-8x7b", 688, false, false},    // 172
      {"deepseek-v3", 2048, false, false},
      {"deepseek-v3", 2560, false, false},
  };
  for (const Point& pt : points) {
    const auto space = sm90_knobs(pt.preset, pt.tokens, inter);
    EXPECT_EQ(find(space, "gemm1.tile")->heuristic, pt.gemm1_tall ? tall : large) << pt.preset << " T=" << pt.tokens;
    EXPECT_EQ(find(space, "gemm2.tile")->heuristic, pt.gemm2_tall ? tall : large) << pt.preset << " T=" << pt.tokens;
  }
  const auto deepseek = sm90_knobs("deepseek-v3", 2048, inter);  // kept: find() points into it
  const auto& deepseek_values = find(deepseek, "gemm1.tile")->values;
  EXPECT_NE(std::find(deepseek_values.begin(), deepseek_values.end(), tall), deepseek_values.end());
  const auto concatenated = sm90_knobs("qwen3-30b-a3b", 2560, GateUpLayout::kConcatenated);
  EXPECT_EQ(find(concatenated, "gemm1.tile")->heuristic, large);
  EXPECT_EQ(find(concatenated, "gemm2.tile")->heuristic, tall);
}

// The heuristic's tall tails (moe_launch.h kSm90TallTailMinRows etc., docs/perf-notes.md steps 42,
// 43, 46, 47): a GEMM on the 128 x 256 tile runs in parts, its tails on the 192 x 256 tile (`wide`),
// from 112 to 256 rows an expected expert when its expert weight holds 6M to 48M elements (GPT-OSS-120B's
// 8.3M and 16.6M, DeepSeek-V3's 14.7M and 29.4M), not for Qwen3-30B-A3B's (1.6M, 3.1M); Mixtral-8x7B's
// (59M, 117M) in windows of their own, gemm1 124-184 rows in either layout, gemm2 136-172. Each end
// of the rows windows is checked on both sides.
TEST(Knobs, TheHeuristicRunsTallTailsAt112To256RowsAndMixtralsInWindowsOfTheirOwn) {
  if (!sm90_tiles_built()) GTEST_SKIP() << "no CUDA backend with the sm_90a kernels in this build";
  struct Point {  // the comments give the rows an expected expert
    const char* preset;
    int64_t tokens;
    bool gemm1, gemm2;
    int64_t inter = 0;
  };
  const Point points[] = {
      {"gpt-oss-120b", 3568, false, false},  // 111.5
      {"gpt-oss-120b", 3584, true, true},    // 112
      {"gpt-oss-120b", 4096, true, true},    // 128
      {"gpt-oss-120b", 4352, true, true},    // 136: gemm1 in the 192-row tile's window
      {"gpt-oss-120b", 4608, true, true},    // 144: both in its windows
      {"gpt-oss-120b", 5664, true, true},    // 177
      {"gpt-oss-120b", 8192, true, true},    // 256
      {"gpt-oss-120b", 8224, false, false},  // 257
      {"gpt-oss-120b", 4096, true, false, 1152},  // I=1152: gemm1's expert 6.6M elements, gemm2's 3.3M
      {"deepseek-v3", 2048, true, true},     // 128 (DeepSeek-V3's routing: half the experts expected)
      {"deepseek-v3", 4096, true, true},     // 256
      {"deepseek-v3", 8192, false, false},   // 512
      {"qwen3-30b-a3b", 2048, false, false},  // 128, experts of 3.1M and 1.6M elements
      {"mixtral-8x7b", 492, false, false},    // 123, experts of 117M and 59M elements
      {"mixtral-8x7b", 496, true, false},     // 124: gemm1's window
      {"mixtral-8x7b", 540, true, false},     // 135
      {"mixtral-8x7b", 544, true, true},      // 136: both windows
      {"mixtral-8x7b", 576, true, true},      // 144
      {"mixtral-8x7b", 688, true, true},      // 172
      {"mixtral-8x7b", 692, true, false},     // 173
      {"mixtral-8x7b", 720, true, false},     // 180
      {"mixtral-8x7b", 736, true, false},     // 184
      {"mixtral-8x7b", 740, false, false},    // 185
      {"mixtral-8x7b", 1024, false, false},   // 256
      {"qwen3-30b-a3b", 2560, false, false},  // 160: its experts keep the 192 x 128 tile
  };
  // Both layouts: the rule is the same with concatenated W13 (gemm1 on the plain epilogue, then the
  // activation kernel); Mixtral's gemm1 takes gemm1's window in either (docs/perf-notes.md step 47 e).
  for (const Point& pt : points) {
    for (GateUpLayout layout : {GateUpLayout::kInterleaved, GateUpLayout::kConcatenated}) {
      const auto space = sm90_knobs(pt.preset, pt.tokens, layout, pt.inter);
      const char* name = layout == GateUpLayout::kInterleaved ? "interleaved" : "concatenated";
      EXPECT_EQ(find(space, "gemm1.tall_tail")->heuristic, pt.gemm1 ? "wide" : "off") << pt.preset << " T=" << pt.tokens << " I=" << pt.inter << " " << name;
      EXPECT_EQ(find(space, "gemm2.tall_tail")->heuristic, pt.gemm2 ? "wide" : "off") << pt.preset << " T=" << pt.tokens << " I=" << pt.inter << " " << name;
    }
  }
}

// `moekit explain` prints each knob's reason (KnobSpec::why, KnobSetting::why): the numbers the rule
// read and the window or bound it crossed, so a reader can check a plan against docs/cuda-backend.md
// without reading the heuristic's code. Where a caller's choice replaces the heuristic's value, the
// setting says what the heuristic would have taken and why.
TEST(Knobs, TheHeuristicSaysWhyItTakesEachValue) {
  if (!sm90_tiles_built()) GTEST_SKIP() << "no CUDA backend with the sm_90a kernels in this build";
  auto has = [](const std::string& why, const char* part) { return why.find(part) != std::string::npos; };
  const auto mixtral = sm90_knobs("mixtral-8x7b", 736, GateUpLayout::kInterleaved);  // 184 rows an expected expert
  const std::string& tile = find(mixtral, "gemm1.tile")->why;
  EXPECT_TRUE(has(tile, "1472 routed rows over 8 expected experts = 184.0 rows")) << tile;
  EXPECT_TRUE(has(tile, "the 128 x 256 tile")) << tile;
  const std::string& tail = find(mixtral, "gemm1.tall_tail")->why;
  EXPECT_TRUE(has(tail, "in gemm1's window") && has(tail, "124-184")) << tail;
  const std::string& tail2 = find(mixtral, "gemm2.tall_tail")->why;
  EXPECT_TRUE(has(tail2, "outside gemm2's window") && has(tail2, "136-172")) << tail2;
  const auto past = sm90_knobs("mixtral-8x7b", 740, GateUpLayout::kInterleaved);  // 185 rows
  EXPECT_TRUE(has(find(past, "gemm1.tall_tail")->why, "outside gemm1's window")) << find(past, "gemm1.tall_tail")->why;
  // DeepSeek-V3's routing: the rows are counted over half the experts, and the reason says so.
  const auto deepseek = sm90_knobs("deepseek-v3", 768, GateUpLayout::kConcatenated);
  const std::string& ds = find(deepseek, "gemm1.tile")->why;
  EXPECT_TRUE(has(ds, "over 128 expected experts") && has(ds, "half the 256 local ones")) << ds;
  // Every knob of the backend gives a reason, at every preset and a spread of T.
  for (const auto& preset : model_presets())
    for (int64_t T : {1, 8, 64, 256, 1024, 4096}) {
      MoeProblem p = preset.problem;
      p.quant = QuantScheme::kNone;
      for (const KnobSpec& k : knob_space({p, T, {}}, *DeviceTarget::named("sm90")))
        if (!k.name.starts_with("fusion.")) EXPECT_FALSE(k.why.empty()) << preset.name << " T=" << T << " " << k.name;
    }
  // A caller's value: the setting keeps the heuristic's value and reason beside it, and explain prints it.
  MoeProblem p = find_preset("mixtral-8x7b")->problem;
  p.quant = QuantScheme::kNone;
  PlanOptions off;
  off.choice = {{{"gemm1.tall_tail", "off"}}};
  const MoePlan plan = make_plan(p, 736, *DeviceTarget::named("sm90"), off);
  ASSERT_TRUE(plan.runnable) << plan_refusal(plan);
  for (const KnobSetting& k : plan.knobs) {
    if (k.name == "gemm1.tall_tail") {
      EXPECT_EQ(k.source, "caller");
      EXPECT_TRUE(k.why.starts_with("the heuristic would take wide: 184.0 rows")) << k.why;
    }
    if (k.name == "gemm1.tile") EXPECT_TRUE(has(k.why, "184.0 rows")) << k.why;  // the heuristic's own value: its reason
  }
  EXPECT_TRUE(has(plan_to_text(plan), "    why: the heuristic would take wide: ")) << plan_to_text(plan);
}

// The 192 x 128 tile has both epilogues (the gated one and the plain TMA store in 64-row subtiles),
// so it is a value of both GEMMs' tile knobs on Hopper whatever the layout and the fusions, and a plan
// whose gemm1 runs it unfused (fusion.gemm1_activation=off: a plain gemm1) is runnable.
TEST(Knobs, TheTallTileIsAValueOfBothGemmsOnHopper) {
  if (!sm90_tiles_built()) GTEST_SKIP() << "no CUDA backend with the sm_90a kernels in this build";
  const std::string tall = "sm90_m192n128k64_c1x1";
  const DeviceTarget sm90 = *DeviceTarget::named("sm90");
  for (GateUpLayout layout : {GateUpLayout::kInterleaved, GateUpLayout::kConcatenated}) {
    MoeProblem p = find_preset("qwen3-30b-a3b")->problem;
    p.quant = QuantScheme::kNone;
    p.gate_up_layout = layout;
    const auto space = knob_space({p, 2048, {}}, sm90);
    for (const char* knob : {"gemm1.tile", "gemm2.tile"}) {
      const auto& values = find(space, knob)->values;
      EXPECT_NE(std::find(values.begin(), values.end(), tall), values.end()) << knob;
    }
    EXPECT_TRUE(check_choice({p, 2048, {}}, sm90, {{{"gemm1.tile", tall}, {"gemm2.tile", tall}}}).ok());
  }
  MoeProblem p = find_preset("gpt-oss-120b")->problem;  // interleaved gate/up rows
  p.quant = QuantScheme::kNone;
  PlanOptions unfused;
  unfused.choice = {{{"gemm1.tile", tall}, {"fusion.gemm1_activation", "off"}}};
  const MoePlan plan = make_plan(p, 4096, sm90, unfused);
  EXPECT_TRUE(plan.runnable);
  EXPECT_FALSE(plan.fusion(Fusion::kGemm1Activation).decision.on);
  bool found = false;
  for (const KnobSetting& k : plan.knobs)
    if (k.name == "gemm1.tile") {
      found = true;
      EXPECT_EQ(k.value, tall);
    }
  EXPECT_TRUE(found);
}

// gemm2's first weight stages stream under gemm1's tail up to 64 rows an expected expert where gemm2's
// expert weight (H x I) is below 4M elements, 48 where below 12M, 32 otherwise (moe_launch.h,
// docs/perf-notes.md step 35 b, c): Qwen3 (1.6M) 64, GPT-OSS (8.3M) 48, DeepSeek-V3 (15M) and
// Mixtral (59M) 32.
TEST(Knobs, GemmTwoStreamsUnderGemmOneLongerForSmallerExperts) {
  using cuda::moe::sm90_overlap_max_rows_per_expert;
  const auto gemm2_weight = [](const char* preset) {
    const MoeProblem& p = find_preset(preset)->problem;
    return int64_t{p.hidden} * p.intermediate;
  };
  EXPECT_EQ(sm90_overlap_max_rows_per_expert(gemm2_weight("qwen3-30b-a3b")), 64);
  EXPECT_EQ(sm90_overlap_max_rows_per_expert(gemm2_weight("gpt-oss-120b")), 48);
  EXPECT_EQ(sm90_overlap_max_rows_per_expert(gemm2_weight("deepseek-v3")), 32);
  EXPECT_EQ(sm90_overlap_max_rows_per_expert(gemm2_weight("mixtral-8x7b")), 32);
}

TEST(Knobs, CheckChoiceRefusesWhatTheDispatcherMustNotRun) {
  const DeviceTarget cpu = *DeviceTarget::named("cpu");
  const MoeProblem p = qwen3();
  const PlanQuery q{p, 32, {}};
  EXPECT_TRUE(check_choice(q, cpu, {}).ok());
  EXPECT_TRUE(check_choice(q, cpu, {{{"gemm1.row_block", "16"}, {"fusion.gemm2_finalize", "on"}}}).ok());
  EXPECT_FALSE(check_choice(q, cpu, {{{"gemm1.row_block", "5"}}}).ok());
  EXPECT_FALSE(check_choice(q, cpu, {{{"gemm3.tile", "m64"}}}).ok());
  EXPECT_FALSE(check_choice(q, cpu, {{{"fusion.whole_layer", "on"}}}).ok());
  // A fusion that would be wrong cannot be chosen: dynamic per-tensor fp8 keeps the activation apart.
  MoeProblem fp8 = p;
  fp8.quant = QuantScheme::kFp8PerTensor;
  const Status s = check_choice({fp8, 32, {}}, cpu, {{{"fusion.gemm1_activation", "on"}}});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("legal: off"), std::string::npos) << s.message();
  // The plan refuses a caller's illegal choice, saying why, instead of running something else.
  PlanOptions o;
  o.choice = {{{"gemm1.row_block", "5"}}};
  const MoePlan plan = make_plan(p, 32, cpu, o);
  EXPECT_FALSE(plan.runnable);
  ASSERT_FALSE(plan.notes.empty());
  EXPECT_NE(plan.notes.back().find("gemm1.row_block=5 is not legal"), std::string::npos) << plan.notes.back();
}

TEST(Knobs, EveryTunerCandidatePassesTheCheck) {
  const DeviceTarget cpu = *DeviceTarget::named("cpu");
  for (const auto& preset : model_presets())
    for (int64_t T : {1, 4, 64}) {
      const PlanQuery q{preset.problem, T, {}};
      const auto space = knob_space(q, cpu);
      const auto cands = tune::stagewise_candidates(space);
      int expected = 1;
      for (const auto& k : space) expected += static_cast<int>(k.values.size()) - 1;
      EXPECT_EQ(static_cast<int>(cands.size()), expected);
      for (const auto& c : cands) EXPECT_TRUE(check_choice(q, cpu, c).ok()) << preset.name << " T=" << T << " " << c.to_string();
    }
}

// The heuristic's value of every knob is one of the knob's values, so a tuned row that keeps the
// heuristic's values (the tuner writes every knob) passes the dispatcher's check. Step 39's re-tune
// on the H200 wrote Mixtral T=8 with decode.split=3, the decode layer's default, which was not among
// the split's values (powers of two), and the dispatcher refused the row.
TEST(Knobs, EveryHeuristicValueIsOneOfTheKnobsValues) {
  for (const char* arch : {"cpu", "sm80", "sm90"}) {
    const DeviceTarget device = *DeviceTarget::named(arch);
    for (const auto& preset : model_presets())
      for (GateUpLayout layout : {GateUpLayout::kConcatenated, GateUpLayout::kInterleaved})
        for (int64_t T : {0, 1, 2, 3, 4, 5, 8, 9, 64, 77, 256, 1024, 4096}) {
          MoeProblem p = preset.problem;
          p.gate_up_layout = layout;
          const PlanQuery q{p, T, {}};
          KernelChoice heuristic;
          for (const auto& k : knob_space(q, device)) {
            EXPECT_NE(std::find(k.values.begin(), k.values.end(), k.heuristic), k.values.end())
                << arch << " " << preset.name << " T=" << T << " " << k.name << "=" << k.heuristic;
            heuristic.knobs[k.name] = k.heuristic;
          }
          EXPECT_TRUE(check_choice(q, device, heuristic).ok()) << arch << " " << preset.name << " T=" << T;
        }
  }
}

TEST(Knobs, ChoiceTextRoundTrips) {
  KernelChoice c{{{"b.x", "1"}, {"a.y", "on"}}};
  EXPECT_EQ(c.to_string(), "a.y=on;b.x=1");
  EXPECT_EQ(*KernelChoice::parse(c.to_string()), c);
  EXPECT_TRUE(KernelChoice::parse("")->knobs.empty());
  EXPECT_FALSE(KernelChoice::parse("a.y").ok());
  // Knobs separated by anything but ';' are refused at the parse, naming the separator.
  for (const char* text : {"a.y=on,b.x=1", "a.y=on b.x=1"}) {
    const auto parsed = KernelChoice::parse(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.status().message().find("separate knobs with ';'"), std::string::npos) << parsed.status().message();
  }
}

}  // namespace
}  // namespace moekit
