// CPU stage implementations. Each follows the buffer contract of moekit/stages.h; the runner has
// validated the whole call (cpu::validate) before any of them runs. Work is split over threads by
// output column inside GEMMs and by row elsewhere, never in a way that changes a sum's order, so the
// result does not depend on the thread count.
#include "stages.h"

#include <algorithm>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "activation.h"
#include "expert_gemm.h"
#include "parallel.h"
#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"
#include "quant_reference.h"
#include "routing_reference.h"
#include "validate.h"

namespace moekit::cpu {
namespace {

// ---- small accessors -------------------------------------------------------------------------------
template <typename T>
T* ptr(const TensorView& v) { return v.data_as<T>(); }

int64_t local_experts(const StageContext& c) { return c.problem.local_experts(); }
int64_t routed_rows(const StageContext& c) { return ptr<int64_t>(c.buffers.expert_offsets)[local_experts(c)]; }
int64_t num_tokens(const StageContext& c) { return c.inputs.hidden.size(0); }
int64_t out_rows(const StageContext& c) {
  const auto& p = c.problem;
  if (p.input_format == InputFormat::kMasked) return local_experts(c) * c.inputs.hidden.size(1);
  return p.no_combine ? num_tokens(c) * p.top_k : num_tokens(c);
}

void store_row(const TensorView& out, int64_t row, const double* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) store_element(out.data(), out.dtype(), row * n + i, values[i]);
}

// The local expert of each routed row, from the offsets (for per-expert activation scales).
std::vector<int32_t> row_experts(const StageContext& c) {
  std::vector<int32_t> ex(static_cast<size_t>(routed_rows(c)));
  const int64_t* off = ptr<int64_t>(c.buffers.expert_offsets);
  for (int64_t e = 0; e < local_experts(c); ++e) std::fill(ex.begin() + off[e], ex.begin() + off[e + 1], static_cast<int32_t>(e));
  return ex;
}

// ---- routing and maps ------------------------------------------------------------------------------
void copy_routing_outputs(const StageContext& c) {
  const int64_t n = num_tokens(c) * c.problem.top_k;
  if (c.outputs.topk_ids.defined()) std::copy_n(ptr<const int32_t>(c.buffers.topk_ids), n, ptr<int32_t>(c.outputs.topk_ids));
  if (c.outputs.topk_weights.defined()) std::copy_n(ptr<const float>(c.buffers.topk_weights), n, ptr<float>(c.outputs.topk_weights));
}

Status route_stage(const StageContext& c) {
  const auto& p = c.problem;
  MOEKIT_RETURN_IF_ERROR(route(p.routing, p.num_experts, p.top_k, c.inputs.router_logits, c.inputs.e_score_correction_bias,
                               c.buffers.topk_ids, c.buffers.topk_weights));
  copy_routing_outputs(c);
  return Status::Ok();
}

// Places the routed (token, slot) pairs into expert order, given the per-expert counts in
// expert_offsets[1..]: rows are stable in (token, slot) order inside each expert, and the dest CSR
// lists each output row's sources in slot order.
void place_topk_rows(const StageContext& c) {
  const auto& p = c.problem;
  const auto& b = c.buffers;
  const int64_t T = num_tokens(c), K = p.top_k, EL = local_experts(c);
  int64_t* off = ptr<int64_t>(b.expert_offsets);
  for (int64_t e = 0; e < EL; ++e) off[e + 1] += off[e];
  std::vector<int64_t> fill(off, off + EL);
  const int32_t* ids = ptr<const int32_t>(b.topk_ids);
  const float* w = ptr<const float>(b.topk_weights);
  int64_t* src = ptr<int64_t>(b.row_source);
  float* rw = ptr<float>(b.row_weight);
  int64_t* doff = ptr<int64_t>(b.dest_offsets);
  int64_t* drows = ptr<int64_t>(b.dest_rows);
  int64_t n = 0;
  for (int64_t t = 0; t < T; ++t) {
    if (!p.no_combine) doff[t] = n;
    for (int64_t k = 0; k < K; ++k) {
      if (p.no_combine) doff[t * K + k] = n;
      const int local = local_expert_of(p, c.weights, ids[t * K + k]);
      if (local < 0) continue;
      const int64_t r = fill[local]++;
      src[r] = t;
      rw[r] = w[t * K + k];
      drows[n++] = r;
    }
  }
  doff[out_rows(c)] = n;
}

void count_topk_rows(const StageContext& c, int64_t first_slot, int64_t end_slot) {
  int64_t* off = ptr<int64_t>(c.buffers.expert_offsets);
  const int32_t* ids = ptr<const int32_t>(c.buffers.topk_ids);
  for (int64_t i = first_slot; i < end_slot; ++i) {
    const int local = local_expert_of(c.problem, c.weights, ids[i]);
    if (local >= 0) ++off[local + 1];
  }
}

void build_masked_maps(const StageContext& c) {
  const auto& b = c.buffers;
  const int64_t EL = local_experts(c), max_m = c.inputs.hidden.size(1);
  const int32_t* m = ptr<const int32_t>(c.inputs.masked_m);
  int64_t* off = ptr<int64_t>(b.expert_offsets);
  int64_t* doff = ptr<int64_t>(b.dest_offsets);
  off[0] = 0;
  int64_t r = 0;
  for (int64_t e = 0; e < EL; ++e) {
    for (int64_t i = 0; i < max_m; ++i) {
      doff[e * max_m + i] = r;
      if (i >= m[e]) continue;
      ptr<int64_t>(b.row_source)[r] = e * max_m + i;
      ptr<float>(b.row_weight)[r] = 1.0f;
      ptr<int64_t>(b.dest_rows)[r] = r;
      ++r;
    }
    off[e + 1] = r;
  }
  doff[EL * max_m] = r;
}

void build_indexed_maps(const StageContext& c) {
  const auto& b = c.buffers;
  const int64_t EL = local_experts(c), T = num_tokens(c);
  const int32_t* in_off = ptr<const int32_t>(c.inputs.expert_offsets);
  const int32_t* gather = ptr<const int32_t>(c.inputs.gather_index);
  int64_t* off = ptr<int64_t>(b.expert_offsets);
  for (int64_t e = 0; e <= EL; ++e) off[e] = in_off[e];
  const int64_t R = off[EL];
  int64_t* doff = ptr<int64_t>(b.dest_offsets);
  std::fill(doff, doff + T + 1, 0);
  for (int64_t r = 0; r < R; ++r) {
    ptr<int64_t>(b.row_source)[r] = gather[r];
    ptr<float>(b.row_weight)[r] = ptr<const float>(c.inputs.row_weights)[r];
    ++doff[gather[r] + 1];
  }
  for (int64_t t = 0; t < T; ++t) doff[t + 1] += doff[t];
  // Counting sort by token, stable in row order: each token's rows are summed in row order.
  std::vector<int64_t> fill(doff, doff + T);
  for (int64_t r = 0; r < R; ++r) ptr<int64_t>(b.dest_rows)[fill[gather[r]]++] = r;
}

Status build_maps_stage(const StageContext& c) {
  switch (c.problem.input_format) {
    case InputFormat::kStandard:
    case InputFormat::kPreRouted: {
      int64_t* off = ptr<int64_t>(c.buffers.expert_offsets);
      std::fill(off, off + local_experts(c) + 1, 0);
      count_topk_rows(c, 0, num_tokens(c) * c.problem.top_k);
      place_topk_rows(c);
      return Status::Ok();
    }
    case InputFormat::kMasked: build_masked_maps(c); return Status::Ok();
    case InputFormat::kIndexed: build_indexed_maps(c); return Status::Ok();
  }
  return Status::Internal("build_maps: unknown input format");
}

// Routing and the row counts in one pass over the tokens; placement follows.
Status route_build_maps_stage(const StageContext& c) {
  const auto& p = c.problem;
  const int64_t T = num_tokens(c), K = p.top_k, E = p.num_experts;
  int64_t* off = ptr<int64_t>(c.buffers.expert_offsets);
  std::fill(off, off + local_experts(c) + 1, 0);
  std::vector<double> bias;
  if (p.routing.method == RoutingMethod::kDeepSeekV3) {
    bias.resize(static_cast<size_t>(E));
    load_elements(c.inputs.e_score_correction_bias.data(), c.inputs.e_score_correction_bias.dtype(), 0, E, bias.data());
  }
  std::vector<double> logits(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    load_elements(c.inputs.router_logits.data(), c.inputs.router_logits.dtype(), t * E, E, logits.data());
    route_token(p.routing, logits, bias, std::span(ptr<int32_t>(c.buffers.topk_ids) + t * K, static_cast<size_t>(K)),
                std::span(ptr<float>(c.buffers.topk_weights) + t * K, static_cast<size_t>(K)));
    count_topk_rows(c, t * K, (t + 1) * K);
  }
  place_topk_rows(c);
  copy_routing_outputs(c);
  return Status::Ok();
}

// ---- expand ----------------------------------------------------------------------------------------
Status expand_stage(const StageContext& c) {
  const auto& p = c.problem;
  const int64_t R = routed_rows(c), H = p.hidden;
  double* x = ptr<double>(c.buffers.gemm1_in);
  const int64_t* src = ptr<const int64_t>(c.buffers.row_source);
  const float* rw = ptr<const float>(c.buffers.row_weight);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    load_elements(c.inputs.hidden.data(), c.inputs.hidden.dtype(), src[r] * H, H, x + r * H);
    if (p.apply_router_weight_on_input)
      for (int64_t k = 0; k < H; ++k) x[r * H + k] *= rw[r];
  }
  const auto experts = row_experts(c);
  quantize_activations(p, c.weights, Gemm::k1, std::span(x, static_cast<size_t>(R * H)), H, experts);
  return Status::Ok();
}

