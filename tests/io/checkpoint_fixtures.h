// Small synthetic Hugging Face checkpoints for the loader tests: the real tensor names, dtypes and
// config.json keys of each family, at tiny sizes, written with moekit's safetensors writer (whose
// output is checked byte for byte against the reference writer in test_safetensors.cpp).
#pragma once

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "io/io_test_util.h"
#include "moekit/safetensors.h"

namespace moekit::testing {

class CheckpointWriter {
 public:
  const std::filesystem::path& path() const { return dir_.path(); }
  std::filesystem::path operator/(std::string_view name) const { return dir_ / name; }

  // A tensor of uniform random values in [lo, hi), rounded to `dtype` (deterministic per name).
  const Tensor& add(const std::string& name, DType dtype, std::vector<int64_t> shape, double lo = -0.5, double hi = 0.5) {
    Tensor t = make_tensor(dtype, std::move(shape));
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    std::uniform_real_distribution<double> dist(lo, hi);
    fill_values(t, [&](int64_t) { return dist(rng); });
    return tensors_[name] = std::move(t);
  }
  // A u8 tensor of random bytes in [lo, hi] (MXFP4 blocks: any byte; scales: exponents near 127).
  const Tensor& add_bytes(const std::string& name, std::vector<int64_t> shape, int lo = 0, int hi = 255) {
    Tensor t = make_tensor(DType::kU8, std::move(shape));
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    std::uniform_int_distribution<int> dist(lo, hi);
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<uint8_t>()[i] = static_cast<uint8_t>(dist(rng));
    return tensors_[name] = std::move(t);
  }
  const Tensor& operator[](const std::string& name) const { return tensors_.at(name); }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  void remove(const std::string& name) { tensors_.erase(name); }

  void write_config(const std::string& json) { write_file(dir_ / "config.json", json); }

  // model.safetensors, or `shards` files model-0000k-of-0000n.safetensors (tensors dealt round-robin
  // in name order, so one layer's experts span shards) and model.safetensors.index.json.
  void write(int shards = 1) {
    std::vector<std::vector<NamedTensor>> parts(static_cast<size_t>(shards));
    std::string weight_map;
    int i = 0;
    for (const auto& [name, t] : tensors_) {
      const int s = i++ % shards;
      parts[static_cast<size_t>(s)].push_back({name, t.view()});
      weight_map += fmt::format("{}\n    \"{}\": \"{}\"", weight_map.empty() ? "" : ",", name, shard_name(s, shards));
    }
    for (int s = 0; s < shards; ++s) {
      const auto file = shards == 1 ? dir_ / "model.safetensors" : dir_ / shard_name(s, shards);
      const Status st = write_safetensors(file, parts[static_cast<size_t>(s)], {{"format", "pt"}});
      if (!st.ok()) throw Error(st);
    }
    if (shards > 1) write_file(dir_ / "model.safetensors.index.json", "{\n  \"metadata\": {\"total_size\": 0},\n  \"weight_map\": {" + weight_map + "\n  }\n}\n");
  }

 private:
  static std::string shard_name(int s, int n) { return fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, n); }
  TempDir dir_;
  std::map<std::string, Tensor> tensors_;
};

// ---- Families ----------------------------------------------------------------------------------

struct Sizes {
  int64_t E, K, H, I;
};

inline void add_attention(CheckpointWriter& w, int layer, int64_t H) {
  const std::string p = fmt::format("model.layers.{}.", layer);
  w.add(p + "self_attn.q_proj.weight", DType::kBF16, {H, H});
  w.add(p + "input_layernorm.weight", DType::kBF16, {H});
  w.add(p + "post_attention_layernorm.weight", DType::kBF16, {H});
}

inline void add_mixtral_layer(CheckpointWriter& w, int layer, const Sizes& s) {
  const std::string p = fmt::format("model.layers.{}.block_sparse_moe.", layer);
  add_attention(w, layer, s.H);
  w.add(p + "gate.weight", DType::kBF16, {s.E, s.H});
  for (int64_t e = 0; e < s.E; ++e) {
    w.add(fmt::format("{}experts.{}.w1.weight", p, e), DType::kBF16, {s.I, s.H});
    w.add(fmt::format("{}experts.{}.w3.weight", p, e), DType::kBF16, {s.I, s.H});
    w.add(fmt::format("{}experts.{}.w2.weight", p, e), DType::kBF16, {s.H, s.I});
  }
}

