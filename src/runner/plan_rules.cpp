// The fusion matrix, as code. Each function states the conditions of one decision; the reasons are
// written for the user reading `moekit explain`. Decisions for the CUDA backend describe the policy
// the CUDA kernels follow (docs/runner.md); whether a kernel exists is checked by the plan builder.
#include "plan_rules.h"

#include <utility>

#include <fmt/format.h>

namespace moekit::rules {
namespace {

Decision on(const char* rule, std::string reason) { return {true, rule, std::move(reason)}; }
Decision off(const char* rule, std::string reason) { return {false, rule, std::move(reason)}; }
// Off because it would be slower here, not because it would be wrong: a caller may force it on.
Decision off_for_cost(const char* rule, std::string reason) { return {false, rule, std::move(reason), true}; }

bool is_cuda(const RuleInput& in) { return in.device.backend == BackendKind::kCuda; }

bool fp8_activations(QuantScheme q) {
  return q == QuantScheme::kFp8PerTensor || q == QuantScheme::kFp8PerToken || q == QuantScheme::kFp8Block ||
         q == QuantScheme::kMxfp4Mxfp8 || q == QuantScheme::kW4A8;
}

}  // namespace

ActQuant activation_quantization(const MoeProblem& p, const WeightTraits& w, bool gemm2) {
  switch (p.quant) {
    case QuantScheme::kNone:
    case QuantScheme::kW4A16:
    case QuantScheme::kW8A16:
    case QuantScheme::kMxfp4: return ActQuant::kNone;
    case QuantScheme::kFp8PerTensor:
      return (gemm2 ? w.w2_input_scale : w.w13_input_scale) ? ActQuant::kStaticPerTensor : ActQuant::kDynamicPerTensor;
    case QuantScheme::kW4A8: return ActQuant::kStaticPerTensor;
    case QuantScheme::kFp8PerToken:
    case QuantScheme::kFp8Block:
    case QuantScheme::kInt8PerToken:
    case QuantScheme::kMxfp4Mxfp8:
    case QuantScheme::kNvfp4: return ActQuant::kDynamicPerRow;
  }
  return ActQuant::kNone;
}

Decision backend_supports_scheme(const RuleInput& in) {
  const auto q = in.problem.quant;
  if (!is_cuda(in)) return on(__func__, "the CPU backend implements every scheme (float64 reference math)");
  const int cc = in.device.compute_capability;
  if (cc < 80) return off(__func__, fmt::format("{}: compute capability {} is below 8.0, the oldest the CUDA backend supports", in.device.name, cc));
  if (fp8_activations(q) && cc < 89)
    return off(__func__, fmt::format("quant={} needs fp8 tensor cores (sm_89 or newer); {} is sm_{}", quant_scheme_name(q), in.device.name, cc));
  if (q == QuantScheme::kNvfp4 && cc < 100)
    return off(__func__, fmt::format("quant=nvfp4 has fp4 activations, which need fp4 tensor cores (sm_100 or newer); {} is sm_{}", in.device.name, cc));
  if (q != QuantScheme::kNone)
    return off(__func__, fmt::format("quant={}: the CUDA backend runs 16-bit layers only so far (quant=none with bf16 or f16); "
                                     "--backend cpu runs every scheme", quant_scheme_name(q)));
  const DType act = in.problem.activation_dtype;
  if (act != DType::kBF16 && act != DType::kF16)
    return off(__func__, fmt::format("activation dtype {}: the CUDA backend's tensor-core GEMMs take bf16 or f16", dtype_name(act)));
  for (const auto& [name, v] : {std::pair{"hidden", in.problem.hidden}, std::pair{"intermediate", in.problem.intermediate}})
    if (v % kCudaRowMultiple != 0)
      return off(__func__, fmt::format("{}={} is not a multiple of {}: the CUDA backend reads rows 16 bytes at a time", name, v, kCudaRowMultiple));
  // Hopper runs the sm_90a kernel (TMA loads, wgmma) for each GEMM whose plan tile is an sm90_* one;
  // the other tiles, and every tile on other GPUs, are the mma.sync kernels.
  if (cc == 90)
    return on(__func__, fmt::format("quant=none, {} on sm_90: tensor-core grouped GEMMs (TMA + wgmma on the sm90_* tiles, "
                                    "mma.sync on the others; the gemm tiles below say which)", dtype_name(act)));
  return on(__func__, fmt::format("quant=none, {} on sm_{}: tensor-core grouped GEMMs (mma.sync)", dtype_name(act), cc));
}

Decision stage_runs(const RuleInput& in, Stage stage) {
  const auto f = in.problem.input_format;
  switch (stage) {
    case Stage::kRoute:
      if (f == InputFormat::kStandard) return on(__func__, "router_logits are given: routing runs inside the layer");
      return off(__func__, fmt::format("format={}: the caller routed already", input_format_name(f)));
    case Stage::kBuildMaps:
      switch (f) {
        case InputFormat::kStandard:
        case InputFormat::kPreRouted: return on(__func__, "group the T*K rows by expert from topk_ids (stable in token order)");
        case InputFormat::kMasked: return on(__func__, "rows are grouped already; the maps enumerate masked_m rows per expert");
        case InputFormat::kIndexed: return on(__func__, "the maps come from expert_offsets and gather_index");
      }
      break;
    case Stage::kExpand: return on(__func__, "gather each row's input into expert order");
    case Stage::kGemm1: return on(__func__, "every format runs gemm1");
    case Stage::kActivation: return on(__func__, "every format runs the activation");
    case Stage::kGemm2: return on(__func__, "every format runs gemm2");
    case Stage::kFinalize:
      if (f == InputFormat::kMasked) return on(__func__, "write each valid row back to its [E_local, max_m, H] place");
      return on(__func__, in.problem.no_combine ? "scale each (token, slot) row into [T, K, H]" : "weighted sum of each token's rows into [T, H]");
  }
  return off(__func__, "unknown stage");
}

Decision routing_prologue_fusion(const RuleInput& in) {
  const auto f = in.problem.input_format;
  if (f != InputFormat::kStandard)
    return off(__func__, fmt::format("format={} has no routing stage to fuse with", input_format_name(f)));
  if (is_cuda(in)) {
    const int64_t rows = in.num_tokens * in.problem.top_k;
    if (rows > kSingleCtaPrologueMaxRows)
      return off(__func__, fmt::format("T*K={} exceeds {}, the rows one CTA sorts in shared memory; routing runs a warp per token, "
                                       "then the scalable maps (radix sort + scan)", rows, kSingleCtaPrologueMaxRows));
    if (in.num_tokens > kSingleCtaRouteMaxTokens)
      return off_for_cost(__func__, fmt::format("T={} > {}: one CTA would route the tokens a warp each in turn; routing over the whole GPU, "
                                                "then one CTA for the maps (T*K={} <= {}), is faster", in.num_tokens, kSingleCtaRouteMaxTokens,
                                                rows, kSingleCtaPrologueMaxRows));
    return on(__func__, fmt::format("T={} <= {} and T*K={} <= {}: one CTA routes (a warp per token) and builds the maps in one launch",
                                    in.num_tokens, kSingleCtaRouteMaxTokens, rows, kSingleCtaPrologueMaxRows));
  }
  return on(__func__, "each token is routed and its rows counted in the same pass");
}

// On a Hopper GPU the plan's GEMM tile may be the CUTLASS sm_90a kernel's. The rules cannot see the
// tile (a backend knob chosen after them), so reasons that depend on it say what such a tile does.
bool may_run_sm90_tile(const RuleInput& in) { return in.device.compute_capability == 90; }

// A fusion the sm_90a kernel has no epilogue for: with its tile the fused step runs two kernels.
std::string hopper_note(const RuleInput& in, std::string_view what) {
  if (!may_run_sm90_tile(in)) return "";
  return fmt::format(" (with an sm_90a tile, which has no such epilogue, the step runs {})", what);
}

Decision gemm1_activation_fusion(const RuleInput& in) {
  const auto q2 = activation_quantization(in.problem, in.weights, /*gemm2=*/true);
  if (q2 == ActQuant::kDynamicPerTensor)
    return off(__func__, "gemm2's dynamic per-tensor scale needs the amax of every activated row before any row is quantized");
  if (is_cuda(in) && (in.problem.quant == QuantScheme::kFp8PerToken || in.problem.quant == QuantScheme::kInt8PerToken) &&
      in.problem.intermediate > 128)
    return off(__func__, fmt::format("quant={}: a per-token scale spans all I={} columns, an epilogue tile holds 128", quant_scheme_name(in.problem.quant), in.problem.intermediate));
  if (activation_is_gated(in.problem.activation.kind)) {
    // The sm_90a kernel's epilogue sees gate j and up j together only where W13 interleaves them.
    const bool interleaved = in.problem.gate_up_layout == GateUpLayout::kInterleaved;
    std::string hopper = !may_run_sm90_tile(in) ? ""
                         : interleaved ? " (sm_90a tiles too: the gate/up rows are interleaved)"
                                       : " (sm_90a tiles need interleaved gate/up rows: here gemm1, then the activation kernel)";
    return on(__func__, is_cuda(in) ? "each gemm1 tile loads gate and up weight rows in pairs, so the epilogue computes the gated activation" + hopper
                                    : "each block of gemm1 rows is activated while it is in cache");
  }
  return on(__func__, "an elementwise activation applies in the epilogue");
}

// gemm2_finalize_fusion on CUDA: below this many bytes of float32 gemm2 rows (written and read
// once), the unfused finalize is the cheaper combine.
constexpr double kFinalizeTrafficBytes = 16e6;

Decision gemm2_finalize_fusion(const RuleInput& in) {
  const auto& p = in.problem;
  if (p.input_format == InputFormat::kMasked) return on(__func__, "each row has one destination: gemm2 stores it in place");
  if (p.no_combine) return on(__func__, "no_combine: each (token, slot) row has one destination, a scaled store");
  if (!is_cuda(in)) {
    // The CPU fused combine computes each token's rows one after the other (token-major), so w2 is
    // read once per row instead of once per expert: only worth it when experts see about one row.
    if (p.quant != QuantScheme::kNone)
      return off_for_cost(__func__, fmt::format("quant={}: the token-major combine would dequantize w2 once per row instead of once per expert", quant_scheme_name(p.quant)));
    const int64_t rows = in.num_tokens * p.top_k;
    if (rows > p.local_experts())
      return off_for_cost(__func__, fmt::format("T*K={} rows over E_local={} experts: the token-major combine would re-read w2 per row; gemm2 then finalize reads it once per expert", rows, p.local_experts()));
    return on(__func__, fmt::format("T*K={} <= E_local={}: each token's rows are computed and summed in (token, slot) order in one pass", rows, p.local_experts()));
  }
  if (p.deterministic) {
    if (p.input_format == InputFormat::kIndexed)
      return off(__func__, "deterministic: an Indexed token may receive any number of rows, and atomic adds would sum them in arbitrary order");
    if (p.top_k > 2)
      return off(__func__, fmt::format("deterministic with top_k={}: atomic adds of 3 or more rows into one token depend on their order "
                                       "(with at most 2, 0+a+b == 0+b+a); the fixed-order finalize runs", p.top_k));
  }
  // The atomic combine costs two launches besides gemm2 (zeroing the float32 accumulator and
  // converting it); the fixed-order finalize costs one, plus writing gemm2's float32 rows and
  // reading them back. Few rows: that traffic is cheaper than the launches (measured on the H200,
  // docs/perf-notes.md).
  const int64_t rows = in.num_tokens * p.top_k;
  const double row_bytes = static_cast<double>(rows) * static_cast<double>(p.hidden) * 8.0;
  if (row_bytes <= kFinalizeTrafficBytes)
    return off_for_cost(__func__, fmt::format("T*K={} rows x H={}: gemm2's float32 rows and a fixed-order finalize move {:.1f} MB, "
                                              "cheaper than the atomic combine's two extra launches (zero, convert)",
                                              rows, p.hidden, row_bytes / 1e6));
  if (p.deterministic)
    return on(__func__, fmt::format("deterministic with top_k={} <= 2: atomic adds into the zeroed output are order-independent", p.top_k));
  return on(__func__, "atomic adds of weighted rows into the zeroed output" + hopper_note(in, "gemm2, then the fixed-order finalize"));
}

std::optional<Placement> router_weight_placement(const RuleInput& in) {
  const auto& p = in.problem;
  if (p.input_format == InputFormat::kMasked)
    return Placement{"routing weights", Stage::kFinalize, __func__, "format=masked: not applied; the dispatcher's combine applies them"};
  if (p.apply_router_weight_on_input)
    return Placement{"routing weights", Stage::kExpand, __func__, "apply_router_weight_on_input: each input row is multiplied before gemm1 (top_k=1)"};
  return Placement{"routing weights", Stage::kFinalize, __func__, "each row's output is multiplied by its weight in the sum"};
}

std::optional<Placement> routed_scaling_placement(const RuleInput& in) {
  const auto& p = in.problem;
  if (p.routing.routed_scaling_factor == 1.0f) return std::nullopt;
  if (p.input_format == InputFormat::kMasked)
    return Placement{"routed_scaling_factor", Stage::kFinalize, __func__, "format=masked: not applied; the dispatcher's combine applies it"};
  return Placement{"routed_scaling_factor", Stage::kFinalize, __func__,
                   fmt::format("{} multiplies every row in finalize (topk_weights exclude it)", p.routing.routed_scaling_factor)};
}

std::optional<Placement> gemm1_input_quant_placement(const RuleInput& in) {
  switch (activation_quantization(in.problem, in.weights, false)) {
    case ActQuant::kNone: return std::nullopt;
    case ActQuant::kStaticPerTensor:
      return Placement{"gemm1 input quantization", Stage::kExpand, __func__, "static per-tensor scale: quantized as rows are gathered"};
    case ActQuant::kDynamicPerTensor:
      return Placement{"gemm1 input quantization", Stage::kExpand, __func__, "dynamic per-tensor scale: an amax pass over all rows, then quantized as rows are gathered"};
    case ActQuant::kDynamicPerRow:
      return Placement{"gemm1 input quantization", Stage::kExpand, __func__, "row-local dynamic scales: quantized as rows are gathered"};
  }
  return std::nullopt;
}

std::optional<Placement> gemm2_input_quant_placement(const RuleInput& in, bool activation_fused) {
  const auto q = activation_quantization(in.problem, in.weights, true);
  if (q == ActQuant::kNone) return std::nullopt;
  const Stage where = activation_fused ? Stage::kGemm1 : Stage::kActivation;
  const char* why = q == ActQuant::kDynamicPerTensor ? "dynamic per-tensor scale: an amax pass over all activated rows, then quantized"
                    : q == ActQuant::kStaticPerTensor ? "static per-tensor scale: quantized as each row is activated"
                                                      : "row-local dynamic scales: quantized as each row is activated";
  return Placement{"gemm2 input quantization", where, __func__, why};
}

std::optional<Placement> gemm1_awq_placement(const RuleInput& in) {
  if (!in.weights.w13_pre_quant_scale) return std::nullopt;
  return Placement{"gemm1 AWQ pre-quant scale", Stage::kExpand, __func__, "multiplies each gathered row per channel, before quantization"};
}

std::optional<Placement> gemm2_awq_placement(const RuleInput& in, bool activation_fused) {
  if (!in.weights.w2_pre_quant_scale) return std::nullopt;
  return Placement{"gemm2 AWQ pre-quant scale", activation_fused ? Stage::kGemm1 : Stage::kActivation, __func__,
                   "multiplies each activated row per channel, before quantization"};
}

}  // namespace moekit::rules
