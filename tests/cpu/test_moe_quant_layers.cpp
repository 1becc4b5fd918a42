// Quantized MoE layers: cpu::run_reference against the naive float64 oracle for every QuantScheme,
// alone and combined with the layer's options, at odd sizes and at H = 2880, I = 1408. The data, the
// comparison and its tolerance are in quant_layer_fixture.h.
#include <gtest/gtest.h>

#include <string>

#include "cpu/quant_layer_fixture.h"

namespace moekit::quant_test {
namespace {

class QuantLayerVsNaive : public testing::TestWithParam<Variant> {};

TEST_P(QuantLayerVsNaive, TokenCounts) {
  uint32_t seed = 10;
  for (int T : {0, 1, 3, 77}) run_and_compare(base_case(GetParam(), T, ++seed));
}

TEST_P(QuantLayerVsNaive, WithLayerOptions) {
  const Variant& v = GetParam();
  uint32_t seed = 100;
  auto with = [&](const char* what, auto&& change) {
    Case c = base_case(v, 33, ++seed);
    c.name += std::string(" ") + what;
    change(c);
    run_and_compare(c);
  };
  with("relu2 (not gated), pre-routed, no biases, routed_scaling_factor 2.5", [](Case& c) {
    c.p.activation.kind = Activation::kReLU2;
    c.p.input_format = InputFormat::kPreRouted;
    c.bias13 = c.bias2 = false;
    c.p.routing.routed_scaling_factor = 2.5f;
  });
  with("geglu interleaved, w13 bias only, no_combine, local experts [2, 6), bf16", [](Case& c) {
    c.p.activation.kind = Activation::kGeGLU;
    c.p.gate_up_layout = GateUpLayout::kInterleaved;
    c.bias2 = false;
    c.p.no_combine = true;
    c.p.local_expert_begin = 2;
    c.p.num_local_experts = 4;
    c.p.activation_dtype = kBF16;
  });
  with("K = E = 4, Mixtral top-k softmax routing, gelu tanh", [](Case& c) {
    c.p.num_experts = c.p.top_k = 4;
    c.p.routing.method = RoutingMethod::kTopKSoftmax;
    c.p.activation.kind = Activation::kGeGLUTanh;
  });
  with("masked, silu, w2 bias only, f16", [](Case& c) {
    c.p.input_format = InputFormat::kMasked;
    c.p.activation.kind = Activation::kSiLU;
    c.bias13 = false;
    c.p.activation_dtype = kF16;
  });
  with("indexed, GPT-OSS clamped swiglu interleaved, local experts [8, 13) of 16, scaling 2.5", [](Case& c) {
    c.p.input_format = InputFormat::kIndexed;
    c.p.num_experts = 16;
    c.p.local_expert_begin = 8;
    c.p.num_local_experts = 5;
    c.p.activation.kind = Activation::kSwiGLUClamped;
    c.p.gate_up_layout = GateUpLayout::kInterleaved;
    c.p.routing.routed_scaling_factor = 2.5f;
  });
  with("llama4 top-1, router weight on the input, identity, expert_map", [](Case& c) {
    c.p.top_k = 1;
    c.p.routing.method = RoutingMethod::kLlama4;
    c.p.routing.renormalize = false;
    c.p.apply_router_weight_on_input = true;
    c.p.activation.kind = Activation::kIdentity;
    c.p.num_local_experts = 3;
    c.expert_map = {-1, 0, -1, 2, 1, -1, -1, -1};
  });
  with("DeepSeek-V3 routing E=16 K=4, scaling 2.5, no_combine, expert_map", [](Case& c) {
    c.p.num_experts = 16;
    c.p.top_k = 4;
    c.p.routing = {.method = RoutingMethod::kDeepSeekV3, .renormalize = true, .n_group = 4, .topk_group = 2,
                   .routed_scaling_factor = 2.5f};
    c.p.no_combine = true;
    c.p.num_local_experts = 6;
    c.expert_map = {0, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, -1, 4, -1, 5, -1};
  });
}

// A static activation scale of 0 or below zeroes that expert's GEMM input (docs/quantization.md).
TEST(QuantLayerVsNaiveScales, ZeroAndNegativeStaticScalesGiveZeroActivations) {
  for (const char* name : {"fp8_per_tensor_static_per_expert", "w4a8_g64_per_expert"}) {
    const Variant& v = variant(name);
    Case c = base_case(v, 33, 77);
    Layer L = build(c);
    L.w.w13_input_scale.data_as<float>()[1] = -L.w.w13_input_scale.data_as<float>()[1];
    L.w.w2_input_scale.data_as<float>()[2] = 0.0f;
    L.w.w2_input_scale.data_as<float>()[3] = -1.0f;
    ASSERT_TRUE(run_library(L).ok());
    expect_matches_oracle(L.out, naive::run(L.p, L.w, L.in), std::string(v.name) + " with scales 0 and below");
  }
}

INSTANTIATE_TEST_SUITE_P(EveryScheme, QuantLayerVsNaive, testing::ValuesIn(kVariants),
                         [](const testing::TestParamInfo<Variant>& info) { return std::string(info.param.name); });

// ---- Model sizes: H = 2880, I = 1408 (few experts, few tokens) ---------------------------------------

Case model_sized(const Variant& v, int E, int K, int T, uint32_t seed) {
  Case c = base_case(v, T, seed);
  c.name = std::string(v.name) + " H=2880 I=1408 E=" + std::to_string(E) + " K=" + std::to_string(K) + " T=" + std::to_string(T);
  c.p.num_experts = E;
  c.p.top_k = K;
  c.p.hidden = 2880;
  c.p.intermediate = 1408;
  return c;
}

TEST(QuantLayerModelSizes, DeepSeekFp8BlockAndMicroscaledFp4) {
  // DeepSeek-V3: fp8 blocks (2880 = 22.5 blocks of 128), grouped sigmoid routing, scaling 2.5.
  Case ds = model_sized({"fp8_block", kFp8Block, 128, 0, 0}, 4, 2, 3, 1);
  ds.p.routing = {.method = RoutingMethod::kDeepSeekV3, .renormalize = true, .n_group = 2, .topk_group = 1,
                  .routed_scaling_factor = 2.5f};
  ds.bias13 = ds.bias2 = false;
  run_and_compare(ds);
  // GPT-OSS: MXFP4 weights, clamped SwiGLU with interleaved gate/up rows, biases, bf16 activations.
  for (int T : {0, 3}) {
    Case gpt = model_sized({"mxfp4", kMxfp4, 32, 0, 0}, 4, 2, T, 2);
    gpt.p.activation.kind = Activation::kSwiGLUClamped;
    gpt.p.gate_up_layout = GateUpLayout::kInterleaved;
    gpt.p.routing.method = RoutingMethod::kTopKSoftmax;
    gpt.p.activation_dtype = kBF16;
    run_and_compare(gpt);
  }
  run_and_compare(model_sized({"mxfp4_mxfp8", kMxfp4Mxfp8, 32, 0, 0}, 2, 1, 3, 3));
  run_and_compare(model_sized({"nvfp4", kNvfp4, 16, 0, 0, InputScale::kPerExpert}, 2, 1, 3, 4));
}

TEST(QuantLayerModelSizes, GroupWiseInt4AndInt8) {
  run_and_compare(model_sized(
      {"w4a16_g64_zero_awq", kW4A16, 64, 0, 0, InputScale::kNone, kBF16, ZeroPoint::kF32, Awq::kShared}, 2, 1, 3, 5));
  run_and_compare(model_sized({"w8a16_g32", kW8A16, 32, 0, 0, InputScale::kNone, kF16}, 1, 1, 1, 6));
  run_and_compare(model_sized({"w4a8_g64", kW4A8, 64, 0, 0, InputScale::kScalar}, 1, 1, 3, 7));
}

TEST(QuantLayerModelSizes, PerTensorAndPerToken) {
  run_and_compare(model_sized({"fp8_per_tensor_dynamic", kFp8PerTensor, 128, 0, 0}, 1, 1, 3, 8));
  run_and_compare(model_sized({"fp8_per_token", kFp8PerToken, 128, 0, 0}, 1, 1, 1, 9));
  run_and_compare(model_sized({"int8_per_token", kInt8PerToken, 128, 0, 0}, 1, 1, 1, 10));
}

}  // namespace
}  // namespace moekit::quant_test
