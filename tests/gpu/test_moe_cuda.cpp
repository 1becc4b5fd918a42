// The CUDA MoE backend's stage pipeline against the float64 oracle (tests/cpu/naive_moe.h) on fresh
// random layers at odd shapes, every input format and option, with the output poisoned (NaN) before
// each run; the tolerance is moe_case.h's. The whole-layer decode kernel (test_decode_layer_cuda.cpp)
// is off by default; the cases that target a stage kernel pin it off all the same.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/naive_moe.h"
#include "moe_case.h"
#include "moekit/gate_up_layout.h"
#include "moekit/layer_copy.h"
#include "moekit/random_layer.h"
#include "moekit/runner.h"

namespace moekit {
namespace {

TEST(MoeCuda, StandardSoftmaxAtOddTokenCounts) {
  MOEKIT_REQUIRE_GPU();
  for (int64_t T : {0, 1, 3, 77}) {
    Case c{"softmax E8 K2 T" + std::to_string(T), base_problem(8, 2, kH, kI), T};
    expect_within_tolerance(c, 100 + T);
  }
  // T = 1 and 3 on the stages too (the defaults there are the one-token and few-token kernels).
  for (int64_t T : {1, 3}) {
    Case c{"softmax E8 K2 T" + std::to_string(T) + ", whole_layer off", base_problem(8, 2, kH, kI), T};
    c.fusions.whole_layer = Switch::kOff;
    expect_within_tolerance(c, 100 + T);
  }
}

TEST(MoeCuda, RoutingMethodsAndWideExperts) {
  MOEKIT_REQUIRE_GPU();
  Case ds{"deepseek E64 K6 groups8/3 scale2.5 T77", base_problem(64, 6, kH, kI), 77};
  ds.problem.routing.method = RoutingMethod::kDeepSeekV3;
  ds.problem.routing.n_group = 8;
  ds.problem.routing.topk_group = 3;
  ds.problem.routing.routed_scaling_factor = 2.5f;
  expect_within_tolerance(ds, 1);
  for (int64_t T : {3, 77}) {
    Case mix{"topk_softmax E256 K10 H2880 I1408 T" + std::to_string(T), base_problem(256, 10, 2880, 1408), T};
    mix.problem.routing.method = RoutingMethod::kTopKSoftmax;
    expect_within_tolerance(mix, 2 + T);
  }
  Case topk{"plain topk E64 K8 no renorm T77", base_problem(64, 8, kH, kI), 77};
  topk.problem.routing.method = RoutingMethod::kTopK;
  topk.problem.routing.renormalize = false;
  expect_within_tolerance(topk, 3);
  Case llama{"llama4 E1 K1 weight on input T77", base_problem(1, 1, kH, kI), 77};
  llama.problem.routing.method = RoutingMethod::kLlama4;
  llama.problem.apply_router_weight_on_input = true;
  expect_within_tolerance(llama, 4);
}

TEST(MoeCuda, ActivationsLayoutsAndBiases) {
  MOEKIT_REQUIRE_GPU();
  expect_within_tolerance(gpt_oss_case(8, 4, 2880, 1408, 77), 5);
  for (Activation a : {Activation::kGeGLU, Activation::kGeGLUTanh, Activation::kReLU2, Activation::kSiLU, Activation::kGeLU,
                       Activation::kReLU, Activation::kIdentity})
    expect_within_tolerance(activation_case(a, 77), 6 + static_cast<int>(a));
}

TEST(MoeCuda, ExpertParallelAndNoCombine) {
  MOEKIT_REQUIRE_GPU();
  expect_within_tolerance(expert_range_no_combine_case(77), 20);
  // T*K <= 32: the one-warp maps (build_maps.cu), fused with routing and not.
  for (Switch prologue : {Switch::kOn, Switch::kOff}) {
    Case range = expert_range_no_combine_case(3), map = expert_map_case(2);
    for (Case* c : {&range, &map}) {
      c->fusions.routing_prologue = prologue;
      c->fusions.whole_layer = Switch::kOff;
      c->name += prologue == Switch::kOn ? " (routing + maps)" : " (maps alone)";
    }
    expect_within_tolerance(range, 22);
    expect_within_tolerance(map, 23);
  }
  Case map = expert_map_case(1000);
  map.name += " (radix sort maps)";
  expect_within_tolerance(map, 21);
}

TEST(MoeCuda, InputFormats) {
  MOEKIT_REQUIRE_GPU();
  Case pre{"prerouted f16 relu2 E64 K8 T1000", base_problem(64, 8, kH, kI), 1000};
  pre.problem.input_format = InputFormat::kPreRouted;
  pre.problem.activation_dtype = DType::kF16;
  pre.problem.activation.kind = Activation::kReLU2;
  expect_within_tolerance(pre, 30);
  Case pre_small{"prerouted E64 K8 T3", base_problem(64, 8, kH, kI), 3};
  pre_small.problem.input_format = InputFormat::kPreRouted;
  pre_small.fusions.whole_layer = Switch::kOff;
  expect_within_tolerance(pre_small, 34);
  Case masked{"masked E8 max_m 77 silu", base_problem(8, 1, kH, kI), 77};
  masked.problem.input_format = InputFormat::kMasked;
  masked.problem.activation.kind = Activation::kSiLU;
  expect_within_tolerance(masked, 31);
  Case indexed{"indexed E8 T77", base_problem(8, 2, kH, kI), 77};
  indexed.problem.input_format = InputFormat::kIndexed;
  expect_within_tolerance(indexed, 32);
  Case big{"mixtral-like E8 K2 H2880 I1408 T1000", base_problem(8, 2, 2880, 1408), 1000};
  big.problem.routing.method = RoutingMethod::kTopKSoftmax;
  expect_within_tolerance(big, 33);
}

TEST(MoeCuda, EveryFusionSwitchGivesTheSameLayer) {
  MOEKIT_REQUIRE_GPU();
  for (int64_t T : {3, 77}) {
    for (int mask = 0; mask < 8; ++mask) {
      Case c{"switches " + std::to_string(mask) + " E8 K2 T" + std::to_string(T), base_problem(8, 2, kH, kI), T, true};
      c.fusions.routing_prologue = (mask & 1) ? Switch::kOff : Switch::kOn;
      c.fusions.gemm1_activation = (mask & 2) ? Switch::kOff : Switch::kAuto;
      c.fusions.gemm2_finalize = (mask & 4) ? Switch::kOff : Switch::kOn;  // few rows: auto would be off for cost
      c.fusions.whole_layer = Switch::kOff;
      expect_within_tolerance(c, 40 + T);
    }
  }
}


std::vector<Case> epilogue_cases() {
  std::vector<Case> cases;
  cases.push_back({"swiglu biases E8 K2 T77", base_problem(8, 2, kH, kI), 77, true});
  Case oss = gpt_oss_case(16, 4, kH, kI, 3);
  oss.name += ", finalize unfused";
  oss.fusions.gemm2_finalize = Switch::kOff;
  cases.push_back(oss);
  Case plain{"relu2 no_combine E4 K2 T5, activation unfused", base_problem(4, 2, kH, kI), 5};
  plain.problem.activation.kind = Activation::kReLU2;
  plain.problem.no_combine = true;
  plain.fusions.gemm1_activation = Switch::kOff;
  cases.push_back(plain);
  Case masked{"masked silu E8 max_m 9", base_problem(8, 1, kH, kI), 9};
  masked.problem.input_format = InputFormat::kMasked;
  masked.problem.activation.kind = Activation::kSiLU;
  cases.push_back(masked);
  Case one{"f16 K8 E64 T1", base_problem(64, 8, kH, kI), 1};
  one.problem.activation_dtype = DType::kF16;
  cases.push_back(one);
  for (Case& c : cases) c.fusions.whole_layer = Switch::kOff;  // the stage kernels, not the decode layer
  return cases;
}

TEST(MoeCuda, EveryGemmTileGivesTheSameLayer) {
  MOEKIT_REQUIRE_GPU();
  const std::vector<std::string> tiles = {"stream_n8k128", "stream_n16k128", "stream_n32k128", "m16n64k64",
                                          "m32n128k64",    "m64n128k64",     "m128n128k64",    "m128n256k64"};
  uint64_t seed = 400;
  for (const std::string& tile : tiles) {
    for (Case c : epilogue_cases()) {
      c.name = tile + ": " + c.name;
      c.choice.knobs = {{"gemm1.tile", tile}, {"gemm2.tile", tile}};
      expect_within_tolerance(c, ++seed);
    }
  }
}

// The sm_90a kernel's configurations at a few rows per expert (the 64 x 128 tile's range) and
// many, and with every epilogue case: it has no bias epilogue, so with biases the activation and
// finalize kernels add them (gated concatenated and interleaved, plain activation, the unfused
// activation stage, no_combine, Masked, f16); with interleaved gate/up rows the gated epilogue adds
// gemm1's bias and applies the activation itself.
TEST(MoeCuda, Sm90TilesGiveTheSameLayer) {
  MOEKIT_REQUIRE_GPU();
  if (!hopper()) GTEST_SKIP() << "the sm_90a kernel needs a Hopper GPU";
  uint64_t seed = 500;
  for (const char* tile : {"sm90_m128n256k64_c1x1", "sm90_m128n256k64_c1x2", "sm90_m64n128k128_c1x1", "sm90_m64n128k128_c1x2",
                           "sm90_m128n128k128_c1x1", "sm90_m192n128k64_c1x1"}) {
    std::vector<Case> cases = epilogue_cases();
    // T = 0 too: with both GEMMs forced onto 64 x 128 the overlapped pair's rule sees no rows; T = 380
    // and 500 (47.5 and 62.5 rows an expert) are inside the pair's range for these tiny experts, at
    // T=500 with experts past 64 rows (two M tiles).
    for (int64_t T : {0, 3, 77, 380, 500, 1000}) cases.push_back({"E64 K8 T" + std::to_string(T), base_problem(64, 8, kH, kI), T});
    cases.push_back(gpt_oss_case(16, 4, kH, kI, 1000));
    // Interleaved gate/up rows take the gated epilogue (gemm1 and the activation in one kernel).
    Case inter{"swiglu interleaved f16 biases E8 K2 T77", base_problem(8, 2, kH, kI), 77, true};
    inter.problem.gate_up_layout = GateUpLayout::kInterleaved;
    inter.problem.activation_dtype = DType::kF16;
    cases.push_back(inter);
    Case geglu{"geglu interleaved no_combine E64 K8 T300", base_problem(64, 8, kH, kI), 300};
    geglu.problem.gate_up_layout = GateUpLayout::kInterleaved;
    geglu.problem.activation.kind = Activation::kGeGLU;
    geglu.problem.no_combine = true;
    cases.push_back(geglu);
    Case plain_bias{"relu2 biases E8 K2 T300, activation unfused", base_problem(8, 2, kH, kI), 300, true};
    plain_bias.problem.activation.kind = Activation::kReLU2;
    plain_bias.fusions.gemm1_activation = Switch::kOff;
    cases.push_back(plain_bias);
    for (Case c : cases) {
      c.name = std::string(tile) + ": " + c.name;
      c.fusions.whole_layer = Switch::kOff;
      c.choice.knobs = {{"gemm1.tile", tile}, {"gemm2.tile", tile}};
      expect_within_tolerance(c, ++seed);
    }
  }
}

// The layers the tall tile's tests run: interleaved gate/up rows with a gated activation at T = 0, 3,
// 77 and at 125 and 250 rows an expected expert (E64 K8 T = 1000, 2000), GPT-OSS's clamped SwiGLU
// with biases, and GeGLU in f16 under no_combine at `f16_tokens` (E8 K2).
std::vector<Case> tall_tile_cases(int64_t f16_tokens) {
  std::vector<Case> cases;
  for (int64_t T : {0, 3, 77, 1000, 2000}) {
    Case c{"swiglu interleaved E64 K8 T" + std::to_string(T), base_problem(64, 8, kH, kI), T};
    c.problem.gate_up_layout = GateUpLayout::kInterleaved;
    cases.push_back(c);
  }
  cases.push_back(gpt_oss_case(16, 4, kH, kI, 1000));
  Case f16{"geglu interleaved f16 no_combine E8 K2 T" + std::to_string(f16_tokens), base_problem(8, 2, kH, kI), f16_tokens};
  f16.problem.gate_up_layout = GateUpLayout::kInterleaved;
  f16.problem.activation.kind = Activation::kGeGLU;
  f16.problem.activation_dtype = DType::kF16;
  f16.problem.no_combine = true;
  cases.push_back(f16);
  return cases;
}

// Both GEMMs on the 192 x 128 tile (gemm1 with the gated epilogue, gemm2 with the plain one's 64-row
// subtiles) against the float64 reference: interleaved gate/up rows with a gated activation, at
// T = 0, 3, 77 and at 125 and 250 rows an expected expert (E64 K8 T = 1000, 2000: experts on either
// side of one 192-row M tile), with biases (GPT-OSS's clamped SwiGLU), f16, and no_combine. (Its
// gemm1 outputs are bitwise the 128 x 256 tile's, the same k order per output: bench/sm90_overlap
// checked that, docs/perf-notes.md step 36 a; this test holds the layer to the reference.)
TEST(MoeCuda, TallTileGivesTheSameLayer) {
  MOEKIT_REQUIRE_GPU();
  if (!hopper()) GTEST_SKIP() << "the sm_90a kernel needs a Hopper GPU";
  uint64_t seed = 900;
  for (Case c : tall_tile_cases(300)) {
    c.fusions.whole_layer = Switch::kOff;
    c.choice.knobs = {{"gemm1.tile", "sm90_m192n128k64_c1x1"}, {"gemm2.tile", "sm90_m192n128k64_c1x1"}};
    c.name = "both GEMMs 192x128: " + c.name;
    expect_within_tolerance(c, ++seed);
  }
}

// Both GEMMs in two parts (gemm1.tall_tail, gemm2.tall_tail: each expert's tall tail on the 192 x 128
// tile (on) or the 192 x 256 one (wide), the rest on the 128 x 256 tile, docs/perf-notes.md steps 41,
// 43) against the float64 reference, at the cases of TallTileGivesTheSameLayer (T = 1000 and 2000 put
// the experts around 128 and 256 rows, where about half have a tall tail), and to the bit the layer
// of the 128 x 256 tile alone: every output is one tile's, over the same k order, whichever tile
// height holds its row. Also with concatenated gate/up rows, where gemm1 runs the plain epilogue in
// parts and the activation after it (the heuristic's plan for GPT-OSS-sized experts in that layout).
TEST(MoeCuda, TallTailsGiveTheSameLayer) {
  MOEKIT_REQUIRE_GPU();
  if (!hopper()) GTEST_SKIP() << "the sm_90a kernel needs a Hopper GPU";
  std::vector<Case> cases = tall_tile_cases(1100);
  Case concatenated{"swiglu concatenated E64 K8 T1000", base_problem(64, 8, kH, kI), 1000};
  concatenated.problem.gate_up_layout = GateUpLayout::kConcatenated;
  cases.push_back(concatenated);
  for (Case c : cases) {
    c.fusions.whole_layer = Switch::kOff;
    c.choice.knobs = {{"gemm1.tile", "sm90_m128n256k64_c1x1"}, {"gemm2.tile", "sm90_m128n256k64_c1x1"}};
    const Outcome whole = run_case(c, 91);
    for (const char* tail : {"on", "wide"}) {
      c.choice.knobs["gemm1.tall_tail"] = tail;
      c.choice.knobs["gemm2.tall_tail"] = tail;
      const Outcome parts = run_case(c, 91);
      EXPECT_LE(parts.errors.gpu, 2 * parts.errors.naive + 1e-6) << c.name << " tall_tail=" << tail;
      ASSERT_EQ(parts.out.size(), whole.out.size()) << c.name;
      EXPECT_EQ(std::memcmp(parts.out.data(), whole.out.data(), whole.out.size() * sizeof(double)), 0)
          << c.name << ": the layer in two parts (tall_tail=" << tail << ") differs from the 128 x 256 tile's";
    }
  }
}

// gemm2.overlap moves only when gemm2's weights load, so every value gives the same bits: at 9.6 rows
// an expert (auto: the pair), 47.5 (the pair for these tiny experts) and 125 (auto: no pair; on: the
// pair with most experts over two M tiles).
TEST(MoeCuda, Gemm2OverlapKeepsTheBits) {
  MOEKIT_REQUIRE_GPU();
  if (!hopper()) GTEST_SKIP() << "the overlapped pair needs the sm_90a kernel and PDL (a Hopper GPU)";
  for (int64_t T : {77, 380, 1000}) {
    Case c{"E64 K8 T" + std::to_string(T), base_problem(64, 8, kH, kI), T};
    c.fusions.whole_layer = Switch::kOff;
    std::vector<double> first;
    for (const char* overlap : {"off", "auto", "on"}) {
      c.choice.knobs = {{"gemm1.tile", "sm90_m64n128k128_c1x1"}, {"gemm2.tile", "sm90_m64n128k128_c1x1"}, {"gemm2.overlap", overlap}};
      const Outcome o = run_case(c, 90);
      EXPECT_LE(o.errors.gpu, 2 * o.errors.naive + 1e-6) << c.name << " gemm2.overlap=" << overlap;
      if (first.empty()) {
        first = o.out;
        continue;
      }
      ASSERT_EQ(o.out.size(), first.size());
      EXPECT_EQ(std::memcmp(o.out.data(), first.data(), first.size() * sizeof(double)), 0) << c.name << " gemm2.overlap=" << overlap;
    }
  }
}

TEST(MoeCuda, StreamTilesAtEveryKSplit) {
  MOEKIT_REQUIRE_GPU();
  if (!hopper()) GTEST_SKIP() << "K splits need thread-block clusters of the sm_90a kernels (a compute capability 9.0 GPU)";
  uint64_t seed = 500;
  for (const char* split : {"1", "2", "4", "8"}) {
    for (Case c : epilogue_cases()) {
      c.name = std::string("stream_n8k128 split ") + split + ": " + c.name;
      c.choice.knobs = {{"gemm1.tile", "stream_n8k128"}, {"gemm2.tile", "stream_n8k128"}, {"gemm1.split", split}, {"gemm2.split", split}};
      expect_within_tolerance(c, ++seed);
    }
    // A long K (H = 2880: 23 k tiles of 128) split unevenly.
    Case wide{std::string("stream_n16k128 split ") + split + ": H2880 I1408 E8 K2 T7", base_problem(8, 2, 2880, 1408), 7, true};
    wide.fusions.whole_layer = Switch::kOff;
    wide.choice.knobs = {{"gemm1.tile", "stream_n16k128"}, {"gemm2.tile", "stream_n16k128"}, {"gemm1.split", split}, {"gemm2.split", split}};
    expect_within_tolerance(wide, ++seed);
  }
}

// interleave_gate_up on device memory (two cudaMemcpy3D) moves the same bytes as on the host.
TEST(MoeCuda, InterleaveGateUpOnTheDevice) {
  MOEKIT_REQUIRE_GPU();
  auto host = Tensor::empty(DType::kBF16, {3, 10, 24});
  ASSERT_TRUE(host.ok());
  fill_uniform(*host, 1.0, 7, 0);
  auto dev = Tensor::empty(DType::kBF16, {3, 10, 24}, Device::cuda());
  ASSERT_TRUE(dev.ok());
  ASSERT_TRUE(copy_tensor(*dev, *host).ok());
  auto want = interleave_gate_up(*host);
  auto got_dev = interleave_gate_up(*dev);
  ASSERT_TRUE(want.ok() && got_dev.ok()) << got_dev.status().to_string();
  EXPECT_TRUE(got_dev->device().is_cuda());
  auto got = Tensor::empty(DType::kBF16, {3, 10, 24});
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(copy_tensor(*got, *got_dev).ok());
  EXPECT_EQ(std::memcmp(got->data(), want->data(), static_cast<size_t>(want->storage_bytes())), 0);
}

// Two runs of a deterministic case give the same bits, within the naive reference's tolerance.
void expect_bitwise_stable(const Case& c, uint64_t seed) {
  const Outcome a = run_case(c, seed), b = run_case(c, seed);
  ASSERT_EQ(a.out.size(), b.out.size());
  EXPECT_EQ(std::memcmp(a.out.data(), b.out.data(), a.out.size() * sizeof(double)), 0) << c.name;
  EXPECT_LE(a.errors.gpu, 2 * a.errors.naive + 1e-6) << c.name;
}

TEST(MoeCuda, DeterministicModeIsBitwiseStable) {
  MOEKIT_REQUIRE_GPU();
  for (int K : {2, 8}) {  // K <= 2: atomic finalize (order-free); K = 8: the fixed-order finalize
    Case c{"deterministic K" + std::to_string(K) + " E64 T77", base_problem(64, K, kH, kI), 77};
    c.problem.deterministic = true;
    c.fusions.gemm2_finalize = Switch::kOn;  // K = 2: the atomic combine (forced: few rows are unfused for cost)
    expect_bitwise_stable(c, 50);
  }
}

// The 64 x 128 tile in its 1 x 2 cluster is the heuristic's for large experts at a few rows on a
// Hopper GPU (moe_launch.h kSm90LargeExpertClusterMaxRows); these experts are small, so it is forced.
TEST(MoeCuda, DeterministicModeIsBitwiseStableOnTheClusterTile) {
  MOEKIT_REQUIRE_GPU();
  if (!hopper()) GTEST_SKIP() << "the sm_90a kernel needs a Hopper GPU";
  for (int64_t T : {3, 77, 500}) {
    Case c{"deterministic c1x2 K8 E64 T" + std::to_string(T), base_problem(64, 8, kH, kI), T};
    c.problem.deterministic = true;
    c.fusions.whole_layer = Switch::kOff;  // T=3 would take the few-token kernel, which has no tiles
    c.choice.knobs = {{"gemm1.tile", "sm90_m64n128k128_c1x2"}, {"gemm2.tile", "sm90_m64n128k128_c1x2"}};
    expect_bitwise_stable(c, 51);
  }
}

// ---- a CUDA graph of the whole layer, replayed with new routing ----------------------------------
TEST(MoeCuda, GraphReplaysWithNewRouting) {
  MOEKIT_REQUIRE_GPU();
  MoeProblem p = base_problem(64, 6, kH, kI);
  p.routing.method = RoutingMethod::kDeepSeekV3;
  p.routing.n_group = 8;
  p.routing.topk_group = 4;
  expect_graph_replays_with_new_routing({.problem = p, .tokens = 77, .layer_seed = 60, .logits_seed = 70, .replays = 3});
}

// ---- errors before any launch --------------------------------------------------------------------
TEST(MoeCuda, BadInputsAreRejectedBeforeAnyLaunch) {
  MOEKIT_REQUIRE_GPU();
  MoeProblem p = base_problem(8, 2, kH, kI);
  auto layer = make_random_layer(p, {.num_tokens = 5, .seed = 80});
  ASSERT_TRUE(layer.ok());
  auto runner = MoeRunner::create(p, {.backend = BackendChoice::kCuda});
  ASSERT_TRUE(runner.ok());

  // Host weights for the CUDA backend.
  auto host_weights = runner->prepare_weights(layer->weights);
  ASSERT_FALSE(host_weights.ok());
  EXPECT_NE(host_weights.status().message().find("w13"), std::string::npos) << host_weights.status().to_string();

  const LayerCopy gpu = on_gpu(layer->weights, layer->inputs(), layer->outputs());
  // Weights the kernels cannot read with 16-byte loads, and an expert map pointing past the local
  // experts: refused at prepare time, naming the field.
  for (const char* field : {"w13", "w2"}) {
    MoeWeights bad = gpu.weights;
    TensorView& w = std::string(field) == "w13" ? bad.w13 : bad.w2;
    w = TensorView::create(static_cast<std::byte*>(w.data()) + 2, w.dtype(), w.shape(), {}, Device::cuda(0)).value();
    auto r = runner->prepare_weights(bad);
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().to_string();
    EXPECT_NE(r.status().message().find("aligned"), std::string::npos) << r.status().to_string();
  }
  {
    std::vector<int32_t> map(static_cast<size_t>(p.num_experts));
    for (int g = 0; g < p.num_experts; ++g) map[static_cast<size_t>(g)] = g;
    map[3] = p.num_experts;  // past E_local
    auto dmap = Tensor::empty(DType::kI32, {p.num_experts}, Device::cuda(0));
    ASSERT_TRUE(dmap.ok());
    MOEKIT_ASSERT_CUDA(cudaMemcpy(dmap->data(), map.data(), map.size() * 4, cudaMemcpyHostToDevice));
    MoeWeights bad = gpu.weights;
    bad.expert_map = dmap->view();
    auto r = runner->prepare_weights(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("expert_map[3]=8"), std::string::npos) << r.status().to_string();
  }
  auto prepared = runner->prepare_weights(gpu.weights);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  const MoeInputs& din = gpu.inputs;
  const MoeOutputs& dout = gpu.outputs;
  const size_t bytes = *runner->workspace_size(din);
  auto ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(bytes)}, Device::cuda(0));
  const std::span<std::byte> workspace(static_cast<std::byte*>(ws->data()), bytes);

