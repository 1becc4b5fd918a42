// load_moe_layer on small synthetic checkpoints of every supported family (real tensor names, dtypes
// and config keys): every problem field, every weight view (shape, dtype, bytes, zero-copy or not),
// then the layer through cpu::validate and cpu::run_reference against transformers' own computation
// (tests/io/hf_oracle.h) from the checkpoint's original tensors.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>

#include "io/checkpoint_fixtures.h"
#include "io/hf_oracle.h"
#include "moekit/checkpoint.h"
#include "moekit/cpu_reference.h"

namespace moekit {
namespace {

using testing::CheckpointWriter;
using testing::Sizes;
namespace hf = testing::hf;

using TokenOracle = std::function<hf::Vec(const hf::Vec& x, const hf::Vec& logits)>;

MoeLayerCheckpoint load_ok(const std::filesystem::path& path, int layer, const CheckpointOptions& options = {}) {
  auto r = load_moe_layer(path, layer, options);
  if (!r.ok()) throw Error(r.status());
  return std::move(r).value();
}

// Expert e of `stacked` [E, N, K] holds the bytes of `parts`, one after the other.
void expect_stacked(const TensorView& stacked, int64_t e, std::initializer_list<const Tensor*> parts) {
  const int64_t per_expert = stacked.storage_bytes() / stacked.size(0);
  const auto* base = static_cast<const std::byte*>(stacked.data()) + e * per_expert;
  int64_t offset = 0;
  for (const Tensor* p : parts) {
    EXPECT_EQ(std::memcmp(base + offset, p->data(), static_cast<size_t>(p->storage_bytes())), 0) << "expert " << e << " at byte " << offset;
    offset += p->storage_bytes();
  }
  EXPECT_EQ(offset, per_expert);
}

// Expert e of a W13 stacked with interleaved rows: gate row i at row 2i, up row i at row 2i + 1.
void expect_interleaved(const TensorView& stacked, int64_t e, const Tensor& gate, const Tensor& up) {
  const int64_t per_expert = stacked.storage_bytes() / stacked.size(0);
  const int64_t rows = gate.shape()[0], row = gate.storage_bytes() / rows;
  ASSERT_EQ(per_expert, 2 * rows * row);
  const auto* got = static_cast<const std::byte*>(stacked.data()) + e * per_expert;
  const auto* g = static_cast<const std::byte*>(gate.data());
  const auto* u = static_cast<const std::byte*>(up.data());
  for (int64_t i = 0; i < rows; ++i) {
    EXPECT_EQ(std::memcmp(got + 2 * i * row, g + i * row, static_cast<size_t>(row)), 0) << "expert " << e << " gate row " << i;
    EXPECT_EQ(std::memcmp(got + (2 * i + 1) * row, u + i * row, static_cast<size_t>(row)), 0) << "expert " << e << " up row " << i;
  }
}

const CheckpointTensorSource* source(const MoeLayerCheckpoint& layer, std::string_view field) {
  for (const auto& s : layer.sources)
    if (s.field == field) return &s;
  return nullptr;
}

bool has_note(const MoeLayerCheckpoint& layer, std::string_view text) {
  for (const auto& n : layer.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

// Runs the loaded layer on a few random tokens: router logits computed here (hidden @ router^T + bias),
// cpu::validate, cpu::run_reference, and the output against `oracle` token by token (NMSE).
void expect_runs_like(const MoeLayerCheckpoint& layer, const TokenOracle& oracle, double max_nmse) {
  const MoeProblem& p = layer.problem;
  const int64_t T = 6, H = p.hidden, E = p.num_experts;
  Tensor hidden = testing::make_tensor(p.activation_dtype, {T, H});
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  testing::fill_values(hidden, [&](int64_t) { return dist(rng); });

  const hf::Matrix router = hf::matrix(layer.router_weight);
  const hf::Vec router_bias = layer.router_bias.defined() ? hf::vector(layer.router_bias) : hf::Vec(static_cast<size_t>(E), 0.0);
  Tensor logits = testing::make_tensor(DType::kF32, {T, E});
  for (int64_t t = 0; t < T; ++t) {
    const hf::Vec l = router.times(hf::vector(hidden, t));
    for (int64_t e = 0; e < E; ++e) logits.data_as<float>()[t * E + e] = static_cast<float>(l[static_cast<size_t>(e)] + router_bias[static_cast<size_t>(e)]);
  }
  Tensor logits2 = testing::make_tensor(DType::kF32, {T, E});
  ASSERT_TRUE(compute_router_logits(layer, hidden, logits2).ok());
  for (int64_t i = 0; i < T * E; ++i) EXPECT_FLOAT_EQ(logits2.data_as<float>()[i], logits.data_as<float>()[i]);

  Tensor out = testing::make_tensor(p.activation_dtype, {T, H});
  const MoeInputs inputs{.hidden = hidden, .router_logits = logits, .e_score_correction_bias = layer.e_score_correction_bias};
  const MoeOutputs outputs{.out = out};
  const Status valid = cpu::validate(p, layer.weights, inputs, outputs);
  ASSERT_TRUE(valid.ok()) << valid.to_string();
  const Status ran = cpu::run_reference(p, layer.weights, inputs, outputs);
  ASSERT_TRUE(ran.ok()) << ran.to_string();

  double err = 0.0, ref = 0.0;
  for (int64_t t = 0; t < T; ++t) {
    const hf::Vec y = oracle(hf::vector(hidden, t), hf::vector(logits, t));
    for (int64_t h = 0; h < H; ++h) {
      const double got = load_element(out.data(), out.dtype(), t * H + h), want = y[static_cast<size_t>(h)];
      err += (got - want) * (got - want);
      ref += want * want;
    }
  }
  ASSERT_GT(ref, 0.0);
  EXPECT_LT(err / ref, max_nmse) << "output NMSE against transformers' computation";
}

// bf16 output rounding alone gives an NMSE near 1e-6.
constexpr double kNmseBf16 = 1e-4;

// ---- Mixtral -----------------------------------------------------------------------------------------

TEST(CheckpointMixtral, LoadsTheLayerAndComputesLikeTransformers) {
  const Sizes s{.E = 4, .K = 2, .H = 64, .I = 32};
  CheckpointWriter w;
  testing::add_mixtral_layer(w, 0, s);
  testing::add_mixtral_layer(w, 1, s);
  w.write_config(testing::mixtral_config(s, 2));
  w.write();
  const MoeLayerCheckpoint layer = load_ok(w.path(), 1);

  EXPECT_EQ(layer.family, ModelFamily::kMixtral);
  EXPECT_EQ(layer.layer_index, 1);
  const MoeProblem& p = layer.problem;
  EXPECT_EQ(p.num_experts, 4);
  EXPECT_EQ(p.top_k, 2);
  EXPECT_EQ(p.hidden, 64);
  EXPECT_EQ(p.intermediate, 32);
  EXPECT_EQ(p.local_expert_begin, 0);
  EXPECT_EQ(p.num_local_experts, -1);
  EXPECT_EQ(p.routing.method, RoutingMethod::kTopKSoftmax);
  EXPECT_FALSE(p.routing.renormalize);
  EXPECT_EQ(p.routing.routed_scaling_factor, 1.0f);
  EXPECT_EQ(p.activation.kind, Activation::kSwiGLU);
  EXPECT_EQ(p.gate_up_layout, GateUpLayout::kInterleaved) << "unquantized W13 is interleaved while stacked";
  EXPECT_EQ(p.quant, QuantScheme::kNone);
  EXPECT_EQ(p.activation_dtype, DType::kBF16);
  EXPECT_EQ(p.input_format, InputFormat::kStandard);

  const std::string pre = "model.layers.1.block_sparse_moe.";
  EXPECT_EQ(testing::shape_of(layer.weights.w13), (std::vector<int64_t>{4, 64, 64}));
  EXPECT_EQ(testing::shape_of(layer.weights.w2), (std::vector<int64_t>{4, 64, 32}));
  EXPECT_EQ(layer.weights.w13.dtype(), DType::kBF16);
  for (int e = 0; e < 4; ++e) {
    const std::string ex = fmt::format("{}experts.{}.", pre, e);
    expect_interleaved(layer.weights.w13, e, w[ex + "w1.weight"], w[ex + "w3.weight"]);
    expect_stacked(layer.weights.w2, e, {&w[ex + "w2.weight"]});
  }
  EXPECT_FALSE(layer.weights.w13_bias.defined());
  EXPECT_FALSE(layer.weights.w13_scale.defined());
  EXPECT_FALSE(layer.router_bias.defined());
  EXPECT_FALSE(layer.e_score_correction_bias.defined());
  EXPECT_TRUE(testing::same_bytes(layer.router_weight, w[pre + "gate.weight"]));
  EXPECT_TRUE(layer.storage->is_mapped(layer.router_weight)) << "the router is a view into the file";
  EXPECT_FALSE(layer.storage->is_mapped(layer.weights.w13)) << "stacked weights are owned copies";
  ASSERT_NE(source(layer, "w13"), nullptr);
  EXPECT_TRUE(source(layer, "w13")->copied);
  EXPECT_EQ(source(layer, "w13")->source, pre + "experts.{0..3}.{w1,w3}.weight (gate and up rows interleaved)");
  EXPECT_FALSE(source(layer, "router_weight")->copied);
  EXPECT_TRUE(has_note(layer, "stacked from 12 per-expert tensors"));
  EXPECT_TRUE(has_note(layer, "w13 interleaved while stacked"));
  EXPECT_EQ(layer.storage->owned.size(), 2u) << "one copy each of w13 and w2: interleaving costs no second copy";

  expect_runs_like(layer, [&](const hf::Vec& x, const hf::Vec& logits) {
    return hf::combine(hf::softmax_topk(logits, 2, /*renormalize=*/true), 64, [&](int e) {
      const std::string ex = fmt::format("{}experts.{}.", pre, e);
      return hf::swiglu_expert(hf::matrix(w[ex + "w1.weight"]), hf::matrix(w[ex + "w3.weight"]), hf::matrix(w[ex + "w2.weight"]), x);
    });
  }, kNmseBf16);
}

// CheckpointOptions::gate_up = kConcatenated keeps the checkpoint's order (gate rows, then up rows);
// kInterleaved gives what the default gives. The layer computes the same either way.
TEST(CheckpointMixtral, GateUpOptionChoosesTheStackedLayout) {
  const Sizes s{.E = 4, .K = 2, .H = 64, .I = 32};
  CheckpointWriter w;
  testing::add_mixtral_layer(w, 0, s);
  w.write_config(testing::mixtral_config(s, 1));
  w.write();
  const std::string pre = "model.layers.0.block_sparse_moe.";
  auto oracle = [&](const hf::Vec& x, const hf::Vec& logits) {
    return hf::combine(hf::softmax_topk(logits, 2, /*renormalize=*/true), 64, [&](int e) {
      const std::string ex = fmt::format("{}experts.{}.", pre, e);
      return hf::swiglu_expert(hf::matrix(w[ex + "w1.weight"]), hf::matrix(w[ex + "w3.weight"]), hf::matrix(w[ex + "w2.weight"]), x);
    });
  };

  CheckpointOptions o;
  o.gate_up = GateUpLayout::kConcatenated;
  const MoeLayerCheckpoint concat = load_ok(w.path(), 0, o);
  EXPECT_EQ(concat.problem.gate_up_layout, GateUpLayout::kConcatenated);
  for (int e = 0; e < 4; ++e) {
    const std::string ex = fmt::format("{}experts.{}.", pre, e);
    expect_stacked(concat.weights.w13, e, {&w[ex + "w1.weight"], &w[ex + "w3.weight"]});
  }
  ASSERT_NE(source(concat, "w13"), nullptr);
  EXPECT_EQ(source(concat, "w13")->source, pre + "experts.{0..3}.{w1,w3}.weight (gate rows, then up rows)");
  EXPECT_FALSE(has_note(concat, "w13 interleaved"));
  expect_runs_like(concat, oracle, kNmseBf16);

  o.gate_up = GateUpLayout::kInterleaved;
  const MoeLayerCheckpoint inter = load_ok(w.path(), 0, o);
  const MoeLayerCheckpoint by_default = load_ok(w.path(), 0);
  EXPECT_EQ(inter.problem.gate_up_layout, GateUpLayout::kInterleaved);
  ASSERT_EQ(inter.weights.w13.storage_bytes(), by_default.weights.w13.storage_bytes());
  EXPECT_EQ(std::memcmp(inter.weights.w13.data(), by_default.weights.w13.data(), static_cast<size_t>(inter.weights.w13.storage_bytes())), 0);
  expect_runs_like(inter, oracle, kNmseBf16);
}

// What gate_up cannot do: split fp8 block scales, or undo GPT-OSS's interleave.
TEST(CheckpointGateUp, ConversionsThatCannotBeMadeAreRefused) {
  {
    const Sizes s{.E = 4, .K = 2, .H = 256, .I = 128};
    CheckpointWriter w;
    testing::add_mlp_experts(w, 0, s, /*fp8=*/true);
    w.add("model.layers.0.mlp.gate.e_score_correction_bias", DType::kF32, {s.E}, -0.1, 0.1);
    w.write_config(testing::deepseek_v3_config(s, 1, /*first_k_dense=*/0, /*n_group=*/2, /*topk_group=*/1));
    w.write();
    CheckpointOptions o;
    o.gate_up = GateUpLayout::kInterleaved;
    auto r = load_moe_layer(w.path(), 0, o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(r.status().message().find("gate_up=interleaved: quant=fp8_block"), std::string::npos) << r.status().to_string();
  }
  {
    const Sizes s{.E = 4, .K = 2, .H = 64, .I = 24};
    CheckpointWriter w;
    testing::add_gpt_oss_layer(w, 0, s, /*mxfp4=*/false);
    w.write_config(testing::gpt_oss_config(s, 1, /*mxfp4=*/false));
    w.write();
    CheckpointOptions o;
    o.gate_up = GateUpLayout::kConcatenated;
    auto r = load_moe_layer(w.path(), 0, o);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("gate_up=concatenated"), std::string::npos) << r.status().to_string();
    o.gate_up = GateUpLayout::kInterleaved;  // already so: nothing to do
    EXPECT_TRUE(load_moe_layer(w.path(), 0, o).ok());
  }
}

// ---- Qwen2-MoE / Qwen3-MoE -------------------------------------------------------------------------

TokenOracle qwen_oracle(const CheckpointWriter& w, int layer, const Sizes& s, bool renormalize, double scale = 1.0) {
  return [&w, layer, s, renormalize, scale](const hf::Vec& x, const hf::Vec& logits) {
    return hf::combine(hf::softmax_topk(logits, static_cast<int>(s.K), renormalize, scale), static_cast<size_t>(s.H), [&](int e) {
      const std::string ex = fmt::format("model.layers.{}.mlp.experts.{}.", layer, e);
      return hf::swiglu_expert(hf::matrix(w[ex + "gate_proj.weight"]), hf::matrix(w[ex + "up_proj.weight"]),
                               hf::matrix(w[ex + "down_proj.weight"]), x);
    });
  };
}

TEST(CheckpointQwen2Moe, SharedExpertIsNotedAndMlpOnlyLayersAreDense) {
  const Sizes s{.E = 4, .K = 2, .H = 64, .I = 32};
  CheckpointWriter w;
  testing::add_dense_mlp(w, 0, s.H, 96);
  testing::add_mlp_experts(w, 1, s, /*fp8=*/false);
  w.add("model.layers.1.mlp.shared_expert.gate_proj.weight", DType::kBF16, {64, s.H});
  w.add("model.layers.1.mlp.shared_expert.up_proj.weight", DType::kBF16, {64, s.H});
  w.add("model.layers.1.mlp.shared_expert.down_proj.weight", DType::kBF16, {s.H, 64});
  w.add("model.layers.1.mlp.shared_expert_gate.weight", DType::kBF16, {1, s.H});
  w.write_config(testing::qwen_moe_config("qwen2_moe", s, 2, /*norm_topk_prob=*/false, "[0]"));
  w.write();

  const MoeLayerCheckpoint layer = load_ok(w.path(), 1);
  EXPECT_EQ(layer.family, ModelFamily::kQwen2Moe);
  EXPECT_EQ(layer.problem.routing.method, RoutingMethod::kSoftmaxTopK);
  EXPECT_FALSE(layer.problem.routing.renormalize);
  EXPECT_EQ(layer.problem.intermediate, 32) << "moe_intermediate_size, not intermediate_size";
  EXPECT_TRUE(has_note(layer, "shared expert present (model.layers.1.mlp.shared_expert.*, gated by model.layers.1.mlp.shared_expert_gate.weight)"));
  for (int e = 0; e < 4; ++e) {
    const std::string ex = fmt::format("model.layers.1.mlp.experts.{}.", e);
    expect_interleaved(layer.weights.w13, e, w[ex + "gate_proj.weight"], w[ex + "up_proj.weight"]);
    expect_stacked(layer.weights.w2, e, {&w[ex + "down_proj.weight"]});
  }
  expect_runs_like(layer, qwen_oracle(w, 1, s, false), kNmseBf16);

  const auto dense = load_moe_layer(w.path(), 0);
  MOEKIT_EXPECT_ERROR(dense.status(), StatusCode::kInvalidArgument, "layer 0 is dense (mlp_only_layers=[0])", "not an MoE layer");
}

TEST(CheckpointQwen3Moe, ShardedCheckpointOpensOnlyTheShardsItNeeds) {
  const Sizes s{.E = 4, .K = 2, .H = 64, .I = 32};
  CheckpointWriter w;
  testing::add_mlp_experts(w, 0, s, false);
  testing::add_mlp_experts(w, 1, s, false);
  w.add("model.embed_tokens.weight", DType::kBF16, {16, s.H});
  w.write_config(testing::qwen_moe_config("qwen3_moe", s, 2, /*norm_topk_prob=*/true));
  w.write(/*shards=*/3);
  ASSERT_FALSE(std::filesystem::exists(w / "model.safetensors"));

  const MoeLayerCheckpoint layer = load_ok(w.path(), 1);
  EXPECT_EQ(layer.family, ModelFamily::kQwen3Moe);
  EXPECT_TRUE(layer.problem.routing.renormalize);
  EXPECT_EQ(layer.storage->files.size(), 3u) << "the layer's tensors are dealt over all three shards";
  EXPECT_TRUE(layer.storage->is_mapped(layer.router_weight));
  expect_runs_like(layer, qwen_oracle(w, 1, s, true), kNmseBf16);
  const MoeLayerCheckpoint layer0 = load_ok(w.path(), 0);
  expect_stacked(layer0.weights.w2, 3, {&w["model.layers.0.mlp.experts.3.down_proj.weight"]});
}

TEST(CheckpointQwen3Moe, SingleFileWithoutConfigInfersSizes) {
  const Sizes s{.E = 4, .K = 2, .H = 64, .I = 32};
  CheckpointWriter w;
  testing::add_mlp_experts(w, 5, s, false);
  w.write();
  const auto file = w / "model.safetensors";

  const MoeLayerCheckpoint layer = load_ok(file, 5, {.model_type = "qwen3_moe", .top_k = 2});
  EXPECT_EQ(layer.problem.num_experts, 4);
  EXPECT_EQ(layer.problem.hidden, 64);
  EXPECT_EQ(layer.problem.intermediate, 32);
  EXPECT_EQ(layer.problem.top_k, 2);
  EXPECT_FALSE(layer.problem.routing.renormalize) << "Qwen3MoeConfig's default norm_topk_prob";
  EXPECT_EQ(layer.problem.activation_dtype, DType::kBF16) << "the weights' dtype";
  EXPECT_TRUE(has_note(layer, "no config.json: sizes inferred from the tensors"));
  expect_runs_like(layer, qwen_oracle(w, 5, s, false), kNmseBf16);

  MOEKIT_EXPECT_ERROR(load_moe_layer(file, 5, {.model_type = "qwen3_moe"}).status(), StatusCode::kInvalidArgument, "top_k",
                      "CheckpointOptions::top_k");
  MOEKIT_EXPECT_ERROR(load_moe_layer(file, 5, {.top_k = 2}).status(), StatusCode::kInvalidArgument, "CheckpointOptions::model_type");
  MOEKIT_EXPECT_ERROR(load_moe_layer(file, 4, {.model_type = "qwen3_moe", .top_k = 2}).status(), StatusCode::kNotFound,
                      "layer 4 (qwen3_moe): missing tensor 'model.layers.4.mlp.gate.weight'");

  // The same file with a config given explicitly reads it.
  w.write_config(testing::qwen_moe_config("qwen3_moe", s, 6, true));
  const MoeLayerCheckpoint with_config = load_ok(file, 5, {.config_path = w / "config.json"});
  EXPECT_TRUE(with_config.problem.routing.renormalize);
  EXPECT_FALSE(has_note(with_config, "no config.json"));
}

// ---- DeepSeek ----------------------------------------------------------------------------------------

TEST(CheckpointDeepSeekV3, Fp8BlockWeightsScalesAndGroupedRouting) {
  const Sizes s{.E = 4, .K = 2, .H = 256, .I = 128};
  CheckpointWriter w;
  testing::add_dense_mlp(w, 0, s.H, 384);
  for (int l : {1, 2}) {
    testing::add_mlp_experts(w, l, s, /*fp8=*/true);
    w.add(fmt::format("model.layers.{}.mlp.gate.e_score_correction_bias", l), DType::kF32, {s.E}, -0.1, 0.1);
    w.add(fmt::format("model.layers.{}.mlp.shared_experts.gate_proj.weight", l), DType::kE4M3, {s.I, s.H});
    w.add(fmt::format("model.layers.{}.mlp.shared_experts.gate_proj.weight_scale_inv", l), DType::kF32, {1, 2});
  }
  w.write_config(testing::deepseek_v3_config(s, 3, /*first_k_dense=*/1, /*n_group=*/2, /*topk_group=*/1));
  w.write();

  const MoeLayerCheckpoint layer = load_ok(w.path(), 2);
  const MoeProblem& p = layer.problem;
  EXPECT_EQ(layer.family, ModelFamily::kDeepSeekV3);
  EXPECT_EQ(p.num_experts, 4);
  EXPECT_EQ(p.intermediate, 128);
  EXPECT_EQ(p.quant, QuantScheme::kFp8Block);
  EXPECT_EQ(p.activation_dtype, DType::kBF16);
  EXPECT_EQ(p.routing.method, RoutingMethod::kDeepSeekV3);
  EXPECT_EQ(p.routing.n_group, 2);
  EXPECT_EQ(p.routing.topk_group, 1);
  EXPECT_TRUE(p.routing.renormalize);
  EXPECT_EQ(p.routing.routed_scaling_factor, 2.5f);

  const std::string pre = "model.layers.2.mlp.";
  EXPECT_EQ(layer.weights.w13.dtype(), DType::kE4M3);
  EXPECT_EQ(testing::shape_of(layer.weights.w13), (std::vector<int64_t>{4, 256, 256}));
  EXPECT_EQ(layer.weights.w13_scale.dtype(), DType::kF32);
  EXPECT_EQ(testing::shape_of(layer.weights.w13_scale), (std::vector<int64_t>{4, 2, 2})) << "[E, ceil(2I/128), ceil(H/128)]";
  EXPECT_EQ(testing::shape_of(layer.weights.w2_scale), (std::vector<int64_t>{4, 2, 1})) << "[E, ceil(H/128), ceil(I/128)]";
  for (int e = 0; e < 4; ++e) {
    const std::string ex = fmt::format("{}experts.{}.", pre, e);
    expect_stacked(layer.weights.w13, e, {&w[ex + "gate_proj.weight"], &w[ex + "up_proj.weight"]});
    expect_stacked(layer.weights.w13_scale, e, {&w[ex + "gate_proj.weight_scale_inv"], &w[ex + "up_proj.weight_scale_inv"]});
    expect_stacked(layer.weights.w2, e, {&w[ex + "down_proj.weight"]});
    expect_stacked(layer.weights.w2_scale, e, {&w[ex + "down_proj.weight_scale_inv"]});
  }
  EXPECT_TRUE(testing::same_bytes(layer.e_score_correction_bias, w[pre + "gate.e_score_correction_bias"]));
  EXPECT_TRUE(layer.storage->is_mapped(layer.e_score_correction_bias));
  EXPECT_TRUE(has_note(layer, "shared experts present (model.layers.2.mlp.shared_experts.*) but not loaded"));

  const hf::Vec bias = hf::vector(w[pre + "gate.e_score_correction_bias"]);
  // Activations are quantized to e4m3 per 1x128 block (fp8_block); transformers' dequantized-weight
  // computation does not, hence the looser bound.
  expect_runs_like(layer, [&](const hf::Vec& x, const hf::Vec& logits) {
    return hf::combine(hf::deepseek_v3(logits, bias, 2, 2, 1, true, 2.5), 256, [&](int e) {
      const std::string ex = fmt::format("{}experts.{}.", pre, e);
      auto deq = [&](const char* proj) { return hf::dequant_fp8_block(w[ex + proj + ".weight"], w[ex + proj + ".weight_scale_inv"]); };
      return hf::swiglu_expert(deq("gate_proj"), deq("up_proj"), deq("down_proj"), x);
    });
  }, 1e-2);

  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 0).status(), StatusCode::kInvalidArgument,
                      "layer 0 is dense (first_k_dense_replace=1): not an MoE layer");
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 3).status(), StatusCode::kInvalidArgument, "layer_index=3 is out of range",
                      "num_hidden_layers=3");
}

