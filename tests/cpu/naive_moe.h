// A deliberately naive, independently written float64 MoE layer, used only as a test oracle for
// moekit::cpu::run_reference. It shares no code with src/cpu: it walks token by token (or row by
// row), reads every element one at a time, and follows moekit/moe_problem.h and
// docs/moe-semantics.md literally. Quantized schemes go through tests/cpu/naive_quant.h (its own
// decoders and quantizers). The layer is staged only where the semantics need it: a dynamic
// per-tensor activation scale is taken over every row that enters a GEMM, so all rows are expanded
// (and quantized) before gemm1, and all activations computed (and quantized) before gemm2.
// Speed is not a goal; clarity is.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <vector>

#include "cpu/naive_quant.h"
#include "moekit/float_formats.h"
#include "moekit/moe_problem.h"
#include "moekit/tensor.h"

namespace moekit::naive {

// ---- Element access ------------------------------------------------------------------------------

// True when the optional tensor was given (a default TensorView has no data and no dimensions).
inline bool given(const TensorView& v) { return v.defined(); }

// Element v[i0, i1, ...] as double, honouring the view's strides.
inline double get(const TensorView& v, std::initializer_list<int64_t> index) {
  int64_t offset = 0;
  int d = 0;
  for (int64_t i : index) offset += i * v.stride(d++);
  return load_element(v.data(), v.dtype(), offset);
}

// ---- Scalar functions ----------------------------------------------------------------------------

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double silu(double x) { return x * sigmoid(x); }
inline double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
inline double gelu_tanh(double x) {
  const double kPi = 3.14159265358979323846;
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x)));
}
inline double relu(double x) { return x > 0.0 ? x : 0.0; }

// ---- Routing -------------------------------------------------------------------------------------

struct TokenRoute {
  std::vector<int> ids;         // K global expert ids, in selection order
  std::vector<double> weights;  // K weights, before routed_scaling_factor
};

// The k best entries of `score` among `allowed`, best first; equal scores: lower index first.
inline std::vector<int> pick_top(const std::vector<double>& score, int k, std::vector<bool> allowed) {
  std::vector<int> picked;
  for (int j = 0; j < k; ++j) {
    int best = -1;
    for (int i = 0; i < static_cast<int>(score.size()); ++i) {
      if (!allowed[i]) continue;
      if (best < 0 || score[i] > score[best]) best = i;  // strict '>' keeps the lower id on ties
    }
    if (best < 0) break;
    picked.push_back(best);
    allowed[best] = false;
  }
  return picked;
}

