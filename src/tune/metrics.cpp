#include "tune/metrics.h"

#include <vector>

#include "moekit/dtype.h"

namespace moekit::tune {

RoutingStats routing_stats(const MoeProblem& p, int64_t tokens, std::span<const int32_t> ids) {
  std::vector<int64_t> counts(static_cast<size_t>(p.local_experts()), 0);
  for (int32_t id : ids) {
    const int64_t local = int64_t{id} - p.local_expert_begin;
    if (local >= 0 && local < p.local_experts()) ++counts[static_cast<size_t>(local)];
  }
  return routing_stats_from_counts(p, tokens, p.no_combine ? tokens * p.top_k : tokens, counts);
}

RoutingStats routing_stats_from_counts(const MoeProblem&, int64_t tokens, int64_t out_rows, std::span<const int64_t> rows_per_expert) {
  RoutingStats r{.tokens = tokens, .out_rows = out_rows};
  for (int64_t n : rows_per_expert) {
    r.rows += n;
    r.active_experts += n > 0 ? 1 : 0;
  }
  return r;
}

double weight_element_bytes(const MoeProblem& p) {
  switch (p.quant) {
    case QuantScheme::kNone: return static_cast<double>(dtype_storage_bytes(p.activation_dtype, 1));
    case QuantScheme::kFp8PerTensor:
    case QuantScheme::kFp8PerToken:
    case QuantScheme::kFp8Block:
    case QuantScheme::kInt8PerToken:
    case QuantScheme::kW8A16: return 1.0;
    case QuantScheme::kW4A16:
    case QuantScheme::kMxfp4:
    case QuantScheme::kMxfp4Mxfp8:
    case QuantScheme::kNvfp4:
    case QuantScheme::kW4A8: return 0.5;
  }
  return 1.0;
}

Work stage_work(const MoeProblem& p, Stage stage, const RoutingStats& r) {
  const double a = static_cast<double>(dtype_storage_bytes(p.activation_dtype, 1));
  const double wb = weight_element_bytes(p);
  const double T = static_cast<double>(r.tokens), R = static_cast<double>(r.rows), X = static_cast<double>(r.active_experts);
  const double E = p.num_experts, EL = p.local_experts(), K = p.top_k, H = p.hidden, I = p.intermediate, N1 = p.gemm1_rows();
  const double O = static_cast<double>(r.out_rows);
  switch (stage) {
    case Stage::kRoute: return {0, T * E * 4 + T * K * (4 + 4)};
    case Stage::kBuildMaps: return {0, T * K * 4 + R * (8 + 4 + 8) + (EL + 1) * 8 + (O + 1) * 8};
    case Stage::kExpand: return {0, 2 * R * H * a};
    case Stage::kGemm1: return {2 * R * H * N1, X * N1 * H * wb + R * H * a + R * N1 * a};
    case Stage::kActivation: return {0, R * N1 * a + R * I * a};
    case Stage::kGemm2: return {2 * R * I * H, X * H * I * wb + R * I * a + R * H * a};
    case Stage::kFinalize: return {0, R * H * a + O * H * a};
  }
  return {};
}

Work step_work(const MoeProblem& p, Stage first, Stage last, const RoutingStats& r) {
  Work w;
  for (int s = static_cast<int>(first); s <= static_cast<int>(last); ++s) {
    const Work ws = stage_work(p, Stage(s), r);
    w.flops += ws.flops;
    w.bytes += ws.bytes;
  }
  return w;
}

}  // namespace moekit::tune