TEST(CheckpointDeepSeekV2, GreedySoftmaxRoutingWithScaling) {
  const Sizes s{.E = 4, .K = 2, .H = 64, .I = 32};
  CheckpointWriter w;
  testing::add_dense_mlp(w, 0, s.H, 256);
  testing::add_mlp_experts(w, 1, s, false);
  w.add("model.layers.1.mlp.shared_experts.gate_proj.weight", DType::kBF16, {64, s.H});
  w.write_config(testing::deepseek_v2_config(s, 2, "greedy", 1, 1));
  w.write();
  const MoeLayerCheckpoint layer = load_ok(w.path(), 1);
  EXPECT_EQ(layer.family, ModelFamily::kDeepSeekV2);
  EXPECT_EQ(layer.problem.routing.method, RoutingMethod::kSoftmaxTopK);
  EXPECT_FALSE(layer.problem.routing.renormalize);
  EXPECT_EQ(layer.problem.routing.routed_scaling_factor, 1.5f);
  EXPECT_EQ(layer.problem.quant, QuantScheme::kNone);
  EXPECT_FALSE(layer.e_score_correction_bias.defined());
  EXPECT_TRUE(has_note(layer, "shared experts present"));
  expect_runs_like(layer, qwen_oracle(w, 1, s, false, 1.5), kNmseBf16);

  // group_limited_greedy: fine when the group limit removes nothing, an error otherwise.
  w.write_config(testing::deepseek_v2_config(s, 2, "group_limited_greedy", 2, 2));
  const MoeLayerCheckpoint all_groups = load_ok(w.path(), 1);
  EXPECT_EQ(all_groups.problem.routing.method, RoutingMethod::kSoftmaxTopK);
  EXPECT_TRUE(has_note(all_groups, "keeps every group"));
  w.write_config(testing::deepseek_v2_config(s, 2, "group_limited_greedy", 2, 1));
  MOEKIT_EXPECT_ERROR(load_moe_layer(w.path(), 1).status(), StatusCode::kUnsupported, "group_limited_greedy", "n_group=2",
                      "topk_group=1", "not expressible");
}