inline TokenRoute route_token(const RoutingParams& rp, int top_k, const std::vector<double>& logits,
                              const std::vector<double>& correction_bias) {
  const int E = static_cast<int>(logits.size());
  TokenRoute r;
  const std::vector<bool> all(E, true);
  switch (rp.method) {
    case RoutingMethod::kSoftmaxTopK: {
      double mx = logits[0];
      for (double l : logits) mx = std::max(mx, l);
      std::vector<double> p(E);
      double sum = 0.0;
      for (int e = 0; e < E; ++e) sum += (p[e] = std::exp(logits[e] - mx));
      for (double& v : p) v /= sum;
      r.ids = pick_top(p, top_k, all);
      for (int id : r.ids) r.weights.push_back(p[id]);
      break;
    }
    case RoutingMethod::kTopKSoftmax: {
      r.ids = pick_top(logits, top_k, all);
      double mx = logits[r.ids[0]];
      double sum = 0.0;
      for (int id : r.ids) sum += std::exp(logits[id] - mx);
      for (int id : r.ids) r.weights.push_back(std::exp(logits[id] - mx) / sum);
      break;
    }
    case RoutingMethod::kDeepSeekV3: {
      std::vector<double> s(E), b(E);
      for (int e = 0; e < E; ++e) {
        s[e] = sigmoid(logits[e]);
        b[e] = s[e] + (correction_bias.empty() ? 0.0 : correction_bias[e]);
      }
      const int groups = rp.n_group > 0 ? rp.n_group : 1;
      const int group_size = E / groups;
      const int keep = rp.topk_group > 0 ? rp.topk_group : groups;
      std::vector<double> group_score(groups, 0.0);
      for (int g = 0; g < groups; ++g) {
        std::vector<double> members(b.begin() + g * group_size, b.begin() + (g + 1) * group_size);
        for (int m : pick_top(members, 2, std::vector<bool>(group_size, true))) group_score[g] += members[m];
      }
      std::vector<bool> allowed(E, false);
      for (int g : pick_top(group_score, keep, std::vector<bool>(groups, true)))
        for (int e = g * group_size; e < (g + 1) * group_size; ++e) allowed[e] = true;
      r.ids = pick_top(b, top_k, allowed);
      for (int id : r.ids) r.weights.push_back(s[id]);
      break;
    }
    case RoutingMethod::kLlama4: {
      r.ids = pick_top(logits, top_k, all);
      for (int id : r.ids) r.weights.push_back(sigmoid(logits[id]));
      break;
    }
    case RoutingMethod::kTopK: {
      r.ids = pick_top(logits, top_k, all);
      for (int id : r.ids) r.weights.push_back(logits[id]);
      break;
    }
  }
  if (rp.renormalize) {
    double sum = 0.0;
    for (double w : r.weights) sum += w;
    for (double& w : r.weights) w /= sum;
  }
  return r;
}

// Routing of every token of a kStandard (router_logits) or kPreRouted (topk_ids/topk_weights) call.
inline std::vector<TokenRoute> routes(const MoeProblem& p, const MoeInputs& in) {
  const int64_t T = in.hidden.size(0);
  std::vector<TokenRoute> all(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    if (p.input_format == InputFormat::kPreRouted) {
      for (int k = 0; k < p.top_k; ++k) {
        all[t].ids.push_back(static_cast<int>(get(in.topk_ids, {t, k})));
        all[t].weights.push_back(get(in.topk_weights, {t, k}));
      }
    } else {
      std::vector<double> logits(p.num_experts), bias;
      for (int e = 0; e < p.num_experts; ++e) logits[e] = get(in.router_logits, {t, e});
      if (p.routing.method == RoutingMethod::kDeepSeekV3 && given(in.e_score_correction_bias))
        for (int e = 0; e < p.num_experts; ++e) bias.push_back(get(in.e_score_correction_bias, {e}));
      all[t] = route_token(p.routing, p.top_k, logits, bias);
      // Routing hands the layer f32 weights (topk_weights [T, K] f32, docs/moe-semantics.md).
      for (double& w : all[t].weights) w = static_cast<float>(w);
    }
  }
  return all;
}

// ---- One expert ----------------------------------------------------------------------------------

// Local index of global expert e, or -1 when it is not held on this rank.
inline int local_index(const MoeProblem& p, const MoeWeights& w, int e) {
  if (given(w.expert_map)) return static_cast<int>(get(w.expert_map, {e}));
  const int n_local = p.num_local_experts < 0 ? p.num_experts : p.num_local_experts;
  if (e >= p.local_expert_begin && e < p.local_expert_begin + n_local) return e - p.local_expert_begin;
  return -1;
}

