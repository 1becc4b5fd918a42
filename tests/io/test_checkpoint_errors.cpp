// load_moe_layer's errors: each names what is wrong (tensor, layer, expected and actual shape, dtype,
// config key and value).
#include <gtest/gtest.h>

#include <string>

#include "io/checkpoint_fixtures.h"
#include "moekit/checkpoint.h"

namespace moekit {
namespace {

using testing::CheckpointWriter;
using testing::Sizes;

const Sizes kSizes{.E = 4, .K = 2, .H = 64, .I = 32};
const std::string kExpert = "model.layers.1.block_sparse_moe.experts.";

// A two-layer Mixtral checkpoint; `change` edits tensors before writing.
template <typename F>
void write_mixtral(CheckpointWriter& w, F&& change, const std::string& config = testing::mixtral_config(kSizes, 2)) {
  testing::add_mixtral_layer(w, 0, kSizes);
  testing::add_mixtral_layer(w, 1, kSizes);
  change(w);
  w.write_config(config);
  w.write();
}

void no_change(CheckpointWriter&) {}

TEST(CheckpointErrors, MissingTensorNamesItAndTheLayer) {
  CheckpointWriter w;
  write_mixtral(w, [](CheckpointWriter& c) { c.remove(kExpert + "2.w3.weight"); });
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kNotFound, "loading MoE layer 1 from",
                      "layer 1 (mixtral): missing tensor 'model.layers.1.block_sparse_moe.experts.2.w3.weight'");
  EXPECT_TRUE(load_moe_layer(w.path(), 0).ok()) << "layer 0 is complete";
}

TEST(CheckpointErrors, WrongShapeNamesExpectedAndActual) {
  CheckpointWriter w;
  write_mixtral(w, [](CheckpointWriter& c) { c.add(kExpert + "1.w2.weight", DType::kBF16, {64, 31}); });
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kInvalidArgument,
                      "tensor 'model.layers.1.block_sparse_moe.experts.1.w2.weight': shape [64, 31] does not match [H, I] = [64, 32]");
}

TEST(CheckpointErrors, WrongDtypeNamesTheTensorAndTheExpectedDtypes) {
  CheckpointWriter w;
  write_mixtral(w, [](CheckpointWriter& c) { c.add(kExpert + "3.w1.weight", DType::kF16, {32, 64}); });
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kInvalidArgument,
                      "tensor 'model.layers.1.block_sparse_moe.experts.3.w1.weight': dtype F16 is not the expected BF16");
  CheckpointWriter w2;
  write_mixtral(w2, [](CheckpointWriter& c) { c.add(kExpert + "0.w1.weight", DType::kI32, {32, 64}); });
  MOEKIT_EXPECT_ERROR(load_moe_layer(w2.path(), 1).status(), StatusCode::kInvalidArgument, "dtype I32 is not the expected F32 or F16 or BF16 or F8_E4M3");
}

TEST(CheckpointErrors, UnknownDtypeInTheFileHeader) {
  CheckpointWriter w;
  write_mixtral(w, no_change);
  const std::string header = R"({"model.layers.1.block_sparse_moe.gate.weight":{"dtype":"BF17","shape":[4,64],"data_offsets":[0,512]}})";
  testing::write_file(w / "model.safetensors", testing::safetensors_bytes(header, std::string(512, '\0')));
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kInvalidArgument, "model.safetensors",
                      "tensor 'model.layers.1.block_sparse_moe.gate.weight': unknown dtype 'BF17'");
}

TEST(CheckpointErrors, ConfigDisagreesWithTheTensors) {
  CheckpointWriter w;
  const Sizes eight{.E = 8, .K = 2, .H = 64, .I = 32};
  write_mixtral(w, no_change, testing::mixtral_config(eight, 2));
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kInvalidArgument,
                      "'model.layers.1.block_sparse_moe.gate.weight': shape [4, 64] does not match [E, H] = [8, 64]");
  CheckpointWriter extra;
  write_mixtral(extra, [](CheckpointWriter& c) { c.add(kExpert + "4.w1.weight", DType::kBF16, {32, 64}); });
  MOEKIT_EXPECT_ERROR(load_moe_layer(extra.path(), 1).status(), StatusCode::kInvalidArgument, "experts.4.w1.weight' exists but num_local_experts=4");
}

TEST(CheckpointErrors, LayerIndexOutOfRange) {
  CheckpointWriter w;
  write_mixtral(w, no_change);
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 2).status(), StatusCode::kInvalidArgument, "layer_index=2 is out of range", "num_hidden_layers=2");
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), -1).status(), StatusCode::kInvalidArgument, "layer_index=-1 must not be negative");
}

TEST(CheckpointErrors, DenseLayerWithoutAConfigRule) {
  // Qwen3 layer 0 holds a dense MLP although the config says every layer is sparse.
  CheckpointWriter w;
  testing::add_dense_mlp(w, 0, 64, 96);
  testing::add_mlp_experts(w, 1, kSizes, false);
  w.write_config(testing::qwen_moe_config("qwen3_moe", kSizes, 2, true));
  w.write();
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 0).status(), StatusCode::kInvalidArgument,
                      "layer 0 has a dense MLP ('model.layers.0.mlp.gate_proj.weight'), not an MoE block");
}

