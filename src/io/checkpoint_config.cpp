// config.json -> LayerConfig. Absent keys take the default of the transformers configuration class for
// the model type (what transformers itself would use), and each such use is noted.
#include "io/checkpoint_config.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace moekit::io {
namespace {

using json = nlohmann::json;

// Reads typed values; the first type error is kept and reported by status().
class ConfigReader {
 public:
  ConfigReader(const json* j, std::string name) : j_(j), name_(std::move(name)) {}
  const Status& status() const { return status_; }

  std::optional<int64_t> integer(const std::string& key) {
    const json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer()) return bad(key, *v, "an integer"), std::nullopt;
    return v->get<int64_t>();
  }
  std::optional<double> number(const std::string& key) {
    const json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) return bad(key, *v, "a number"), std::nullopt;
    return v->get<double>();
  }
  std::optional<bool> boolean(const std::string& key) {
    const json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) return bad(key, *v, "true or false"), std::nullopt;
    return v->get<bool>();
  }
  std::optional<std::string> string(const std::string& key) {
    const json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) return bad(key, *v, "a string"), std::nullopt;
    return v->get<std::string>();
  }
  std::optional<std::vector<int64_t>> int_list(const std::string& key) {
    const json* v = find(key);
    if (v == nullptr) return std::nullopt;
    std::vector<int64_t> out;
    if (!v->is_array()) return bad(key, *v, "a list of integers"), std::nullopt;
    for (const auto& e : *v) {
      if (!e.is_number_integer()) return bad(key, *v, "a list of integers"), std::nullopt;
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
  const json* object(const std::string& key) {
    const json* v = find(key);
    if (v != nullptr && !v->is_object()) return bad(key, *v, "an object"), nullptr;
    return v;
  }

 private:
  // Absent and null both mean "not given".
  const json* find(const std::string& key) const {
    if (j_ == nullptr) return nullptr;
    const auto it = j_->find(key);
    return it == j_->end() || it->is_null() ? nullptr : &*it;
  }
  void bad(const std::string& key, const json& v, std::string_view what) {
    if (status_.ok()) status_ = Status::InvalidArgument(fmt::format("{}: {} must be {}, got {}", name_, key, what, v.dump()));
  }

  const json* j_;
  std::string name_;
  Status status_;
};

struct FamilyFacts {
  ModelFamily family;
  std::string_view model_type;
  std::string_view num_experts_key;
  std::string_view intermediate_key;
  int64_t default_top_k;  // transformers' default num_experts_per_tok; 0: none
};

constexpr std::array<FamilyFacts, 6> kFamilies{{
    {ModelFamily::kMixtral, "mixtral", "num_local_experts", "intermediate_size", 2},
    {ModelFamily::kQwen2Moe, "qwen2_moe", "num_experts", "moe_intermediate_size", 4},
    {ModelFamily::kQwen3Moe, "qwen3_moe", "num_experts", "moe_intermediate_size", 8},
    {ModelFamily::kDeepSeekV2, "deepseek_v2", "n_routed_experts", "moe_intermediate_size", 0},
    {ModelFamily::kDeepSeekV3, "deepseek_v3", "n_routed_experts", "moe_intermediate_size", 8},
    {ModelFamily::kGptOss, "gpt_oss", "num_local_experts", "intermediate_size", 4},
}};

const FamilyFacts& facts(ModelFamily f) { return kFamilies[static_cast<size_t>(f)]; }

bool is_deepseek(ModelFamily f) { return f == ModelFamily::kDeepSeekV2 || f == ModelFamily::kDeepSeekV3; }
bool is_qwen(ModelFamily f) { return f == ModelFamily::kQwen2Moe || f == ModelFamily::kQwen3Moe; }

Status read_quantization(ConfigReader& r, LayerConfig& c) {
  const json* q = r.object("quantization_config");
  if (q == nullptr) {
    if (c.has_config) c.quant = QuantScheme::kNone;
    return Status::Ok();
  }
  ConfigReader qr(q, c.config_name + ": quantization_config");
  const auto method = qr.string("quant_method");
  const auto block = qr.int_list("weight_block_size");
  const auto format = qr.string("fmt");
  const auto scheme = qr.string("activation_scheme");
  MOEKIT_RETURN_IF_ERROR(qr.status());
  const std::string where = c.config_name + ": quantization_config";
  if (!method) return Status::InvalidArgument(fmt::format("{} has no quant_method", where));
  if (*method == "fp8") {
    if (!block)
      return Status::Unsupported(fmt::format("{}: quant_method=fp8 without weight_block_size (per-tensor or per-channel scales) is not "
                                             "supported; block-scaled fp8 with weight_block_size [128, 128] is",
                                             where));
    if (*block != std::vector<int64_t>{128, 128})
      return Status::Unsupported(fmt::format("{}: weight_block_size [{}] is not supported (moekit's fp8_block uses [128, 128])", where,
                                             fmt::join(*block, ", ")));
    if (format && *format != "e4m3") return Status::Unsupported(fmt::format("{}: fmt={} is not supported (e4m3 is)", where, *format));
    if (scheme && *scheme != "dynamic")
      return Status::Unsupported(
          fmt::format("{}: activation_scheme={} is not supported (fp8_block quantizes activations dynamically)", where, *scheme));
    c.quant = QuantScheme::kFp8Block;
  } else if (*method == "mxfp4") {
    if (c.family != ModelFamily::kGptOss)
      return Status::Unsupported(fmt::format("{}: quant_method=mxfp4 is supported for gpt_oss, not {}", where, model_family_name(c.family)));
    c.quant = QuantScheme::kMxfp4;
  } else {
    return Status::Unsupported(
        fmt::format("{}: quant_method={} is not supported (supported: fp8 with weight_block_size [128, 128], mxfp4)", where, *method));
  }
  return Status::Ok();
}

Status read_deepseek_routing(ConfigReader& r, LayerConfig& c) {
  const bool v3 = c.family == ModelFamily::kDeepSeekV3;
  const std::string method = r.string("topk_method").value_or(v3 ? "noaux_tc" : "greedy");
  const std::string scoring = r.string("scoring_func").value_or(method == "noaux_tc" ? "sigmoid" : "softmax");
  c.routing.renormalize = r.boolean("norm_topk_prob").value_or(v3);
  c.routing.routed_scaling_factor = static_cast<float>(r.number("routed_scaling_factor").value_or(v3 ? 2.5 : 1.0));
  const auto n_group = r.integer("n_group").value_or(v3 ? 8 : 0);
  const auto topk_group = r.integer("topk_group").value_or(v3 ? 4 : 0);
  MOEKIT_RETURN_IF_ERROR(r.status());
  const std::string where = c.config_name;
  if (method == "noaux_tc") {
    if (scoring != "sigmoid")
      return Status::Unsupported(fmt::format("{}: topk_method=noaux_tc with scoring_func={} is not supported (sigmoid is)", where, scoring));
    if (n_group < 1 || topk_group < 1)
      return Status::InvalidArgument(fmt::format("{}: topk_method=noaux_tc needs n_group and topk_group (got {} and {})", where, n_group, topk_group));
    c.routing.method = RoutingMethod::kDeepSeekV3;
    c.routing.n_group = static_cast<int>(n_group);
    c.routing.topk_group = static_cast<int>(topk_group);
    return Status::Ok();
  }
  if (method != "greedy" && method != "group_limited_greedy")
    return Status::Unsupported(fmt::format("{}: topk_method={} is not supported (greedy, group_limited_greedy, noaux_tc are)", where, method));
  if (scoring != "softmax")
    return Status::Unsupported(fmt::format("{}: topk_method={} with scoring_func={} is not supported (softmax is)", where, method, scoring));
  if (method == "group_limited_greedy") {
    // DeepSeek-V2's group limit: a group's score is its largest probability; only the best
    // topk_group groups compete. moekit has no such routing method, except in the cases where the
    // limit removes nothing.
    if (n_group > 1 && topk_group < n_group)
      return Status::Unsupported(fmt::format("{}: topk_method=group_limited_greedy with n_group={} and topk_group={} (groups scored by "
                                             "their largest softmax probability) is not expressible by moekit's routing methods",
                                             where, n_group, topk_group));
    c.notes.push_back(fmt::format("topk_method=group_limited_greedy with n_group={}, topk_group={} keeps every group: plain softmax top-k",
                                  n_group, topk_group));
  }
  c.routing.method = RoutingMethod::kSoftmaxTopK;
  if (!v3 && c.routing.renormalize && c.routing.routed_scaling_factor != 1.0f)
    c.notes.push_back(fmt::format("routed_scaling_factor={} is applied after renormalizing (as vLLM does); DeepSeek-V2's original code "
                                  "skips it when norm_topk_prob=true",
                                  c.routing.routed_scaling_factor));
  return Status::Ok();
}

Status read_activation(ConfigReader& r, LayerConfig& c) {
  if (c.family == ModelFamily::kGptOss) {
    c.activation.kind = Activation::kSwiGLUClamped;
    c.activation.alpha = static_cast<float>(r.number("swiglu_alpha").value_or(1.702));
    c.activation.limit = static_cast<float>(r.number("swiglu_limit").value_or(7.0));
    c.gate_up_layout = GateUpLayout::kInterleaved;
    return r.status();
  }
  const std::string act = r.string("hidden_act").value_or("silu");
  MOEKIT_RETURN_IF_ERROR(r.status());
  if (act == "silu" || act == "swish") c.activation.kind = Activation::kSwiGLU;
  else if (act == "gelu") c.activation.kind = Activation::kGeGLU;
  else if (act == "gelu_pytorch_tanh" || act == "gelu_new") c.activation.kind = Activation::kGeGLUTanh;
  else return Status::Unsupported(fmt::format("{}: hidden_act={} is not supported (silu, gelu, gelu_pytorch_tanh are)", c.config_name, act));
  return Status::Ok();
}

}  // namespace

