// One MoE layer of a Hugging Face checkpoint as a moekit problem and weights: load_moe_layer reads
// config.json and the safetensors file(s), checks every tensor's presence, dtype and shape, and fills
// MoeProblem and MoeWeights exactly as docs/quantization.md specifies for the scheme. Families:
// Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek-V2, DeepSeek-V3 (incl. FP8 block-scale weights) and GPT-OSS
// (MXFP4 or bf16). docs/checkpoints.md lists the tensor names, the config fields read, and what is
// copied versus mapped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "moekit/dtype.h"
#include "moekit/moe_problem.h"
#include "moekit/safetensors.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit {

enum class ModelFamily : uint8_t { kMixtral, kQwen2Moe, kQwen3Moe, kDeepSeekV2, kDeepSeekV3, kGptOss };

// The config.json model_type: "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "gpt_oss".
std::string_view model_family_name(ModelFamily f);
std::optional<ModelFamily> model_family_from_type(std::string_view model_type);

struct CheckpointOptions {
  // The config.json model_type. Required when there is no config.json; otherwise, when given, it
  // must agree with config.json.
  std::string model_type;
  // The config.json to use. Default: a directory's own config.json; none for a single
  // .safetensors file.
  std::filesystem::path config_path;
  // K. 0: the config's num_experts_per_tok (required without a config).
  int top_k = 0;
  // The activation (hidden/output) dtype. Default: the config's torch_dtype; for unquantized layers
  // the expert weights' dtype, which moekit requires to match.
  std::optional<DType> activation_dtype;
  // W13's gate/up row layout. Default: interleaved wherever the loader stacks an unquantized gated W13
  // from per-expert tensors (Mixtral, Qwen, DeepSeek in 16 or 32 bits: the rows are interleaved while
  // they are copied anyway; on Hopper the layout with which gemm1's epilogue applies the activation,
  // docs/checkpoints.md); otherwise the checkpoint's (fp8_block: concatenated; GPT-OSS: interleaved).
  // kConcatenated keeps a per-expert checkpoint's order; kInterleaved on fp8_block (block scales over
  // rows) and kConcatenated on GPT-OSS are refused.
  std::optional<GateUpLayout> gate_up;
};

// Where one loaded tensor came from.
struct CheckpointTensorSource {
  std::string field;   // "w13", "w13_scale", "w2_bias", "router_weight", "e_score_correction_bias", ...
  std::string source;  // checkpoint tensor name(s); "{0..7}" stands for every expert index
  bool copied = false; // true: stacked or transposed into an owned tensor; false: a view into the mapped file
};

// What keeps a loaded layer's tensors alive.
struct CheckpointStorage {
  std::vector<std::shared_ptr<const SafetensorsFile>> files;  // the mapped files views point into
  std::vector<Tensor> owned;                                  // stacked or transposed copies
  // True when all of `view`'s bytes lie inside one of the mapped files (a zero-copy view).
  bool is_mapped(const TensorView& view) const;
};

struct MoeLayerCheckpoint {
  ModelFamily family = ModelFamily::kMixtral;
  int layer_index = 0;
  // Every field set from the config (or inferred from the tensors): experts, top_k, sizes, routing,
  // activation, gate/up layout, quantization, activation dtype. input_format is kStandard.
  MoeProblem problem;
  // w13 [E, gemm1_rows, H] and w2 [E, H, I] (+ biases and scales per docs/quantization.md).
  MoeWeights weights;
  // The router: router_logits [T, E] = hidden [T, H] @ router_weight^T (+ router_bias).
  TensorView router_weight;            // [E, H]
  TensorView router_bias;              // [E] (GPT-OSS); empty otherwise
  // DeepSeek-V3 (noaux_tc routing): pass as MoeInputs::e_score_correction_bias; empty otherwise.
  TensorView e_score_correction_bias;  // [E]
  std::vector<CheckpointTensorSource> sources;
  // What a user should know: copies made, parts of the block not loaded (shared experts), config
  // values that were absent and inferred or defaulted.
  std::vector<std::string> notes;
  // Keeps the mapped files and the owned (stacked/transposed) tensors alive; the views above are
  // valid while any copy of this struct (or of this pointer) exists.
  std::shared_ptr<const CheckpointStorage> storage;
};

// Loads MoE layer `layer_index` (0-based, as in "model.layers.{L}"). `path` is
//   - a directory with config.json and model.safetensors or model.safetensors.index.json, or
//   - a single .safetensors file (then options give model_type and top_k, or config_path; sizes are
//     inferred from the tensors).
// Errors name the problem: a missing tensor (its name and the layer), a wrong shape (name, expected,
// got), an unexpected dtype, an unsupported model type or quantization, a layer index out of range,
// or a dense (non-MoE) layer.
Result<MoeLayerCheckpoint> load_moe_layer(const std::filesystem::path& path, int layer_index,
                                          const CheckpointOptions& options = {});

// router_logits [T, E] (f32 or bf16) = hidden [T, H] (f32, f16 or bf16) @ router_weight^T
// (+ router_bias), accumulated in double and rounded once. (Hugging Face computes Mixtral's, Qwen's and
// GPT-OSS's router in bf16, DeepSeek's in f32, so near-ties may pick other experts there.)
Status compute_router_logits(const MoeLayerCheckpoint& layer, const TensorView& hidden, const TensorView& router_logits);

}  // namespace moekit
