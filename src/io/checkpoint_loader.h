// The tensor side of load_moe_layer: finding, checking, stacking and transposing one layer's tensors.
// Internal to moekit_io.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "io/checkpoint_config.h"
#include "moekit/checkpoint.h"
#include "moekit/safetensors.h"

namespace moekit::io {

// An expected extent: a value, or "any" (kAny) to infer it from the tensor.
inline constexpr int64_t kAny = -1;

class LayerLoader {
 public:
  LayerLoader(SafetensorsCheckpoint& checkpoint, LayerConfig& config, int layer, MoeLayerCheckpoint& out)
      : ckpt_(checkpoint), cfg_(config), layer_(layer), out_(out) {}

  LayerConfig& config() { return cfg_; }
  MoeLayerCheckpoint& out() { return out_; }
  int layer() const { return layer_; }
  bool contains(std::string_view name) const { return ckpt_.contains(name); }
  // "model.layers.{L}." + suffix
  std::string layer_name(std::string_view suffix) const;

  // The tensor `name`, checked: its dtype is one of `dtypes` and its shape matches `shape` (kAny
  // entries match anything). `dims` names the expected dimensions for messages, e.g. "[E, H]".
  Result<TensorView> require(const std::string& name, std::initializer_list<DType> dtypes, std::vector<int64_t> shape,
                             std::string_view dims);

  // Copies, for every expert e, the tensors parts(e) (each of `part_shape`, `src_dtype`) one after the
  // other into an owned [E, parts * part_shape[0], part_shape[1]] tensor of `dst_dtype` (a widening
  // conversion when the two differ). With `interleave_rows`, row r of part p goes to row
  // r * parts + p instead (gate i at row 2i, up i at row 2i + 1 for the parts {gate, up}).
  Result<TensorView> stack_experts(int64_t num_experts, const std::function<std::vector<std::string>(int64_t)>& parts,
                                   DType src_dtype, DType dst_dtype, std::vector<int64_t> part_shape, std::string_view dims,
                                   bool interleave_rows = false);

  // An owned [E, B, A] copy of `src` [E, A, B].
  Result<TensorView> transpose_experts(const TensorView& src);

  void add_source(std::string field, std::string source, bool copied) {
    out_.sources.push_back({std::move(field), std::move(source), copied});
  }
  void note(std::string text) { out_.notes.push_back(std::move(text)); }
  // Everything owned (stacked tensors) and the files opened: moved into out().storage at the end.
  std::vector<Tensor>& owned() { return owned_; }
  int64_t owned_bytes() const;

 private:
  Status missing(const std::string& name) const;

  SafetensorsCheckpoint& ckpt_;
  LayerConfig& cfg_;
  int layer_;
  MoeLayerCheckpoint& out_;
  std::vector<Tensor> owned_;
};

// Family loaders: fill out().weights, router tensors, sources and notes; settle cfg sizes and quant.
Status load_per_expert_layer(LayerLoader& loader);  // Mixtral, Qwen2/3-MoE, DeepSeek-V2/V3
Status load_gpt_oss_layer(LayerLoader& loader);

}  // namespace moekit::io