  auto expect_error = [&](const MoeInputs& in, const MoeOutputs& out, std::span<std::byte> w, const char* field) {
    poison(dout.out);
    const Status s = runner->run(*prepared, in, out, w, {});
    EXPECT_FALSE(s.ok()) << field;
    EXPECT_NE(s.message().find(field), std::string::npos) << s.to_string();
    const std::vector<double> after = to_doubles(dout.out);
    for (double v : after) ASSERT_TRUE(std::isnan(v)) << field << ": output was written";
  };
  MoeInputs host_hidden = din;
  host_hidden.hidden = layer->hidden.view();
  expect_error(host_hidden, dout, workspace, "hidden");
  MoeInputs misaligned = din;
  misaligned.hidden =
      TensorView::create(static_cast<std::byte*>(din.hidden.data()) + 2, DType::kBF16, din.hidden.shape(), {}, Device::cuda(0)).value();
  expect_error(misaligned, dout, workspace, "hidden");
  MoeInputs wrong_logits = din;
  wrong_logits.router_logits = TensorView::create(din.router_logits.data(), DType::kF32, std::vector<int64_t>{5, 7}, {}, Device::cuda(0)).value();
  expect_error(wrong_logits, dout, workspace, "router_logits");
  expect_error(din, dout, workspace.subspan(0, bytes / 2), "workspace");

  // What this backend cannot run: a clear error with backend=cuda, the CPU with backend=auto.
  MoeProblem f32 = p;
  f32.activation_dtype = DType::kF32;
  auto r32 = MoeRunner::create(f32, {.backend = BackendChoice::kCuda});
  ASSERT_FALSE(r32.ok());
  EXPECT_NE(r32.status().message().find("f32"), std::string::npos) << r32.status().to_string();
  MoeProblem fp8 = p;
  fp8.quant = QuantScheme::kFp8Block;
  auto auto_fp8 = MoeRunner::create(fp8, {.backend = BackendChoice::kAuto});
  ASSERT_TRUE(auto_fp8.ok()) << auto_fp8.status().to_string();
  EXPECT_EQ(auto_fp8->device().backend, BackendKind::kCpu);
  EXPECT_NE(auto_fp8->device_decision().reason.find("fp8_block"), std::string::npos) << auto_fp8->device_decision().reason;
}

}  // namespace
}  // namespace moekit