Result<LayerConfig> read_layer_config(const json* config, const std::string& config_name, const CheckpointOptions& options) {
  LayerConfig c;
  c.has_config = config != nullptr;
  c.config_name = c.has_config ? config_name : "(no config.json)";
  ConfigReader r(config, c.config_name);

  const auto config_type = r.string("model_type");
  MOEKIT_RETURN_IF_ERROR(r.status());
  if (c.has_config && !config_type && options.model_type.empty())
    return Status::InvalidArgument(fmt::format("{}: has no model_type (give CheckpointOptions::model_type)", c.config_name));
  if (config_type && !options.model_type.empty() && *config_type != options.model_type)
    return Status::InvalidArgument(
        fmt::format("model_type '{}' given in the options, but {} says '{}'", options.model_type, c.config_name, *config_type));
  const std::string type = config_type.value_or(options.model_type);
  if (type.empty())
    return Status::InvalidArgument("no config.json and no model_type: give CheckpointOptions::model_type (or config_path)");
  const auto family = model_family_from_type(type);
  if (!family) {
    std::vector<std::string_view> known;
    for (const auto& f : kFamilies) known.push_back(f.model_type);
    return Status::Unsupported(fmt::format("model_type '{}' is not supported (supported: {})", type, fmt::join(known, ", ")));
  }
  c.family = *family;
  const FamilyFacts& ff = facts(c.family);

  c.num_experts_key = ff.num_experts_key;
  c.intermediate_key = ff.intermediate_key;
  c.num_hidden_layers = r.integer("num_hidden_layers");
  c.num_experts = r.integer(c.num_experts_key);
  if (!c.num_experts && c.family == ModelFamily::kGptOss) c.num_experts = r.integer("num_experts");
  c.hidden = r.integer("hidden_size");
  c.intermediate = r.integer(c.intermediate_key);
  auto config_top_k = r.integer("num_experts_per_tok");
  if (!config_top_k && c.family == ModelFamily::kGptOss) config_top_k = r.integer("experts_per_token");
  MOEKIT_RETURN_IF_ERROR(r.status());
  for (const auto& [key, value] : {std::pair{std::string("hidden_size"), c.hidden}, std::pair{c.intermediate_key, c.intermediate},
                                   std::pair{std::string("num_hidden_layers"), c.num_hidden_layers}})
    if (value && *value < 1) return Status::InvalidArgument(fmt::format("{}: {}={} must be at least 1", c.config_name, key, *value));
  if (c.num_experts && *c.num_experts < 0)
    return Status::InvalidArgument(fmt::format("{}: {}={} must not be negative", c.config_name, c.num_experts_key, *c.num_experts));

  c.interleave_stacked_w13 = options.gate_up != GateUpLayout::kConcatenated;
  if (options.top_k < 0) return Status::InvalidArgument(fmt::format("CheckpointOptions::top_k={} must be positive (or 0)", options.top_k));
  if (options.top_k > 0) {
    c.top_k = options.top_k;
    if (config_top_k && *config_top_k != options.top_k)
      c.notes.push_back(fmt::format("top_k={} from the options replaces num_experts_per_tok={}", options.top_k, *config_top_k));
  } else if (config_top_k) {
    c.top_k = *config_top_k;
  } else if (!c.has_config) {
    return Status::InvalidArgument("top_k: there is no config.json; give CheckpointOptions::top_k");
  } else if (ff.default_top_k > 0) {
    c.top_k = ff.default_top_k;
    c.notes.push_back(fmt::format("num_experts_per_tok is absent: the {} default {}", ff.model_type, ff.default_top_k));
  } else {
    return Status::InvalidArgument(fmt::format("{}: num_experts_per_tok is absent and {} has no default", c.config_name, ff.model_type));
  }

  if (c.family == ModelFamily::kMixtral || c.family == ModelFamily::kGptOss) {
    c.routing.method = RoutingMethod::kTopKSoftmax;  // softmax over the K selected logits
  } else if (is_qwen(c.family)) {
    c.routing.method = RoutingMethod::kSoftmaxTopK;
    c.routing.renormalize = r.boolean("norm_topk_prob").value_or(false);
  } else {
    MOEKIT_RETURN_IF_ERROR(read_deepseek_routing(r, c));
  }
  MOEKIT_RETURN_IF_ERROR(read_activation(r, c));
  MOEKIT_RETURN_IF_ERROR(read_quantization(r, c));

  auto torch_dtype = r.string("torch_dtype");
  if (!torch_dtype) torch_dtype = r.string("dtype");  // the key's newer name
  if (torch_dtype) {
    const auto d = parse_dtype(*torch_dtype);
    if (!d || (*d != DType::kF32 && *d != DType::kF16 && *d != DType::kBF16))
      return Status::Unsupported(fmt::format("{}: torch_dtype={} is not an activation dtype (float32, float16, bfloat16)", c.config_name, *torch_dtype));
    c.torch_dtype = d;
  }

  if (is_deepseek(c.family)) {
    c.first_k_dense_replace = r.integer("first_k_dense_replace").value_or(c.family == ModelFamily::kDeepSeekV3 ? 3 : 0);
    c.moe_layer_freq = r.integer("moe_layer_freq").value_or(1);
    if (c.moe_layer_freq < 1) return Status::InvalidArgument(fmt::format("{}: moe_layer_freq={} must be at least 1", c.config_name, c.moe_layer_freq));
  } else if (is_qwen(c.family)) {
    c.decoder_sparse_step = r.integer("decoder_sparse_step").value_or(1);
    c.mlp_only_layers = r.int_list("mlp_only_layers").value_or(std::vector<int64_t>{});
    if (c.decoder_sparse_step < 1)
      return Status::InvalidArgument(fmt::format("{}: decoder_sparse_step={} must be at least 1", c.config_name, c.decoder_sparse_step));
  }
  MOEKIT_RETURN_IF_ERROR(r.status());
  return c;
}