// Qwen2/3-MoE and DeepSeek: mlp.gate + mlp.experts.{e}.{gate,up,down}_proj. fp8: F8_E4M3 weights with
// F32 weight_scale_inv blocks of 128x128.
inline void add_mlp_experts(CheckpointWriter& w, int layer, const Sizes& s, bool fp8) {
  const std::string p = fmt::format("model.layers.{}.mlp.", layer);
  add_attention(w, layer, s.H);
  w.add(p + "gate.weight", DType::kBF16, {s.E, s.H});
  auto blocks = [](int64_t n) { return (n + 127) / 128; };
  for (int64_t e = 0; e < s.E; ++e) {
    for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
      const bool down = std::string_view(proj) == "down_proj";
      const int64_t N = down ? s.H : s.I, K = down ? s.I : s.H;
      const std::string name = fmt::format("{}experts.{}.{}.weight", p, e, proj);
      if (fp8) {
        w.add(name, DType::kE4M3, {N, K}, -3.0, 3.0);
        w.add(name + "_scale_inv", DType::kF32, {blocks(N), blocks(K)}, 0.01, 0.1);
      } else {
        w.add(name, DType::kBF16, {N, K});
      }
    }
  }
}

inline void add_dense_mlp(CheckpointWriter& w, int layer, int64_t H, int64_t inter) {
  const std::string p = fmt::format("model.layers.{}.mlp.", layer);
  add_attention(w, layer, H);
  w.add(p + "gate_proj.weight", DType::kBF16, {inter, H});
  w.add(p + "up_proj.weight", DType::kBF16, {inter, H});
  w.add(p + "down_proj.weight", DType::kBF16, {H, inter});
}

inline void add_gpt_oss_layer(CheckpointWriter& w, int layer, const Sizes& s, bool mxfp4) {
  const std::string p = fmt::format("model.layers.{}.mlp.", layer);
  add_attention(w, layer, s.H);
  w.add(p + "router.weight", DType::kBF16, {s.E, s.H});
  w.add(p + "router.bias", DType::kBF16, {s.E});
  if (mxfp4) {
    w.add_bytes(p + "experts.gate_up_proj_blocks", {s.E, 2 * s.I, s.H / 32, 16});
    w.add_bytes(p + "experts.gate_up_proj_scales", {s.E, 2 * s.I, s.H / 32}, 122, 128);
    w.add_bytes(p + "experts.down_proj_blocks", {s.E, s.H, s.I / 32, 16});
    w.add_bytes(p + "experts.down_proj_scales", {s.E, s.H, s.I / 32}, 122, 128);
  } else {
    w.add(p + "experts.gate_up_proj", DType::kBF16, {s.E, s.H, 2 * s.I});
    w.add(p + "experts.down_proj", DType::kBF16, {s.E, s.I, s.H});
  }
  w.add(p + "experts.gate_up_proj_bias", DType::kBF16, {s.E, 2 * s.I});
  w.add(p + "experts.down_proj_bias", DType::kBF16, {s.E, s.H});
}

// ---- config.json files, shaped like the published ones ----------------------------------------

inline std::string mixtral_config(const Sizes& s, int layers) {
  return fmt::format(R"({{
  "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "attention_dropout": 0.0, "bos_token_id": 1,
  "eos_token_id": 2, "hidden_act": "silu", "hidden_size": {}, "initializer_range": 0.02, "intermediate_size": {},
  "max_position_embeddings": 32768, "num_attention_heads": 4, "num_experts_per_tok": {}, "num_hidden_layers": {},
  "num_key_value_heads": 2, "num_local_experts": {}, "output_router_logits": false, "rms_norm_eps": 1e-05,
  "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02, "sliding_window": null, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.36.0.dev0", "use_cache": true, "vocab_size": 32000
}})",
                     s.H, s.I, s.K, layers, s.E);
}

