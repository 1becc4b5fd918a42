// The naming conventions of each model family: which tensors make up an MoE layer and how they map
// onto MoeWeights.
//
//   Mixtral      model.layers.{L}.block_sparse_moe.gate.weight [E, H]
//                model.layers.{L}.block_sparse_moe.experts.{e}.w1.weight (gate) / w3 (up) [I, H], w2 [H, I]
//   Qwen2/3-MoE  model.layers.{L}.mlp.gate.weight, mlp.experts.{e}.{gate,up,down}_proj.weight
//                (Qwen2-MoE: mlp.shared_expert.* and mlp.shared_expert_gate.weight, not loaded)
//   DeepSeek     as Qwen, plus mlp.gate.e_score_correction_bias [E] (V3), fp8 weights with
//                {gate,up,down}_proj.weight_scale_inv [ceil(N/128), ceil(K/128)], mlp.shared_experts.*
//   GPT-OSS      model.layers.{L}.mlp.router.weight [E, H] + router.bias [E];
//                mlp.experts.gate_up_proj_blocks [E, 2I, H/32, 16] u8, _scales [E, 2I, H/32] u8 (e8m0),
//                _bias [E, 2I]; down_proj_blocks [E, H, I/32, 16], _scales [E, H, I/32], _bias [E, H];
//                or, dequantized, gate_up_proj [E, H, 2I] and down_proj [E, I, H] (in x out)
#include <array>
#include <vector>

#include <fmt/format.h>

#include "io/checkpoint_loader.h"

namespace moekit::io {
namespace {

constexpr int64_t kFp8Block = 128;  // DeepSeek-V3's weight_block_size
constexpr int64_t kMxBlock = 32;    // MXFP4 elements per e8m0 scale

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Takes a size the config did not give from a tensor's shape (noting it), so that later checks use it.
void settle(LayerLoader& L, std::optional<int64_t>& slot, int64_t got, std::string_view key, const std::string& from) {
  if (slot) return;
  slot = got;
  if (L.config().has_config) L.note(fmt::format("{}={} taken from the shape of '{}' ({} has no {})", key, got, from, L.config().config_name, key));
}

Status dense_layer_error(LayerLoader& L, const std::string& dense_name) {
  return Status::InvalidArgument(fmt::format("layer {} has a dense MLP ('{}'), not an MoE block", L.layer(), dense_name));
}

std::string format_bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < (1 << 10)) return fmt::format("{} bytes", bytes);
  if (bytes < (1 << 20)) return fmt::format("{:.1f} KiB", b / (1 << 10));
  if (bytes < (1 << 30)) return fmt::format("{:.1f} MiB", b / (1 << 20));
  return fmt::format("{:.2f} GiB", b / (1 << 30));
}

}  // namespace