// ---- GPT-OSS -----------------------------------------------------------------------------------------

// The checkpoint's fp4 table and exponent bias are moekit's e2m1 and e8m0: reinterpreting is exact.
TEST(CheckpointGptOss, Mxfp4ConventionsAreMoekits) {
  for (int code = 0; code < 16; ++code) EXPECT_EQ(decode_e2m1(static_cast<uint8_t>(code)), hf::kFp4Values[code]) << code;
  for (int code = 0; code < 255; ++code) EXPECT_EQ(decode_e8m0(static_cast<uint8_t>(code)), std::ldexp(1.0, code - 127)) << code;
  const uint8_t byte = 0x3A;  // low nibble 0xA (-1.0) is element 0, high nibble 0x3 (1.5) element 1
  EXPECT_EQ(load_element(&byte, DType::kE2M1, 0), hf::kFp4Values[byte & 0x0F]);
  EXPECT_EQ(load_element(&byte, DType::kE2M1, 1), hf::kFp4Values[byte >> 4]);
}

TEST(CheckpointGptOss, Mxfp4BlocksAndScalesAreZeroCopyViews) {
  const Sizes s{.E = 4, .K = 2, .H = 64, .I = 32};
  CheckpointWriter w;
  testing::add_gpt_oss_layer(w, 0, s, /*mxfp4=*/true);
  testing::add_gpt_oss_layer(w, 1, s, /*mxfp4=*/true);
  w.write_config(testing::gpt_oss_config(s, 2, /*mxfp4=*/true));
  w.write();
  const MoeLayerCheckpoint layer = load_ok(w.path(), 1);
  const MoeProblem& p = layer.problem;
  EXPECT_EQ(layer.family, ModelFamily::kGptOss);
  EXPECT_EQ(p.num_experts, 4);
  EXPECT_EQ(p.top_k, 2);
  EXPECT_EQ(p.hidden, 64);
  EXPECT_EQ(p.intermediate, 32);
  EXPECT_EQ(p.quant, QuantScheme::kMxfp4);
  EXPECT_EQ(p.routing.method, RoutingMethod::kTopKSoftmax);
  EXPECT_EQ(p.activation.kind, Activation::kSwiGLUClamped);
  EXPECT_FLOAT_EQ(p.activation.alpha, 1.702f);
  EXPECT_FLOAT_EQ(p.activation.limit, 7.0f);
  EXPECT_EQ(p.gate_up_layout, GateUpLayout::kInterleaved);
  EXPECT_EQ(p.activation_dtype, DType::kBF16);

  const std::string ex = "model.layers.1.mlp.experts.";
  const MoeWeights& wt = layer.weights;
  EXPECT_EQ(wt.w13.dtype(), DType::kE2M1);
  EXPECT_EQ(testing::shape_of(wt.w13), (std::vector<int64_t>{4, 64, 64}));
  EXPECT_EQ(wt.w13_scale.dtype(), DType::kE8M0);
  EXPECT_EQ(testing::shape_of(wt.w13_scale), (std::vector<int64_t>{4, 64, 2}));
  EXPECT_EQ(wt.w2.dtype(), DType::kE2M1);
  EXPECT_EQ(testing::shape_of(wt.w2), (std::vector<int64_t>{4, 64, 32}));
  EXPECT_EQ(testing::shape_of(wt.w2_scale), (std::vector<int64_t>{4, 64, 1}));
  EXPECT_EQ(testing::shape_of(wt.w13_bias), (std::vector<int64_t>{4, 64}));
  EXPECT_EQ(testing::shape_of(wt.w2_bias), (std::vector<int64_t>{4, 64}));
  EXPECT_TRUE(testing::same_bytes(wt.w13, w[ex + "gate_up_proj_blocks"]));
  EXPECT_TRUE(testing::same_bytes(wt.w13_scale, w[ex + "gate_up_proj_scales"]));
  EXPECT_TRUE(testing::same_bytes(wt.w2, w[ex + "down_proj_blocks"]));
  EXPECT_TRUE(testing::same_bytes(wt.w2_scale, w[ex + "down_proj_scales"]));
  EXPECT_TRUE(testing::same_bytes(wt.w13_bias, w[ex + "gate_up_proj_bias"]));
  EXPECT_TRUE(testing::same_bytes(layer.router_bias, w["model.layers.1.mlp.router.bias"]));
  for (const TensorView* v : {&wt.w13, &wt.w13_scale, &wt.w2, &wt.w2_scale, &wt.w13_bias, &wt.w2_bias, &layer.router_weight, &layer.router_bias})
    EXPECT_TRUE(layer.storage->is_mapped(*v)) << v->describe() << " should be a view into the file";
  EXPECT_TRUE(layer.storage->owned.empty()) << "nothing is copied";
  for (const auto& src : layer.sources) EXPECT_FALSE(src.copied) << src.field;

  const double limit = 7.0, alpha = 1.702;
  expect_runs_like(layer, [&](const hf::Vec& x, const hf::Vec& logits) {
    return hf::combine(hf::gpt_oss(logits, 2), 64, [&](int e) {
      return hf::gpt_oss_expert(hf::dequant_mxfp4(w[ex + "gate_up_proj_blocks"], w[ex + "gate_up_proj_scales"], e),
                                hf::vector(w[ex + "gate_up_proj_bias"], e),
                                hf::dequant_mxfp4(w[ex + "down_proj_blocks"], w[ex + "down_proj_scales"], e),
                                hf::vector(w[ex + "down_proj_bias"], e), x, alpha, limit);
    });
  }, kNmseBf16);
}

