// What the checkpoint loader takes from config.json (or from CheckpointOptions when there is none).
// Internal to moekit_io.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "moekit/checkpoint.h"
#include "moekit/moe_problem.h"
#include "moekit/status.h"

namespace moekit::io {

struct LayerConfig {
  ModelFamily family = ModelFamily::kMixtral;
  bool has_config = false;
  std::string config_name;  // "config.json" path, for messages

  // Sizes: from the config when it has them, otherwise inferred from the tensors by the loader.
  std::optional<int64_t> num_hidden_layers;
  std::optional<int64_t> num_experts;
  std::optional<int64_t> hidden;
  std::optional<int64_t> intermediate;
  std::string num_experts_key;    // the config key each size comes from, for messages
  std::string intermediate_key;
  int64_t top_k = 0;

  RoutingParams routing;
  ActivationParams activation;
  GateUpLayout gate_up_layout = GateUpLayout::kConcatenated;
  // Whether the per-expert loader interleaves an unquantized gated W13 while it stacks it (false when
  // CheckpointOptions::gate_up asks for kConcatenated; set by read_layer_config with the other options).
  bool interleave_stacked_w13 = true;
  // From quantization_config; nullopt without a config (the loader infers it from the dtypes).
  std::optional<QuantScheme> quant;
  std::optional<DType> torch_dtype;

  // Dense-layer rules (only applied with a config).
  int64_t first_k_dense_replace = 0;  // DeepSeek
  int64_t moe_layer_freq = 1;         // DeepSeek
  int64_t decoder_sparse_step = 1;    // Qwen
  std::vector<int64_t> mlp_only_layers;  // Qwen

  std::vector<std::string> notes;
};

// `config` may be null (no config.json): then options.model_type and options.top_k are required and
// every other value takes the transformers default for the model type.
Result<LayerConfig> read_layer_config(const nlohmann::json* config, const std::string& config_name, const CheckpointOptions& options);

// Range and dense-layer checks for `layer`.
Status check_moe_layer_index(const LayerConfig& config, int layer);

}  // namespace moekit::io