Status load_per_expert_layer(LayerLoader& L) {
  LayerConfig& c = L.config();
  MoeLayerCheckpoint& out = L.out();
  const bool mixtral = c.family == ModelFamily::kMixtral;
  const std::string block = L.layer_name(mixtral ? "block_sparse_moe." : "mlp.");
  const std::array<std::string_view, 3> proj = mixtral ? std::array<std::string_view, 3>{"w1", "w3", "w2"}
                                                       : std::array<std::string_view, 3>{"gate_proj", "up_proj", "down_proj"};
  enum Part { kGate, kUp, kDown };
  auto weight = [&](int64_t e, Part p) { return fmt::format("{}experts.{}.{}.weight", block, e, proj[p]); };
  auto scale = [&](int64_t e, Part p) { return weight(e, p) + "_scale_inv"; };
  const std::initializer_list<DType> floats = {DType::kF32, DType::kF16, DType::kBF16};

  // The router fixes E and H.
  const std::string router_name = block + "gate.weight";
  if (!L.contains(router_name) && L.contains(L.layer_name("mlp.gate_proj.weight"))) return dense_layer_error(L, L.layer_name("mlp.gate_proj.weight"));
  auto router = L.require(router_name, floats, {c.num_experts.value_or(io::kAny), c.hidden.value_or(io::kAny)}, "[E, H]");
  if (!router.ok()) return router.status();
  settle(L, c.num_experts, router->size(0), c.num_experts_key, router_name);
  settle(L, c.hidden, router->size(1), "hidden_size", router_name);
  const int64_t E = *c.num_experts, H = *c.hidden;
  if (E < 1) return Status::InvalidArgument(fmt::format("'{}' has no experts (shape [0, {}])", router_name, H));
  out.router_weight = *router;
  L.add_source("router_weight", router_name, false);

  // Expert 0's gate fixes I, the weight dtype and, without a config, the scheme.
  auto gate0 = L.require(weight(0, kGate), {DType::kF32, DType::kF16, DType::kBF16, DType::kE4M3}, {c.intermediate.value_or(io::kAny), H}, "[I, H]");
  if (!gate0.ok()) return gate0.status();
  settle(L, c.intermediate, gate0->size(0), c.intermediate_key, weight(0, kGate));
  const int64_t I = *c.intermediate;
  const DType wdt = gate0->dtype();
  if (!c.quant) {
    c.quant = wdt == DType::kE4M3 ? QuantScheme::kFp8Block : QuantScheme::kNone;
    if (wdt == DType::kE4M3 && !L.contains(scale(0, kGate)))
      return Status::Unsupported(fmt::format("'{}' is F8_E4M3 but has no weight_scale_inv: only block-scaled fp8 is supported", weight(0, kGate)));
  } else if (*c.quant == QuantScheme::kNone && wdt == DType::kE4M3) {
    return Status::InvalidArgument(fmt::format("'{}' is F8_E4M3 but {} has no quantization_config", weight(0, kGate), c.config_name));
  } else if (*c.quant == QuantScheme::kFp8Block && wdt != DType::kE4M3) {
    return Status::InvalidArgument(fmt::format("{} says quant_method=fp8, but '{}' is {}, not F8_E4M3", c.config_name, weight(0, kGate),
                                               *safetensors_dtype_name(wdt)));
  }
  // w13's 128-row scale blocks are gate's blocks then up's: they line up only if I is a multiple of 128.
  if (*c.quant == QuantScheme::kFp8Block && I % kFp8Block != 0)
    return Status::Unsupported(fmt::format("fp8_block: {}={} is not a multiple of 128, so the gate and up scale blocks cannot form w13's "
                                           "128-row blocks",
                                           c.intermediate_key, I));
  if (L.contains(weight(E, kGate)))
    return Status::InvalidArgument(fmt::format("'{}' exists but {}={}: the checkpoint has more experts than the config", weight(E, kGate),
                                               c.num_experts_key, E));

  // Unquantized gated W13 is stacked with gate and up rows interleaved, at no cost beyond the copy that
  // stacking makes anyway: on Hopper the sm_90a kernel applies the gated activation in gemm1's
  // epilogue only for that layout (docs/checkpoints.md). fp8_block's scales cover 128-row blocks of
  // gate or of up, which interleaving would split.
  const bool interleave = c.interleave_stacked_w13 && *c.quant == QuantScheme::kNone && activation_is_gated(c.activation.kind);
  auto w13 = L.stack_experts(E, [&](int64_t e) { return std::vector<std::string>{weight(e, kGate), weight(e, kUp)}; }, wdt, wdt, {I, H}, "[I, H]",
                             interleave);
  if (!w13.ok()) return w13.status();
  if (interleave) {
    c.gate_up_layout = GateUpLayout::kInterleaved;
    L.note("w13 interleaved while stacked (gate i at row 2i, up i at row 2i + 1), the layout with which gemm1's epilogue applies the "
           "activation on Hopper; CheckpointOptions::gate_up = concatenated keeps the checkpoint's order");
  }
  auto w2 = L.stack_experts(E, [&](int64_t e) { return std::vector<std::string>{weight(e, kDown)}; }, wdt, wdt, {H, I}, "[H, I]");
  if (!w2.ok()) return w2.status();
  out.weights.w13 = *w13;
  out.weights.w2 = *w2;
  const std::string experts = fmt::format("{}experts.{{0..{}}}.", block, E - 1);
  L.add_source("w13", fmt::format("{}{{{},{}}}.weight ({})", experts, proj[kGate], proj[kUp],
                                   interleave ? "gate and up rows interleaved" : "gate rows, then up rows"),
               true);
  L.add_source("w2", fmt::format("{}{}.weight", experts, proj[kDown]), true);

  if (*c.quant == QuantScheme::kFp8Block) {
    auto s0 = L.require(scale(0, kGate), floats, {ceil_div(I, kFp8Block), ceil_div(H, kFp8Block)}, "[ceil(I/128), ceil(H/128)]");
    if (!s0.ok()) return s0.status();
    const DType sdt = s0->dtype();
    auto s13 = L.stack_experts(E, [&](int64_t e) { return std::vector<std::string>{scale(e, kGate), scale(e, kUp)}; }, sdt, DType::kF32,
                               {ceil_div(I, kFp8Block), ceil_div(H, kFp8Block)}, "[ceil(I/128), ceil(H/128)]");
    if (!s13.ok()) return s13.status();
    auto s2 = L.stack_experts(E, [&](int64_t e) { return std::vector<std::string>{scale(e, kDown)}; }, sdt, DType::kF32,
                              {ceil_div(H, kFp8Block), ceil_div(I, kFp8Block)}, "[ceil(H/128), ceil(I/128)]");
    if (!s2.ok()) return s2.status();
    out.weights.w13_scale = *s13;
    out.weights.w2_scale = *s2;
    L.add_source("w13_scale", fmt::format("{}{{{},{}}}.weight_scale_inv", experts, proj[kGate], proj[kUp]), true);
    L.add_source("w2_scale", fmt::format("{}{}.weight_scale_inv", experts, proj[kDown]), true);
    if (sdt != DType::kF32) L.note(fmt::format("weight_scale_inv widened from {} to F32 (exact)", *safetensors_dtype_name(sdt)));
  }

  const std::string bias_name = block + "gate.e_score_correction_bias";
  if (c.routing.method == RoutingMethod::kDeepSeekV3) {
    auto bias = L.require(bias_name, {DType::kF32, DType::kBF16}, {E}, "[E]");
    if (!bias.ok()) return bias.status();
    out.e_score_correction_bias = *bias;
    L.add_source("e_score_correction_bias", bias_name, false);
  } else if (L.contains(bias_name)) {
    L.note(fmt::format("'{}' is present but unused by this routing method", bias_name));
  }

  if (c.family == ModelFamily::kQwen2Moe && L.contains(block + "shared_expert.gate_proj.weight"))
    L.note(fmt::format("shared expert present ({0}shared_expert.*, gated by {0}shared_expert_gate.weight) but not loaded: the layer "
                       "output excludes it",
                       block));
  if ((c.family == ModelFamily::kDeepSeekV2 || c.family == ModelFamily::kDeepSeekV3) && L.contains(block + "shared_experts.gate_proj.weight"))
    L.note(fmt::format("shared experts present ({}shared_experts.*) but not loaded: the layer output excludes them", block));
  L.note(fmt::format("w13 and w2 stacked from {} per-expert tensors into owned tensors ({} copied)", 3 * E, format_bytes(L.owned_bytes())));
  return Status::Ok();
}

