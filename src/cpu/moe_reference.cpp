// The CPU reference MoE layer. The stages follow docs/DESIGN.md: route -> build maps (rows grouped
// by expert) -> expand (+ activation quantization) -> gemm1 (+bias) -> activation (+quantization)
// -> gemm2 (+bias) -> finalize. Everything is computed in double; only the final store rounds (to
// the activation dtype, nearest-even). Work is split over threads by output column inside each
// expert's GEMM, so the result does not depend on the thread count.
#include <algorithm>
#include <tuple>
#include <vector>

#include "activation.h"
#include "expert_gemm.h"
#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"
#include "parallel.h"
#include "quant_reference.h"
#include "validate.h"

namespace moekit::cpu {
namespace {

// One expanded row: `slot` of `token` goes through local `expert` with routing `weight`.
// For the masked format, token is the row index inside the expert's block and slot is 0.
struct Row {
  int64_t token;
  int32_t slot;
  int32_t expert;
  double weight;
};

// Rows grouped by local expert, stable in (token, slot) order: the "build maps" stage.
// offsets[e] .. offsets[e+1] are expert e's rows (TensorRT-LLM's expert_first_token_offset).
struct Permutation {
  std::vector<Row> rows;
  std::vector<int64_t> offsets;
};

Status build_rows(const MoeProblem& p, const MoeWeights& w, const MoeInputs& in, const MoeOutputs& out, Permutation& perm) {
  std::vector<Row> unsorted;
  const int K = p.top_k;
  switch (p.input_format) {
    case InputFormat::kStandard:
    case InputFormat::kPreRouted: {
      const int64_t T = in.hidden.size(0);
      std::vector<int32_t> ids(static_cast<size_t>(T * K));
      std::vector<float> weights(static_cast<size_t>(T * K));
      if (p.input_format == InputFormat::kStandard) {
        const TensorView ids_view(ids.data(), DType::kI32, {T, K});
        const TensorView weights_view(weights.data(), DType::kF32, {T, K});
        MOEKIT_RETURN_IF_ERROR(route(p.routing, p.num_experts, K, in.router_logits, in.e_score_correction_bias, ids_view, weights_view));
        if (out.topk_ids.data()) std::copy(ids.begin(), ids.end(), out.topk_ids.data_as<int32_t>());
        if (out.topk_weights.data()) std::copy(weights.begin(), weights.end(), out.topk_weights.data_as<float>());
      } else {
        std::copy_n(in.topk_ids.data_as<const int32_t>(), T * K, ids.begin());
        std::copy_n(in.topk_weights.data_as<const float>(), T * K, weights.begin());
      }
      for (int64_t i = 0; i < T * K; ++i) {
        const int local = local_expert_of(p, w, ids[i]);
        if (local >= 0) unsorted.push_back({i / K, static_cast<int32_t>(i % K), local, weights[i]});
      }
      break;
    }
    case InputFormat::kMasked: {
      for (int e = 0; e < p.local_experts(); ++e)
        for (int32_t m = 0; m < in.masked_m.data_as<const int32_t>()[e]; ++m) unsorted.push_back({m, 0, e, 1.0});
      break;
    }
    case InputFormat::kIndexed: {
      const auto* off = in.expert_offsets.data_as<const int32_t>();
      for (int e = 0; e < p.local_experts(); ++e)
        for (int32_t r = off[e]; r < off[e + 1]; ++r)
          unsorted.push_back({in.gather_index.data_as<const int32_t>()[r], r, e, in.row_weights.data_as<const float>()[r]});
      break;
    }
  }
  perm.offsets.assign(p.local_experts() + 1, 0);
  for (const Row& r : unsorted) ++perm.offsets[r.expert + 1];
  for (int e = 0; e < p.local_experts(); ++e) perm.offsets[e + 1] += perm.offsets[e];
  perm.rows.resize(unsorted.size());
  std::vector<int64_t> fill(perm.offsets.begin(), perm.offsets.end() - 1);
  for (const Row& r : unsorted) perm.rows[fill[r.expert]++] = r;
  return Status::Ok();
}

// Weight rows are dequantized kRowBlock at a time into a small per-thread buffer, k-major, so that
// memory stays at kRowBlock * K doubles per thread whatever the expert size, and the kRowBlock dot
// products of one input row advance together. Each still sums in k order from zero and adds the
// bias last: the result is that of a plain dot product, bit for bit.
std::vector<int32_t> row_experts(const Permutation& perm) {
  std::vector<int32_t> ex(perm.rows.size());
  for (size_t r = 0; r < perm.rows.size(); ++r) ex[r] = perm.rows[r].expert;
  return ex;
}

void store_row(const TensorView& out, int64_t row, const double* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) store_element(out.data(), out.dtype(), row * n + i, values[i]);
}

}  // namespace

