// load_moe_layer: paths and config, then the family's tensors, then the problem description.
#include "moekit/checkpoint.h"

#include <climits>

#include <fmt/format.h>

#include "io/checkpoint_config.h"
#include "io/checkpoint_loader.h"
#include "io/json_file.h"
#include "moekit/float_formats.h"
#include "moekit/safetensors.h"

namespace moekit {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

bool is_activation_dtype(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }

// Unquantized layers compute in the weights' dtype (moekit requires them equal); quantized layers
// take the option, else torch_dtype, else the router's dtype.
Result<DType> resolve_activation_dtype(const io::LayerConfig& c, const CheckpointOptions& options, MoeLayerCheckpoint& out) {
  const auto name = [](DType d) { return dtype_name(d); };
  if (options.activation_dtype && !is_activation_dtype(*options.activation_dtype))
    return Status::InvalidArgument(fmt::format("CheckpointOptions::activation_dtype={} must be f32, f16 or bf16", name(*options.activation_dtype)));
  if (*c.quant == QuantScheme::kNone) {
    const DType w = out.weights.w13.dtype();
    if (options.activation_dtype && *options.activation_dtype != w)
      return Status::InvalidArgument(fmt::format("CheckpointOptions::activation_dtype={} differs from the unquantized expert weights' {}; "
                                                 "moekit computes an unquantized layer in its weights' dtype",
                                                 name(*options.activation_dtype), name(w)));
    if (c.torch_dtype && *c.torch_dtype != w)
      out.notes.push_back(fmt::format("torch_dtype is {} but the expert weights are {}: the activation dtype is {}", name(*c.torch_dtype), name(w), name(w)));
    return w;
  }
  if (options.activation_dtype) return *options.activation_dtype;
  if (c.torch_dtype) return *c.torch_dtype;
  const DType r = out.router_weight.dtype();
  out.notes.push_back(fmt::format("no torch_dtype: the activation dtype is the router's, {}", name(r)));
  return r;
}

Status check_problem(const io::LayerConfig& c, const MoeProblem& p) {
  for (const auto& [key, v] : {std::pair{c.num_experts_key, *c.num_experts}, std::pair{std::string("hidden_size"), *c.hidden},
                               std::pair{c.intermediate_key, *c.intermediate}})
    if (v < 1 || v > INT_MAX) return Status::InvalidArgument(fmt::format("{}={} is out of range", key, v));
  if (p.top_k < 1 || p.top_k > p.num_experts)
    return Status::InvalidArgument(fmt::format("num_experts_per_tok={} must be in [1, {}={}]", p.top_k, c.num_experts_key, p.num_experts));
  const RoutingParams& r = p.routing;
  if (r.method == RoutingMethod::kDeepSeekV3) {
    if (p.num_experts % r.n_group != 0)
      return Status::InvalidArgument(fmt::format("{}: n_group={} does not divide {}={}", c.config_name, r.n_group, c.num_experts_key, p.num_experts));
    if (r.topk_group > r.n_group)
      return Status::InvalidArgument(fmt::format("{}: topk_group={} exceeds n_group={}", c.config_name, r.topk_group, r.n_group));
    if (p.top_k > r.topk_group * (p.num_experts / r.n_group))
      return Status::InvalidArgument(fmt::format("{}: num_experts_per_tok={} exceeds the {} experts in topk_group={} groups", c.config_name,
                                                 p.top_k, r.topk_group * (p.num_experts / r.n_group), r.topk_group));
  }
  return Status::Ok();
}

// CheckpointOptions::gate_up against the layout the loader produced: unquantized gated W13 stacked
// from per-expert tensors is interleaved unless kConcatenated is asked for (load_per_expert_layer);
// GPT-OSS is interleaved as stored. What is left to answer is what cannot be converted.
Status check_gate_up(const CheckpointOptions& options, const MoeProblem& p) {
  if (!options.gate_up || *options.gate_up == p.gate_up_layout) return Status::Ok();
  const std::string_view want = gate_up_layout_name(*options.gate_up);
  if (!activation_is_gated(p.activation.kind))
    return Status::InvalidArgument(fmt::format("gate_up={}: the activation {} is not gated, so W13 has no gate and up rows", want,
                                               activation_name(p.activation.kind)));
  if (*options.gate_up == GateUpLayout::kConcatenated)
    return Status::Unsupported("gate_up=concatenated: this checkpoint's W13 is interleaved, and moekit converts only to interleaved");
  if (p.quant != QuantScheme::kNone)
    return Status::Unsupported(fmt::format("gate_up=interleaved: quant={} scales W13 by blocks of rows, which interleaving would split; "
                                           "only unquantized layers convert",
                                           quant_scheme_name(p.quant)));
  return Status::Internal(fmt::format("gate_up=interleaved: the loader left this unquantized W13 {}", gate_up_layout_name(p.gate_up_layout)));
}

Result<MoeLayerCheckpoint> load(const fs::path& path, int layer_index, const CheckpointOptions& options) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  if (!is_dir && !fs::exists(path, ec)) return Status::NotFound(fmt::format("{}: no such file or directory", path.string()));
  fs::path config_path = options.config_path;
  if (config_path.empty() && is_dir && fs::exists(path / "config.json", ec)) config_path = path / "config.json";
  json config;
  if (!config_path.empty()) {
    auto j = io::read_json_object(config_path);
    if (!j.ok()) return j.status();
    config = std::move(j).value();
  }
  auto cfg = io::read_layer_config(config_path.empty() ? nullptr : &config, config_path.string(), options);
  if (!cfg.ok()) return cfg.status();
  MOEKIT_RETURN_IF_ERROR(io::check_moe_layer_index(*cfg, layer_index));

