#include "bench/floor.h"

#include <algorithm>
#include <vector>

namespace moekit::bench {

WeightBytes weight_bytes(const MoeWeights& w, int local_experts) {
  WeightBytes b;
  for (const TensorView* t : {&w.w13, &w.w2, &w.w13_bias, &w.w2_bias, &w.w13_scale, &w.w2_scale, &w.w13_zero_point,
                              &w.w2_zero_point, &w.w13_global_scale, &w.w2_global_scale, &w.w13_input_scale,
                              &w.w2_input_scale, &w.w13_pre_quant_scale, &w.w2_pre_quant_scale}) {
    if (!t->defined()) continue;
    const double bytes = static_cast<double>(t->storage_bytes());
    // A leading [E_local] dimension is per expert; anything else (a scalar, an [H] vector) is read once.
    if (t->ndim() >= 1 && t->size(0) == local_experts && local_experts > 0) b.per_expert += bytes / local_experts;
    else b.shared += bytes;
  }
  return b;
}

std::pair<double, double> rotation_bytes(const MoeProblem& p, const WeightBytes& w) {
  return {w.per_expert * std::min(p.top_k, p.local_experts()), w.per_expert * p.local_experts() + w.shared};
}

std::vector<int64_t> rows_per_local_expert(const MoeProblem& p, std::span<const int32_t> topk_ids) {
  const int64_t begin = p.local_expert_begin, n = p.local_experts();
  std::vector<int64_t> rows(static_cast<size_t>(n), 0);
  for (int32_t id : topk_ids)
    if (id >= begin && id < begin + n) ++rows[static_cast<size_t>(id - begin)];
  return rows;
}

LayerTraffic layer_traffic(const MoeProblem& p, std::span<const int32_t> topk_ids, const WeightBytes& w,
                           double activation_bytes) {
  LayerTraffic t;
  for (int64_t r : rows_per_local_expert(p, topk_ids)) {
    t.routed_rows += r;
    t.experts_hit += r > 0;
    t.max_expert_rows = std::max(t.max_expert_rows, r);
  }
  t.weight_bytes = static_cast<double>(t.experts_hit) * w.per_expert + (t.experts_hit > 0 ? w.shared : 0.0);
  t.activation_bytes = activation_bytes;
  t.flops = 2.0 * static_cast<double>(t.routed_rows) * (static_cast<double>(p.gemm1_rows()) + p.intermediate) * p.hidden;
  return t;
}

Floor layer_floor(const LayerTraffic& t, double bandwidth, double peak_flops) {
  Floor f;
  f.memory_seconds = bandwidth > 0 ? t.bytes() / bandwidth : 0.0;
  f.compute_seconds = peak_flops > 0 ? t.flops / peak_flops : 0.0;
  const bool compute = f.compute_seconds > f.memory_seconds;
  f.seconds = compute ? f.compute_seconds : f.memory_seconds;
  f.bound = compute ? "compute" : "memory";
  return f;
}

}  // namespace moekit::bench