inline std::string qwen_moe_config(std::string_view model_type, const Sizes& s, int layers, bool norm_topk_prob,
                                   std::string_view mlp_only_layers = "[]") {
  return fmt::format(R"({{
  "architectures": ["Qwen3MoeForCausalLM"], "model_type": "{}", "attention_bias": false, "decoder_sparse_step": 1,
  "hidden_act": "silu", "hidden_size": {}, "intermediate_size": 96, "max_position_embeddings": 40960,
  "mlp_only_layers": {}, "moe_intermediate_size": {}, "norm_topk_prob": {}, "num_attention_heads": 4,
  "num_experts": {}, "num_experts_per_tok": {}, "num_hidden_layers": {}, "num_key_value_heads": 2,
  "output_router_logits": false, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
  "shared_expert_intermediate_size": 64, "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936
}})",
                     model_type, s.H, mlp_only_layers, s.I, norm_topk_prob ? "true" : "false", s.E, s.K, layers);
}

inline std::string deepseek_v3_config(const Sizes& s, int layers, int first_k_dense, int n_group, int topk_group) {
  return fmt::format(R"({{
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "attention_bias": false,
  "first_k_dense_replace": {}, "hidden_act": "silu", "hidden_size": {}, "intermediate_size": 384,
  "kv_lora_rank": 64, "moe_intermediate_size": {}, "moe_layer_freq": 1, "n_group": {}, "n_routed_experts": {},
  "n_shared_experts": 1, "norm_topk_prob": true, "num_attention_heads": 4, "num_experts_per_tok": {},
  "num_hidden_layers": {}, "num_key_value_heads": 4, "num_nextn_predict_layers": 1, "q_lora_rank": 96,
  "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
  "quantization_config": {{"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}},
  "rms_norm_eps": 1e-06, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "topk_group": {},
  "topk_method": "noaux_tc", "torch_dtype": "bfloat16", "v_head_dim": 32, "vocab_size": 129280
}})",
                     first_k_dense, s.H, s.I, n_group, s.E, s.K, layers, topk_group);
}

inline std::string deepseek_v2_config(const Sizes& s, int layers, std::string_view topk_method, int n_group, int topk_group) {
  return fmt::format(R"({{
  "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "first_k_dense_replace": 1,
  "hidden_act": "silu", "hidden_size": {}, "intermediate_size": 256, "kv_lora_rank": 64, "moe_intermediate_size": {},
  "moe_layer_freq": 1, "n_group": {}, "n_routed_experts": {}, "n_shared_experts": 2, "norm_topk_prob": false,
  "num_attention_heads": 4, "num_experts_per_tok": {}, "num_hidden_layers": {}, "routed_scaling_factor": 1.5,
  "scoring_func": "softmax", "topk_group": {}, "topk_method": "{}", "torch_dtype": "bfloat16", "vocab_size": 102400
}})",
                     s.H, s.I, n_group, s.E, s.K, layers, topk_group, topk_method);
}

inline std::string gpt_oss_config(const Sizes& s, int layers, bool mxfp4) {
  const std::string quant = mxfp4 ? R"("quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn",
    "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"},)"
                                  : "";
  return fmt::format(R"({{
  "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "attention_bias": true, "attention_dropout": 0.0,
  "experts_per_token": {}, "head_dim": 16, "hidden_act": "silu", "hidden_size": {}, "initial_context_length": 4096,
  "initializer_range": 0.02, "intermediate_size": {}, "layer_types": ["sliding_attention", "full_attention"],
  "max_position_embeddings": 131072, "num_attention_heads": 4, "num_experts_per_tok": {}, "num_hidden_layers": {},
  "num_key_value_heads": 2, "num_local_experts": {}, "output_router_logits": false, {}
  "rms_norm_eps": 1e-05, "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128,
  "swiglu_limit": 7.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 201088
}})",
                     s.K, s.H, s.I, s.K, layers, s.E, quant);
}

}  // namespace moekit::testing
