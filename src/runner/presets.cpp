// The published MoE layers. Sources: each model's config.json on Hugging Face (num_local_experts /
// n_routed_experts, num_experts_per_tok, hidden_size, moe_intermediate_size / intermediate_size,
// norm_topk_prob, n_group, topk_group, routed_scaling_factor, swiglu_limit, quantization_config).
#include <algorithm>
#include <cctype>
#include <string>

#include "moekit/presets.h"

namespace moekit {
namespace {

const ModelPreset kPresets[] = {
    {"mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1",
     {.num_experts = 8, .top_k = 2, .hidden = 4096, .intermediate = 14336,
      .routing = {.method = RoutingMethod::kTopKSoftmax},
      .activation = {.kind = Activation::kSwiGLU}},
     "bf16; top-2 logits then softmax over the two"},
    {"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B",
     {.num_experts = 128, .top_k = 8, .hidden = 2048, .intermediate = 768,
      .routing = {.method = RoutingMethod::kSoftmaxTopK, .renormalize = true},
      .activation = {.kind = Activation::kSwiGLU}},
     "bf16; norm_topk_prob=true; no shared expert"},
    {"deepseek-v3", "deepseek-ai/DeepSeek-V3",
     {.num_experts = 256, .top_k = 8, .hidden = 7168, .intermediate = 2048,
      .routing = {.method = RoutingMethod::kDeepSeekV3, .renormalize = true, .n_group = 8, .topk_group = 4,
                  .routed_scaling_factor = 2.5f},
      .activation = {.kind = Activation::kSwiGLU},
      .quant = QuantScheme::kFp8Block},
     "fp8 e4m3 weights with 128x128 weight_scale_inv; 1 shared expert (not part of this layer); layers 0-2 are dense"},
    {"gpt-oss-120b", "openai/gpt-oss-120b",
     {.num_experts = 128, .top_k = 4, .hidden = 2880, .intermediate = 2880,
      .routing = {.method = RoutingMethod::kTopKSoftmax},
      .activation = {.kind = Activation::kSwiGLUClamped, .alpha = 1.702f, .limit = 7.0f},
      .gate_up_layout = GateUpLayout::kInterleaved,
      .quant = QuantScheme::kMxfp4},
     "MXFP4 experts with bf16 activations; the router has a bias (add it to the logits); gate_up_proj interleaved, with biases"},
    {"gpt-oss-20b", "openai/gpt-oss-20b",
     {.num_experts = 32, .top_k = 4, .hidden = 2880, .intermediate = 2880,
      .routing = {.method = RoutingMethod::kTopKSoftmax},
      .activation = {.kind = Activation::kSwiGLUClamped, .alpha = 1.702f, .limit = 7.0f},
      .gate_up_layout = GateUpLayout::kInterleaved,
      .quant = QuantScheme::kMxfp4},
     "as gpt-oss-120b with 32 experts"},
    {"qwen2-57b-a14b", "Qwen/Qwen2-57B-A14B",
     {.num_experts = 64, .top_k = 8, .hidden = 3584, .intermediate = 2560,
      .routing = {.method = RoutingMethod::kSoftmaxTopK, .renormalize = false},
      .activation = {.kind = Activation::kSwiGLU}},
     "bf16; norm_topk_prob=false; a gated shared expert (not part of this layer)"},
    {"llama4-scout", "meta-llama/Llama-4-Scout-17B-16E",
     {.num_experts = 16, .top_k = 1, .hidden = 5120, .intermediate = 8192,
      .routing = {.method = RoutingMethod::kLlama4},
      .activation = {.kind = Activation::kSwiGLU},
      .apply_router_weight_on_input = true},
     "bf16; sigmoid of the top-1 logit scales the input; a shared expert (not part of this layer)"},
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::span<const ModelPreset> model_presets() { return kPresets; }

Result<ModelPreset> find_preset(std::string_view name) {
  std::string known;
  for (const auto& p : kPresets) {
    if (p.name == lower(name)) return p;
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  return Status::NotFound("preset '" + std::string(name) + "' is not known (known: " + known + ")");
}

}  // namespace moekit