  auto ckpt = SafetensorsCheckpoint::open(path);
  if (!ckpt.ok()) return ckpt.status();
  MoeLayerCheckpoint out;
  out.family = cfg->family;
  out.layer_index = layer_index;
  io::LayerLoader loader(*ckpt, *cfg, layer_index, out);
  MOEKIT_RETURN_IF_ERROR(cfg->family == ModelFamily::kGptOss ? io::load_gpt_oss_layer(loader) : io::load_per_expert_layer(loader));
  if (!cfg->has_config)
    out.notes.push_back(fmt::format("no config.json: sizes inferred from the tensors; routing and activation use the transformers defaults "
                                    "for {}",
                                    model_family_name(cfg->family)));
  cfg->notes.insert(cfg->notes.end(), out.notes.begin(), out.notes.end());
  out.notes = std::move(cfg->notes);

  MoeProblem& p = out.problem;
  p.num_experts = static_cast<int>(*cfg->num_experts);
  p.top_k = static_cast<int>(cfg->top_k);
  p.hidden = static_cast<int>(*cfg->hidden);
  p.intermediate = static_cast<int>(*cfg->intermediate);
  p.routing = cfg->routing;
  p.activation = cfg->activation;
  p.gate_up_layout = cfg->gate_up_layout;
  p.quant = *cfg->quant;
  p.input_format = InputFormat::kStandard;
  MOEKIT_RETURN_IF_ERROR(check_problem(*cfg, p));
  auto act = resolve_activation_dtype(*cfg, options, out);
  if (!act.ok()) return act.status();
  p.activation_dtype = *act;
  MOEKIT_RETURN_IF_ERROR(check_gate_up(options, p));

  auto storage = std::make_shared<CheckpointStorage>();
  storage->files = ckpt->opened_files();
  storage->owned = std::move(loader.owned());
  out.storage = std::move(storage);
  return out;
}

}  // namespace

bool CheckpointStorage::is_mapped(const TensorView& view) const {
  // Compared as integers: the pointers may belong to unrelated allocations.
  const auto begin = reinterpret_cast<uintptr_t>(view.data());
  const auto end = begin + static_cast<uintptr_t>(view.storage_bytes());
  for (const auto& f : files) {
    const auto m = f->mapping();
    const auto m_begin = reinterpret_cast<uintptr_t>(m.data());
    if (begin >= m_begin && end <= m_begin + m.size()) return true;
  }
  return false;
}

Result<MoeLayerCheckpoint> load_moe_layer(const fs::path& path, int layer_index, const CheckpointOptions& options) {
  try {
    auto r = load(path, layer_index, options);
    if (!r.ok()) return r.status().with_context(fmt::format("loading MoE layer {} from {}", layer_index, path.string()));
    return r;
  } catch (const std::bad_alloc&) {
    return Status::OutOfMemory(fmt::format("loading MoE layer {} from {}: out of memory", layer_index, path.string()));
  } catch (const std::exception& e) {  // nothing should throw; never let it cross the API
    return Status::Internal(fmt::format("loading MoE layer {} from {}: {}", layer_index, path.string(), e.what()));
  }
}

Status compute_router_logits(const MoeLayerCheckpoint& layer, const TensorView& hidden, const TensorView& router_logits) {
  const TensorView& w = layer.router_weight;
  const TensorView& b = layer.router_bias;
  if (w.ndim() != 2) return Status::InvalidArgument("compute_router_logits: the layer has no router weight");
  const int64_t E = w.size(0), H = w.size(1);
  if (hidden.ndim() != 2 || hidden.size(1) != H || !is_activation_dtype(hidden.dtype()) || !hidden.device().is_cpu() || !hidden.is_contiguous())
    return Status::InvalidArgument(fmt::format("compute_router_logits: hidden {} must be a contiguous host [T, {}] f32/f16/bf16 tensor",
                                               hidden.describe(), H));
  const int64_t T = hidden.size(0);
  if (router_logits.ndim() != 2 || router_logits.size(0) != T || router_logits.size(1) != E ||
      (router_logits.dtype() != DType::kF32 && router_logits.dtype() != DType::kBF16) || !router_logits.device().is_cpu() ||
      !router_logits.is_contiguous())
    return Status::InvalidArgument(fmt::format("compute_router_logits: router_logits {} must be a contiguous host [{}, {}] f32/bf16 tensor",
                                               router_logits.describe(), T, E));
  if (b.defined() && (b.ndim() != 1 || b.size(0) != E))
    return Status::InvalidArgument(fmt::format("compute_router_logits: router_bias {} must be [{}]", b.describe(), E));
  std::vector<double> wd(static_cast<size_t>(E * H));
  for (int64_t i = 0; i < E * H; ++i) wd[static_cast<size_t>(i)] = load_element(w.data(), w.dtype(), i);
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> x(static_cast<size_t>(H));
    for (int64_t h = 0; h < H; ++h) x[static_cast<size_t>(h)] = load_element(hidden.data(), hidden.dtype(), t * H + h);
    for (int64_t e = 0; e < E; ++e) {
      double acc = b.defined() ? load_element(b.data(), b.dtype(), e) : 0.0;
      for (int64_t h = 0; h < H; ++h) acc += x[static_cast<size_t>(h)] * wd[static_cast<size_t>(e * H + h)];
      store_element(router_logits.data(), router_logits.dtype(), t * E + e, acc);
    }
  }
  return Status::Ok();
}

}  // namespace moekit