Status run_reference(const MoeProblem& p, const MoeWeights& w, const MoeInputs& in, const MoeOutputs& out) {
  MOEKIT_RETURN_IF_ERROR(validate(p, w, in, out));
  const int64_t H = p.hidden, I = p.intermediate, N1 = p.gemm1_rows();
  Permutation perm;
  MOEKIT_RETURN_IF_ERROR(build_rows(p, w, in, out, perm));
  const int64_t R = static_cast<int64_t>(perm.rows.size());
  const std::vector<int32_t> experts = row_experts(perm);

  // Expand: gather each row's token (the masked format reads its own block).
  std::vector<double> x(static_cast<size_t>(R * H));
#pragma omp parallel for schedule(static) if (worth_parallel(R * H))
  for (int64_t r = 0; r < R; ++r) {
    const Row& row = perm.rows[r];
    const int64_t src = p.input_format == InputFormat::kMasked ? row.expert * in.hidden.size(1) + row.token : row.token;
    load_elements(in.hidden.data(), in.hidden.dtype(), src * H, H, x.data() + r * H);
    if (p.apply_router_weight_on_input)
      for (int64_t k = 0; k < H; ++k) x[r * H + k] *= row.weight;
  }
  quantize_activations(p, w, Gemm::k1, x, H, experts);

  std::vector<double> h1(static_cast<size_t>(R * N1));
  for (int e = 0; e < p.local_experts(); ++e) expert_gemm(p, w, Gemm::k1, e, perm.offsets[e], perm.offsets[e + 1], x.data(), h1.data());
  std::vector<double>().swap(x);

  std::vector<double> a(static_cast<size_t>(R * I));
#pragma omp parallel for schedule(static) if (worth_parallel(R * I * kCostOfExp))
  for (int64_t r = 0; r < R; ++r)
    apply_activation(p.activation, p.gate_up_layout, std::span(h1).subspan(r * N1, N1), std::span(a).subspan(r * I, I));
  std::vector<double>().swap(h1);
  quantize_activations(p, w, Gemm::k2, a, I, experts);

  std::vector<double> y(static_cast<size_t>(R * H));
  for (int e = 0; e < p.local_experts(); ++e) expert_gemm(p, w, Gemm::k2, e, perm.offsets[e], perm.offsets[e + 1], a.data(), y.data());

  // Finalize. The masked format writes each valid row back to its own place, unweighted.
  if (p.input_format == InputFormat::kMasked) {
    const int64_t max_m = in.hidden.size(1);
#pragma omp parallel for schedule(static) if (worth_parallel(R * H))
    for (int64_t r = 0; r < R; ++r) store_row(out.out, perm.rows[r].expert * max_m + perm.rows[r].token, y.data() + r * H, H);
    return Status::Ok();
  }
  const int64_t T = in.hidden.size(0);
  const double scale = p.routing.routed_scaling_factor;
  // For every output row, the expanded rows that feed it, in (token, slot) order: a fixed order,
  // so the sum is the same whatever the threads.
  const int64_t out_rows = p.no_combine ? T * p.top_k : T;
  std::vector<std::vector<int64_t>> sources(static_cast<size_t>(out_rows));
  std::vector<int64_t> order(R);
  for (int64_t r = 0; r < R; ++r) order[r] = r;
  std::stable_sort(order.begin(), order.end(), [&](int64_t l, int64_t r) {
    return std::tie(perm.rows[l].token, perm.rows[l].slot) < std::tie(perm.rows[r].token, perm.rows[r].slot);
  });
  for (int64_t r : order) {
    const Row& row = perm.rows[r];
    sources[p.no_combine ? row.token * p.top_k + row.slot : row.token].push_back(r);
  }
#pragma omp parallel if (worth_parallel(R * H))
  {
    std::vector<double> acc(H);
#pragma omp for schedule(static)
    for (int64_t o = 0; o < out_rows; ++o) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t r : sources[o]) {
        const double wgt = scale * (p.apply_router_weight_on_input ? 1.0 : perm.rows[r].weight);
        for (int64_t k = 0; k < H; ++k) acc[k] += wgt * y[r * H + k];
      }
      store_row(out.out, o, acc.data(), H);
    }
  }
  return Status::Ok();
}

}  // namespace moekit::cpu