// GEMM g of every row: y[r] = W_e x[r] + b_e with e = expert[r]. Each output is a dot product in k
// order with the bias added last. (Weight rows are decoded once per expert, not once per row: the
// only concession to speed.)
inline std::vector<std::vector<double>> gemm(const MoeProblem& p, const MoeWeights& w, Which g,
                                             const std::vector<std::vector<double>>& x, const std::vector<int>& expert) {
  const GemmTensors t = gemm_tensors(p, w, g);
  const TensorView& bias = g == Which::k13 ? w.w13_bias : w.w2_bias;
  std::vector<std::vector<double>> y(x.size(), std::vector<double>(static_cast<size_t>(t.N)));
  const int n_local = p.num_local_experts < 0 ? p.num_experts : p.num_local_experts;
  for (int le = 0; le < n_local; ++le) {
    if (std::find(expert.begin(), expert.end(), le) == expert.end()) continue;
    // Output columns are independent dot products: threads change nothing in any of them.
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < t.N; ++n) {
      const std::vector<double> row = weight_row(p, w, g, le, n);
      for (size_t r = 0; r < x.size(); ++r) {
        if (expert[r] != le) continue;
        double acc = 0.0;
        for (int64_t k = 0; k < t.K; ++k) acc += row[k] * x[r][k];
        if (given(bias)) acc += get(bias, {le, n});
        y[r][n] = acc;
      }
    }
  }
  return y;
}

// The I activation values from gemm1's output h (2I gate/up values when gated).
inline std::vector<double> activate(const MoeProblem& p, const std::vector<double>& h) {
  const int I = p.intermediate;
  const bool gated = is_gated(p.activation.kind);
  std::vector<double> a(I);
  for (int i = 0; i < I; ++i) {
    if (!gated) {
      const double v = h[i];
      switch (p.activation.kind) {
        case Activation::kReLU2: a[i] = relu(v) * relu(v); break;
        case Activation::kSiLU: a[i] = silu(v); break;
        case Activation::kGeLU: a[i] = gelu_erf(v); break;
        case Activation::kReLU: a[i] = relu(v); break;
        default: a[i] = v; break;  // kIdentity
      }
      continue;
    }
    double g, u;
    if (p.gate_up_layout == GateUpLayout::kConcatenated) {
      g = h[i];
      u = h[I + i];
    } else {
      g = h[2 * i];
      u = h[2 * i + 1];
    }
    switch (p.activation.kind) {
      case Activation::kSwiGLU: a[i] = silu(g) * u; break;
      case Activation::kGeGLU: a[i] = gelu_erf(g) * u; break;
      case Activation::kGeGLUTanh: a[i] = gelu_tanh(g) * u; break;
      default: {  // kSwiGLUClamped
        const double limit = p.activation.limit, alpha = p.activation.alpha;
        g = std::min(g, limit);
        u = std::max(-limit, std::min(u, limit));
        a[i] = (u + 1.0) * g * sigmoid(alpha * g);
        break;
      }
    }
  }
  return a;
}

// ---- The layer -----------------------------------------------------------------------------------

// One row through one local expert: its input x, and where its output goes (out_row of the output,
// times coef; the masked format stores instead of adding).
struct ExpandedRow {
  int le;
  int64_t out_row;
  double coef;
  std::vector<double> x;
};