Status load_gpt_oss_layer(LayerLoader& L) {
  LayerConfig& c = L.config();
  MoeLayerCheckpoint& out = L.out();
  const std::string block = L.layer_name("mlp.");
  const std::initializer_list<DType> floats = {DType::kF32, DType::kF16, DType::kBF16};

  const std::string router_name = block + "router.weight";
  auto router = L.require(router_name, floats, {c.num_experts.value_or(io::kAny), c.hidden.value_or(io::kAny)}, "[E, H]");
  if (!router.ok()) return router.status();
  settle(L, c.num_experts, router->size(0), c.num_experts_key, router_name);
  settle(L, c.hidden, router->size(1), "hidden_size", router_name);
  const int64_t E = *c.num_experts, H = *c.hidden;
  auto router_bias = L.require(block + "router.bias", floats, {E}, "[E]");
  if (!router_bias.ok()) return router_bias.status();
  out.router_weight = *router;
  out.router_bias = *router_bias;
  L.add_source("router_weight", router_name, false);
  L.add_source("router_bias", block + "router.bias", false);

  const std::string ex = block + "experts.";
  if (!c.quant) c.quant = L.contains(ex + "gate_up_proj_blocks") ? QuantScheme::kMxfp4 : QuantScheme::kNone;
  if (*c.quant == QuantScheme::kMxfp4) {
    if (H % kMxBlock != 0)
      return Status::InvalidArgument(fmt::format("hidden_size={} is not a multiple of 32, the MXFP4 block", H));
    const int64_t N1 = c.intermediate ? 2 * *c.intermediate : io::kAny;
    auto b13 = L.require(ex + "gate_up_proj_blocks", {DType::kU8}, {E, N1, H / kMxBlock, 16}, "[E, 2I, H/32, 16]");
    if (!b13.ok()) return b13.status();
    if (b13->size(1) % 2 != 0)
      return Status::InvalidArgument(fmt::format("'{}gate_up_proj_blocks': 2I={} is odd", ex, b13->size(1)));
    settle(L, c.intermediate, b13->size(1) / 2, c.intermediate_key, ex + "gate_up_proj_blocks");
    const int64_t I = *c.intermediate;
    if (I % kMxBlock != 0)
      return Status::InvalidArgument(fmt::format("{}={} is not a multiple of 32, the MXFP4 block", c.intermediate_key, I));
    auto s13 = L.require(ex + "gate_up_proj_scales", {DType::kU8, DType::kE8M0}, {E, 2 * I, H / kMxBlock}, "[E, 2I, H/32]");
    auto bias13 = L.require(ex + "gate_up_proj_bias", floats, {E, 2 * I}, "[E, 2I]");
    auto b2 = L.require(ex + "down_proj_blocks", {DType::kU8}, {E, H, I / kMxBlock, 16}, "[E, H, I/32, 16]");
    auto s2 = L.require(ex + "down_proj_scales", {DType::kU8, DType::kE8M0}, {E, H, I / kMxBlock}, "[E, H, I/32]");
    auto bias2 = L.require(ex + "down_proj_bias", floats, {E, H}, "[E, H]");
    for (const auto* r : {&s13, &bias13, &b2, &s2, &bias2})
      if (!r->ok()) return r->status();
    // The checkpoint's convention is moekit's: element 2k of a row in the low nibble of byte k, and
    // the scale byte is the e8m0 exponent (2^(byte - 127)). So the bytes are reinterpreted, not copied.
    const std::vector<int64_t> w13_shape = {E, 2 * I, H}, w13_scale_shape = {E, 2 * I, H / kMxBlock};
    const std::vector<int64_t> w2_shape = {E, H, I}, w2_scale_shape = {E, H, I / kMxBlock};
    auto w13 = TensorView::create(b13->data(), DType::kE2M1, w13_shape);
    auto w13_scale = TensorView::create(s13->data(), DType::kE8M0, w13_scale_shape);
    auto w2 = TensorView::create(b2->data(), DType::kE2M1, w2_shape);
    auto w2_scale = TensorView::create(s2->data(), DType::kE8M0, w2_scale_shape);
    for (const auto* r : {&w13, &w13_scale, &w2, &w2_scale})
      if (!r->ok()) return r->status();
    out.weights.w13 = *w13;
    out.weights.w13_scale = *w13_scale;
    out.weights.w2 = *w2;
    out.weights.w2_scale = *w2_scale;
    out.weights.w13_bias = *bias13;
    out.weights.w2_bias = *bias2;
    L.add_source("w13", ex + "gate_up_proj_blocks (rows interleave gate and up)", false);
    L.add_source("w13_scale", ex + "gate_up_proj_scales", false);
    L.add_source("w2", ex + "down_proj_blocks", false);
    L.add_source("w2_scale", ex + "down_proj_scales", false);
  } else if (*c.quant == QuantScheme::kNone) {
    if (!L.contains(ex + "gate_up_proj") && L.contains(ex + "gate_up_proj_blocks"))
      return Status::InvalidArgument(fmt::format("'{}gate_up_proj_blocks' holds MXFP4 weights but {} has no quantization_config", ex, c.config_name));
    auto gu = L.require(ex + "gate_up_proj", floats, {E, H, c.intermediate ? 2 * *c.intermediate : io::kAny}, "[E, H, 2I]");
    if (!gu.ok()) return gu.status();
    if (gu->size(2) % 2 != 0) return Status::InvalidArgument(fmt::format("'{}gate_up_proj': 2I={} is odd", ex, gu->size(2)));
    settle(L, c.intermediate, gu->size(2) / 2, c.intermediate_key, ex + "gate_up_proj");
    const int64_t I = *c.intermediate;
    auto d = L.require(ex + "down_proj", {gu->dtype()}, {E, I, H}, "[E, I, H]");
    auto bias13 = L.require(ex + "gate_up_proj_bias", floats, {E, 2 * I}, "[E, 2I]");
    auto bias2 = L.require(ex + "down_proj_bias", floats, {E, H}, "[E, H]");
    for (const auto* r : {&d, &bias13, &bias2})
      if (!r->ok()) return r->status();
    // Stored in x out (x @ W); moekit wants out x in.
    auto w13 = L.transpose_experts(*gu);
    if (!w13.ok()) return w13.status();
    auto w2 = L.transpose_experts(*d);
    if (!w2.ok()) return w2.status();
    out.weights.w13 = *w13;
    out.weights.w2 = *w2;
    out.weights.w13_bias = *bias13;
    out.weights.w2_bias = *bias2;
    L.add_source("w13", ex + "gate_up_proj (transposed; rows interleave gate and up)", true);
    L.add_source("w2", ex + "down_proj (transposed)", true);
    L.note(fmt::format("gate_up_proj and down_proj are stored [in, out]: transposed into owned tensors ({} copied)", format_bytes(L.owned_bytes())));
  } else {
    return Status::Unsupported(fmt::format("gpt_oss with quantization {} is not supported (mxfp4 or none)", quant_scheme_name(*c.quant)));
  }
  L.add_source("w13_bias", ex + "gate_up_proj_bias", false);
  L.add_source("w2_bias", ex + "down_proj_bias", false);
  return Status::Ok();
}

}  // namespace moekit::io