// ---- GEMMs -----------------------------------------------------------------------------------------
// The knob "gemm1.row_block" / "gemm2.row_block" (cpu_knob_space): weight rows per block.
int row_block(const StageContext& c, Gemm g) {
  const std::string_view v = knob_value(c, g == Gemm::k1 ? "gemm1.row_block" : "gemm2.row_block", "");
  return v == "4" ? 4 : v == "16" ? 16 : kDefaultRowBlock;
}

Status gemm_stage(const StageContext& c, Gemm g, const TensorView& in, const TensorView& out) {
  const int64_t* off = ptr<const int64_t>(c.buffers.expert_offsets);
  const int rb = row_block(c, g);
  for (int e = 0; e < local_experts(c); ++e) expert_gemm(c.problem, c.weights, g, e, off[e], off[e + 1], ptr<const double>(in), ptr<double>(out), rb);
  return Status::Ok();
}

Status gemm1_stage(const StageContext& c) { return gemm_stage(c, Gemm::k1, c.buffers.gemm1_in, c.buffers.gemm1_out); }
Status gemm2_stage(const StageContext& c) { return gemm_stage(c, Gemm::k2, c.buffers.gemm2_in, c.buffers.gemm2_out); }

// ---- activation ------------------------------------------------------------------------------------
// Activates rows [begin, end) and quantizes them for gemm2. `experts` holds one entry per row of the
// range. Only row-local or static quantization may be applied to a partial range (the plan rule
// gemm1_activation_fusion keeps dynamic per-tensor scales on the whole-range path).
void activate_rows(const StageContext& c, int64_t begin, int64_t end, std::span<const int32_t> experts) {
  const auto& p = c.problem;
  const int64_t N1 = p.gemm1_rows(), I = p.intermediate;
  const double* h = ptr<const double>(c.buffers.gemm1_out);
  double* a = ptr<double>(c.buffers.gemm2_in);
#pragma omp parallel for schedule(static) if (worth_parallel((end - begin) * p.intermediate * kCostOfExp))
  for (int64_t r = begin; r < end; ++r)
    apply_activation(p.activation, p.gate_up_layout, std::span(h + r * N1, static_cast<size_t>(N1)), std::span(a + r * I, static_cast<size_t>(I)));
  quantize_activations(p, c.weights, Gemm::k2, std::span(a + begin * I, static_cast<size_t>((end - begin) * I)), I, experts);
}