// Every row of the call, in (token, slot) order for the routed formats, (expert, row) otherwise.
inline std::vector<ExpandedRow> expand(const MoeProblem& p, const MoeWeights& w, const MoeInputs& in) {
  const int H = p.hidden, K = p.top_k;
  const double scale = p.routing.routed_scaling_factor;
  const int n_local = p.num_local_experts < 0 ? p.num_experts : p.num_local_experts;
  // Row of `hidden` starting at element `offset`, times `times`.
  auto hidden_row = [&](int64_t offset, double times) {
    std::vector<double> x(H);
    for (int i = 0; i < H; ++i)
      x[i] = load_element(in.hidden.data(), in.hidden.dtype(), offset + i * in.hidden.stride(in.hidden.ndim() - 1)) * times;
    return x;
  };
  std::vector<ExpandedRow> rows;
  if (p.input_format == InputFormat::kMasked) {
    const int64_t max_m = in.hidden.size(1);
    for (int le = 0; le < n_local; ++le)
      for (int64_t m = 0; m < static_cast<int64_t>(get(in.masked_m, {le})) && m < max_m; ++m)
        rows.push_back({le, le * max_m + m, 1.0, hidden_row(le * in.hidden.stride(0) + m * in.hidden.stride(1), 1.0)});
    return rows;
  }
  if (p.input_format == InputFormat::kIndexed) {
    for (int le = 0; le < n_local; ++le) {
      const int64_t begin = static_cast<int64_t>(get(in.expert_offsets, {le}));
      const int64_t end = static_cast<int64_t>(get(in.expert_offsets, {le + 1}));
      for (int64_t r = begin; r < end; ++r) {
        const int64_t t = static_cast<int64_t>(get(in.gather_index, {r}));
        const double rw = get(in.row_weights, {r});
        const bool on_input = p.apply_router_weight_on_input;
        rows.push_back({le, t, scale * (on_input ? 1.0 : rw), hidden_row(t * in.hidden.stride(0), on_input ? rw : 1.0)});
      }
    }
    return rows;
  }
  const std::vector<TokenRoute> rt = routes(p, in);
  for (int64_t t = 0; t < static_cast<int64_t>(rt.size()); ++t) {
    for (int k = 0; k < K; ++k) {
      const int le = local_index(p, w, rt[t].ids[k]);
      if (le < 0) continue;  // not held here: contributes zero
      const double wt = rt[t].weights[k];
      const bool on_input = p.apply_router_weight_on_input;
      rows.push_back({le, p.no_combine ? t * K + k : t, scale * (on_input ? 1.0 : wt),
                      hidden_row(t * in.hidden.stride(0), on_input ? wt : 1.0)});
    }
  }
  return rows;
}

// v rounded to `dtype` (nearest-even), or v itself for f64.
inline double round_to(DType dtype, double v) {
  if (dtype == DType::kF64) return v;
  unsigned char buf[8];
  store_element(buf, dtype, 0, v);
  return load_element(buf, dtype, 0);
}
inline void round_rows(DType dtype, std::vector<std::vector<double>>& rows) {
  if (dtype == DType::kF64) return;
  for (auto& r : rows)
    for (double& v : r) v = round_to(dtype, v);
}

// The expected contents of outputs.out, row-major in its documented shape, before the final
// rounding to the activation dtype. Masked rows that must stay untouched hold a quiet NaN.
// `intermediates` other than f64 models a naive 16-bit implementation: each GEMM input and output
// row is stored in that type (the GPU tests measure their tolerance against it).
inline std::vector<double> run(const MoeProblem& p, const MoeWeights& w, const MoeInputs& in, DType intermediates = DType::kF64) {
  const int H = p.hidden;
  const int n_local = p.num_local_experts < 0 ? p.num_experts : p.num_local_experts;
  const bool masked = p.input_format == InputFormat::kMasked;
  int64_t out_rows;
  if (masked) out_rows = n_local * in.hidden.size(1);
  else out_rows = in.hidden.size(0) * (p.no_combine ? p.top_k : 1);
  std::vector<double> out(static_cast<size_t>(out_rows * H), masked ? std::numeric_limits<double>::quiet_NaN() : 0.0);

  std::vector<ExpandedRow> rows = expand(p, w, in);
  std::vector<std::vector<double>> act;
  std::vector<int> experts;
  for (ExpandedRow& r : rows) {
    act.push_back(std::move(r.x));
    experts.push_back(r.le);
  }
  round_rows(intermediates, act);
  quantize_rows(p, w, Which::k13, act, experts);
  act = gemm(p, w, Which::k13, act, experts);
  round_rows(intermediates, act);
  for (auto& a : act) a = activate(p, a);
  round_rows(intermediates, act);
  quantize_rows(p, w, Which::k2, act, experts);
  std::vector<std::vector<double>> y = gemm(p, w, Which::k2, act, experts);
  round_rows(intermediates, y);
  for (size_t r = 0; r < rows.size(); ++r) {
    double* o = out.data() + rows[r].out_row * H;
    for (int h = 0; h < H; ++h) o[h] = masked ? y[r][h] : o[h] + rows[r].coef * y[r][h];
  }
  return out;
}

}  // namespace moekit::naive