TEST(CheckpointErrors, ModelTypes) {
  CheckpointWriter w;
  write_mixtral(w, no_change, R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2})");
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kUnsupported, "model_type 'llama' is not supported",
                      "mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3, gpt_oss");
  w.write_config(testing::mixtral_config(kSizes, 2));
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1, {.model_type = "qwen3_moe"}).status(), StatusCode::kInvalidArgument,
                      "model_type 'qwen3_moe' given in the options", "says 'mixtral'");
  w.write_config(R"({"hidden_size": 64})");
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kInvalidArgument, "config.json: has no model_type");
  EXPECT_TRUE(load_moe_layer(w.path(), 1, {.model_type = "mixtral", .top_k = 2}).ok()) << "the options can supply it";
}

TEST(CheckpointErrors, MalformedConfig) {
  CheckpointWriter w;
  write_mixtral(w, no_change, R"({"model_type": "mixtral", )");
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kInvalidArgument, "config.json: not valid JSON");
  w.write_config(R"([1, 2])");
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kInvalidArgument, "config.json: must be a JSON object");
  w.write_config(R"({"model_type": "mixtral", "num_experts_per_tok": "2"})");
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kInvalidArgument, "num_experts_per_tok must be an integer, got \"2\"");
  w.write_config(R"({"model_type": "mixtral", "num_experts_per_tok": 5, "num_local_experts": 4})");
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kInvalidArgument, "num_experts_per_tok=5 must be in [1, num_local_experts=4]");
  w.write_config(R"({"model_type": "mixtral", "hidden_act": "relu"})");
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kUnsupported, "hidden_act=relu is not supported");
}

TEST(CheckpointErrors, UnsupportedQuantization) {
  CheckpointWriter w;
  write_mixtral(w, no_change);
  auto with_quant = [&](const std::string& q) {
    std::string config = testing::mixtral_config(kSizes, 2);
    config.insert(config.rfind('}'), ", \"quantization_config\": " + q);
    w.write_config(config);
    return load_moe_layer(w.path(), 1).status();
  };
  MOEKIT_EXPECT_ERROR(with_quant(R"({"quant_method": "awq", "bits": 4})"), StatusCode::kUnsupported, "quant_method=awq is not supported");
  MOEKIT_EXPECT_ERROR(with_quant(R"({"quant_method": "fp8", "activation_scheme": "static"})"), StatusCode::kUnsupported,
                      "fp8 without weight_block_size");
  MOEKIT_EXPECT_ERROR(with_quant(R"({"quant_method": "fp8", "weight_block_size": [64, 64]})"), StatusCode::kUnsupported,
                      "weight_block_size [64, 64] is not supported");
  MOEKIT_EXPECT_ERROR(with_quant(R"({"quant_method": "mxfp4"})"), StatusCode::kUnsupported, "mxfp4 is supported for gpt_oss, not mixtral");
  MOEKIT_EXPECT_ERROR(with_quant(R"({"quant_method": "fp8", "weight_block_size": [128, 128]})"), StatusCode::kInvalidArgument,
                      "says quant_method=fp8", "is BF16, not F8_E4M3");
}

TEST(CheckpointErrors, Fp8BlocksNeedIntermediateMultipleOf128) {
  const Sizes s{.E = 4, .K = 2, .H = 256, .I = 64};
  CheckpointWriter w;
  testing::add_mlp_experts(w, 1, s, /*fp8=*/true);
  w.add("model.layers.1.mlp.gate.e_score_correction_bias", DType::kF32, {4});
  w.write_config(testing::deepseek_v3_config(s, 2, 1, 2, 1));
  w.write();
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kUnsupported, "moe_intermediate_size=64 is not a multiple of 128");
}

TEST(CheckpointErrors, DeepSeekV3RoutingMustFitTheExperts) {
  const Sizes s{.E = 4, .K = 2, .H = 256, .I = 128};
  CheckpointWriter w;
  testing::add_mlp_experts(w, 1, s, true);
  w.add("model.layers.1.mlp.gate.e_score_correction_bias", DType::kF32, {4});
  w.write_config(testing::deepseek_v3_config(s, 2, 1, 8, 4));
  w.write();
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kInvalidArgument, "n_group=8 does not divide n_routed_experts=4");
  w.remove("model.layers.1.mlp.gate.e_score_correction_bias");
  w.write();
  w.write_config(testing::deepseek_v3_config(s, 2, 1, 2, 1));
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kNotFound, "missing tensor 'model.layers.1.mlp.gate.e_score_correction_bias'");
}

TEST(CheckpointErrors, GptOssMissingScales) {
  const Sizes s{.E = 4, .K = 2, .H = 64, .I = 32};
  CheckpointWriter w;
  testing::add_gpt_oss_layer(w, 0, s, true);
  w.remove("model.layers.0.mlp.experts.down_proj_scales");
  w.write_config(testing::gpt_oss_config(s, 1, true));
  w.write();
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 0).status(), StatusCode::kNotFound, "layer 0 (gpt_oss): missing tensor 'model.layers.0.mlp.experts.down_proj_scales'");
  w.write_config(testing::gpt_oss_config(s, 1, /*mxfp4=*/false));
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 0).status(), StatusCode::kInvalidArgument, "gate_up_proj_blocks' holds MXFP4 weights but",
                      "has no quantization_config");
}

TEST(CheckpointErrors, Paths) {
  CheckpointWriter w;
  MOEKIT_EXPECT_ERROR(load_moe_layer(w / "nowhere", 0).status(), StatusCode::kNotFound, "nowhere: no such file or directory");
  w.write_config(testing::mixtral_config(kSizes, 2));
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 0).status(), StatusCode::kNotFound, "holds neither model.safetensors.index.json nor model.safetensors");
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 0, {.config_path = w / "missing.json"}).status(), StatusCode::kNotFound, "missing.json: no such file");
}

}  // namespace
}  // namespace moekit