Status activation_stage(const StageContext& c) {
  const auto experts = row_experts(c);
  activate_rows(c, 0, routed_rows(c), experts);
  return Status::Ok();
}

// gemm1 then the activation, a block of rows at a time, while the block is in cache.
constexpr int64_t kRowBlock = 16;

Status gemm1_activation_stage(const StageContext& c) {
  const int64_t* off = ptr<const int64_t>(c.buffers.expert_offsets);
  const auto experts = row_experts(c);
  for (int e = 0; e < local_experts(c); ++e)
    for (int64_t b = off[e]; b < off[e + 1]; b += kRowBlock) {
      const int64_t end = std::min(off[e + 1], b + kRowBlock);
      expert_gemm(c.problem, c.weights, Gemm::k1, e, b, end, ptr<const double>(c.buffers.gemm1_in), ptr<double>(c.buffers.gemm1_out),
                  row_block(c, Gemm::k1));
      activate_rows(c, b, end, std::span(experts).subspan(b, end - b));
    }
  return Status::Ok();
}

// ---- finalize --------------------------------------------------------------------------------------
// The factor on row r's output: routed_scaling_factor times its weight, unless the weight went on
// the input; the Masked format applies neither (the dispatcher's combine does).
double row_factor(const StageContext& c, int64_t r) {
  const auto& p = c.problem;
  if (p.input_format == InputFormat::kMasked) return 1.0;
  const double w = p.apply_router_weight_on_input ? 1.0 : ptr<const float>(c.buffers.row_weight)[r];
  return p.routing.routed_scaling_factor * w;
}