Status check_moe_layer_index(const LayerConfig& c, int layer) {
  if (layer < 0) return Status::InvalidArgument(fmt::format("layer_index={} must not be negative", layer));
  if (c.num_hidden_layers && layer >= *c.num_hidden_layers)
    return Status::InvalidArgument(
        fmt::format("layer_index={} is out of range: {} has num_hidden_layers={}", layer, c.config_name, *c.num_hidden_layers));
  if (!c.has_config) return Status::Ok();  // without a config the tensors decide
  const auto dense = [&](const std::string& why) {
    return Status::InvalidArgument(fmt::format("layer {} is dense ({}): not an MoE layer", layer, why));
  };
  if (is_deepseek(c.family)) {
    if (layer < c.first_k_dense_replace) return dense(fmt::format("first_k_dense_replace={}", c.first_k_dense_replace));
    if (layer % c.moe_layer_freq != 0) return dense(fmt::format("moe_layer_freq={}", c.moe_layer_freq));
  } else if (is_qwen(c.family)) {
    if (c.num_experts && *c.num_experts == 0) return dense(fmt::format("{}=0: the model has no MoE layers", c.num_experts_key));
    if (std::find(c.mlp_only_layers.begin(), c.mlp_only_layers.end(), layer) != c.mlp_only_layers.end())
      return dense(fmt::format("mlp_only_layers=[{}]", fmt::join(c.mlp_only_layers, ", ")));
    if ((layer + 1) % c.decoder_sparse_step != 0)
      return dense(fmt::format("decoder_sparse_step={}: MoE layers are those with (layer + 1) % {} == 0", c.decoder_sparse_step,
                               c.decoder_sparse_step));
  }
  return Status::Ok();
}

}  // namespace moekit::io

namespace moekit {

std::string_view model_family_name(ModelFamily f) { return io::facts(f).model_type; }

std::optional<ModelFamily> model_family_from_type(std::string_view model_type) {
  for (const auto& f : io::kFamilies)
    if (f.model_type == model_type) return f.family;
  return std::nullopt;
}

}  // namespace moekit