TEST(CheckpointGptOss, DequantizedBf16IsTransposedIntoOwnedTensors) {
  const Sizes s{.E = 4, .K = 2, .H = 64, .I = 24};
  CheckpointWriter w;
  testing::add_gpt_oss_layer(w, 0, s, /*mxfp4=*/false);
  w.write_config(testing::gpt_oss_config(s, 1, /*mxfp4=*/false));
  w.write();
  const MoeLayerCheckpoint layer = load_ok(w.path(), 0);
  EXPECT_EQ(layer.problem.quant, QuantScheme::kNone);
  EXPECT_EQ(layer.problem.intermediate, 24);
  EXPECT_EQ(layer.problem.gate_up_layout, GateUpLayout::kInterleaved);
  const std::string ex = "model.layers.0.mlp.experts.";
  const MoeWeights& wt = layer.weights;
  ASSERT_EQ(testing::shape_of(wt.w13), (std::vector<int64_t>{4, 48, 64}));
  ASSERT_EQ(testing::shape_of(wt.w2), (std::vector<int64_t>{4, 64, 24}));
  const TensorView gu = w[ex + "gate_up_proj"], down = w[ex + "down_proj"];
  for (int64_t e = 0; e < 4; ++e)
    for (int64_t n = 0; n < 48; ++n)
      for (int64_t k = 0; k < 64; ++k)
        ASSERT_EQ(wt.w13.data_as<const uint16_t>()[(e * 48 + n) * 64 + k], gu.data_as<const uint16_t>()[(e * 64 + k) * 48 + n]);
  for (int64_t e = 0; e < 4; ++e)
    for (int64_t n = 0; n < 64; ++n)
      for (int64_t k = 0; k < 24; ++k)
        ASSERT_EQ(wt.w2.data_as<const uint16_t>()[(e * 64 + n) * 24 + k], down.data_as<const uint16_t>()[(e * 24 + k) * 64 + n]);
  EXPECT_FALSE(layer.storage->is_mapped(wt.w13));
  EXPECT_TRUE(layer.storage->is_mapped(wt.w13_bias));
  EXPECT_TRUE(source(layer, "w13")->copied);
  EXPECT_TRUE(has_note(layer, "transposed into owned tensors"));

  expect_runs_like(layer, [&](const hf::Vec& x, const hf::Vec& logits) {
    // GptOssExperts: x @ gate_up_proj[e] with gate_up_proj [H, 2I] (in x out).
    return hf::combine(hf::gpt_oss(logits, 2), 64, [&](int e) {
      return hf::gpt_oss_expert(hf::matrix(gu, e).transposed(), hf::vector(w[ex + "gate_up_proj_bias"], e),
                                hf::matrix(down, e).transposed(), hf::vector(w[ex + "down_proj_bias"], e), x, 1.702, 7.0);
    });
  }, kNmseBf16);
}

}  // namespace
}  // namespace moekit