// out[o] = the sum of o's source rows of gemm2_out, each times its factor, in dest order (the fixed
// order). A Masked row without a source (at or beyond masked_m) stays untouched.
void combine_row(const StageContext& c, int64_t o, std::vector<double>& acc) {
  const int64_t H = c.problem.hidden;
  const int64_t* doff = ptr<const int64_t>(c.buffers.dest_offsets);
  const int64_t* drows = ptr<const int64_t>(c.buffers.dest_rows);
  const double* y = ptr<const double>(c.buffers.gemm2_out);
  if (c.problem.input_format == InputFormat::kMasked && doff[o] == doff[o + 1]) return;
  std::fill(acc.begin(), acc.end(), 0.0);
  for (int64_t i = doff[o]; i < doff[o + 1]; ++i) {
    const int64_t r = drows[i];
    const double f = row_factor(c, r);
    for (int64_t k = 0; k < H; ++k) acc[k] += f * y[r * H + k];
  }
  store_row(c.outputs.out, o, acc.data(), H);
}

Status finalize_stage(const StageContext& c) {
  const int64_t O = out_rows(c);
#pragma omp parallel
  {
    std::vector<double> acc(static_cast<size_t>(c.problem.hidden));
#pragma omp for schedule(static)
    for (int64_t o = 0; o < O; ++o) combine_row(c, o, acc);
  }
  return Status::Ok();
}

// gemm2 with finalize, token-major: each output row's source rows go through gemm2 one after the
// other and are combined at once, while they are in cache. The same arithmetic as gemm2 then
// finalize, in another order of work.
Status gemm2_finalize_stage(const StageContext& c) {
  const int64_t O = out_rows(c);
  const int64_t* doff = ptr<const int64_t>(c.buffers.dest_offsets);
  const int64_t* drows = ptr<const int64_t>(c.buffers.dest_rows);
  const double* a = ptr<const double>(c.buffers.gemm2_in);
  double* y = ptr<double>(c.buffers.gemm2_out);
  const auto experts = row_experts(c);
  const int64_t work = routed_rows(c) * c.problem.hidden * c.problem.intermediate;
  const int rb = row_block(c, Gemm::k2);
#pragma omp parallel if (worth_parallel(work))
  {
    std::vector<double> acc(static_cast<size_t>(c.problem.hidden));
#pragma omp for schedule(static)
    for (int64_t o = 0; o < O; ++o) {
      // Each row has one destination, so only this iteration writes its gemm2_out rows.
      for (int64_t i = doff[o]; i < doff[o + 1]; ++i)
        expert_gemm(c.problem, c.weights, Gemm::k2, experts[drows[i]], drows[i], drows[i] + 1, a, y, rb);
      combine_row(c, o, acc);
    }
  }
  return Status::Ok();
}

// ---- the whole layer, token-major (decode) --------------------------------------------------------
std::optional<std::string> token_major_declines(const PlanQuery& q) {
  if (q.num_tokens > kTokenMajorMaxTokens)
    return fmt::format("T={} > {}: token-major reads each expert's weights once per token; the expert-major stages read them once",
                       q.num_tokens, kTokenMajorMaxTokens);
  const auto quant = q.problem.quant;
  if (quant == QuantScheme::kFp8PerTensor && (!q.weights.w13_input_scale || !q.weights.w2_input_scale))
    return std::string("a dynamic per-tensor activation scale needs every row before any is quantized");
  return std::nullopt;
}

// For each token: its slots one at a time through expand, gemm1, activation, gemm2, summed in slot
// order: the same arithmetic as the stage pipeline, without the maps. Uses row 0 of each buffer.
Status token_major_layer(const StageContext& c) {
  const auto& p = c.problem;
  const auto& b = c.buffers;
  const int64_t T = num_tokens(c), K = p.top_k, H = p.hidden, I = p.intermediate, N1 = p.gemm1_rows();
  if (p.input_format == InputFormat::kStandard) MOEKIT_RETURN_IF_ERROR(route_stage(c));
  const int32_t* ids = ptr<const int32_t>(b.topk_ids);
  const float* weights = ptr<const float>(b.topk_weights);
  double* x = ptr<double>(b.gemm1_in);
  double* h = ptr<double>(b.gemm1_out);
  double* a = ptr<double>(b.gemm2_in);
  double* y = ptr<double>(b.gemm2_out);
  std::vector<double> acc(static_cast<size_t>(H));
  for (int64_t t = 0; t < T; ++t) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t k = 0; k < K; ++k) {
      const int local = local_expert_of(p, c.weights, ids[t * K + k]);
      if (local >= 0) {
        const int32_t ex[] = {local};
        const double wgt = weights[t * K + k];
        load_elements(c.inputs.hidden.data(), c.inputs.hidden.dtype(), t * H, H, x);
        if (p.apply_router_weight_on_input)
          for (int64_t i = 0; i < H; ++i) x[i] *= wgt;
        quantize_activations(p, c.weights, Gemm::k1, std::span(x, static_cast<size_t>(H)), H, ex);
        expert_gemm(p, c.weights, Gemm::k1, local, 0, 1, x, h, row_block(c, Gemm::k1));
        apply_activation(p.activation, p.gate_up_layout, std::span(h, static_cast<size_t>(N1)), std::span(a, static_cast<size_t>(I)));
        quantize_activations(p, c.weights, Gemm::k2, std::span(a, static_cast<size_t>(I)), I, ex);
        expert_gemm(p, c.weights, Gemm::k2, local, 0, 1, a, y, row_block(c, Gemm::k2));
        const double f = p.routing.routed_scaling_factor * (p.apply_router_weight_on_input ? 1.0 : wgt);
        for (int64_t i = 0; i < H; ++i) acc[i] += f * y[i];
      }
      if (p.no_combine) {
        store_row(c.outputs.out, t * K + k, acc.data(), H);
        std::fill(acc.begin(), acc.end(), 0.0);
      }
    }
    if (!p.no_combine) store_row(c.outputs.out, t, acc.data(), H);
  }
  return Status::Ok();
}

// The CPU backend's knobs: the weight-row block of each GEMM (expert_gemm). Every value gives the
// same bits; only the speed differs (how many rows share one pass over x, and the vector width).
std::vector<KnobSpec> cpu_knob_space(const PlanQuery&, const DeviceTarget&) {
  const std::vector<std::string> values = {"4", "8", "16"};
  const std::string heuristic = std::to_string(kDefaultRowBlock);
  const std::string why = fmt::format("{} weight rows a pass over x: every value gives the same bits, only the speed differs", heuristic);
  return {{"gemm1.row_block", values, heuristic, Stage::kGemm1, why}, {"gemm2.row_block", values, heuristic, Stage::kGemm2, why}};
}

}  // namespace

Status register_cpu_backend(Registry& r) {
  r.set_knob_space(BackendKind::kCpu, cpu_knob_space);
  using F = InputFormat;
  const std::vector<F> all = {F::kStandard, F::kPreRouted, F::kMasked, F::kIndexed};
  const BackendKind cpu = BackendKind::kCpu;
  r.set_hooks(cpu, {.validate_weights = validate_weights, .validate_io = validate_io, .rows_dtype = kIntermediateDType});
  MOEKIT_RETURN_IF_ERROR(r.add_fused_layer({"cpu.token_major_layer", cpu, {F::kStandard, F::kPreRouted}, token_major_declines, token_major_layer}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cpu.route", cpu, Stage::kRoute, Stage::kRoute, {F::kStandard}, route_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cpu.route_build_maps", cpu, Stage::kRoute, Stage::kBuildMaps, {F::kStandard}, route_build_maps_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cpu.build_maps", cpu, Stage::kBuildMaps, Stage::kBuildMaps, all, build_maps_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cpu.expand", cpu, Stage::kExpand, Stage::kExpand, all, expand_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cpu.gemm1", cpu, Stage::kGemm1, Stage::kGemm1, all, gemm1_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cpu.gemm1_activation", cpu, Stage::kGemm1, Stage::kActivation, all, gemm1_activation_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cpu.activation", cpu, Stage::kActivation, Stage::kActivation, all, activation_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cpu.gemm2", cpu, Stage::kGemm2, Stage::kGemm2, all, gemm2_stage}));
  MOEKIT_RETURN_IF_ERROR(r.add_stage({"cpu.gemm2_finalize", cpu, Stage::kGemm2, Stage::kFinalize, all, gemm2_finalize_stage}));
  return r.add_stage({"cpu.finalize", cpu, Stage::kFinalize, Stage::kFinalize, all, finalize_stage});
}

}  // namespace moekit::cpu
