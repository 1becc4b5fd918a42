// The MoE layers as Hugging Face transformers computes them (modeling_mixtral, modeling_qwen2_moe /
// qwen3_moe, modeling_deepseek_v2 / v3, modeling_gpt_oss and integrations/mxfp4.py), in double, from
// the checkpoint's own per-expert tensors. It shares nothing with moekit's loader or reference: it is
// what the loaded layer must reproduce.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <utility>
#include <vector>

#include "moekit/float_formats.h"
#include "moekit/tensor.h"

namespace moekit::testing::hf {

using Vec = std::vector<double>;

// A dense [rows, cols] matrix; times(x) is W x (a Linear layer's out x in weight).
struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  double at(int64_t r, int64_t c) const { return v[static_cast<size_t>(r * cols + c)]; }
  Vec times(const Vec& x) const {
    Vec y(static_cast<size_t>(rows), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) y[static_cast<size_t>(r)] += at(r, c) * x[static_cast<size_t>(c)];
    return y;
  }
  Matrix transposed() const {
    Matrix t{cols, rows, std::vector<double>(v.size())};
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) t.v[static_cast<size_t>(c * rows + r)] = at(r, c);
    return t;
  }
};

// Slice `index` of the leading dimension of a [.., rows, cols] tensor (a 2-D tensor: index 0).
inline Matrix matrix(const TensorView& t, int64_t index = 0) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  Matrix m{rows, cols, std::vector<double>(static_cast<size_t>(rows * cols))};
  for (int64_t i = 0; i < rows * cols; ++i) m.v[static_cast<size_t>(i)] = load_element(t.data(), t.dtype(), index * rows * cols + i);
  return m;
}

inline Vec vector(const TensorView& t, int64_t index = 0) {
  const int64_t n = t.size(-1);
  Vec v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = load_element(t.data(), t.dtype(), index * n + i);
  return v;
}

// DeepSeek-V3 fp8: W = q * weight_scale_inv[n / 128, k / 128].
inline Matrix dequant_fp8_block(const TensorView& q, const TensorView& scale_inv) {
  Matrix w = matrix(q);
  const Matrix s = matrix(scale_inv);
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t c = 0; c < w.cols; ++c) w.v[static_cast<size_t>(r * w.cols + c)] *= s.at(r / 128, c / 128);
  return w;
}

// integrations/mxfp4.py convert_moe_packed_tensors for expert e, before its final transpose:
// out[n, 32 g + 2 j] = FP4_VALUES[lo nibble], [.. + 1] = FP4_VALUES[hi nibble], times 2^(scale - 127).
inline constexpr double kFp4Values[16] = {+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0,
                                          -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};
inline Matrix dequant_mxfp4(const TensorView& blocks, const TensorView& scales, int64_t e) {
  const int64_t N = blocks.size(1), G = blocks.size(2), B = blocks.size(3);
  Matrix w{N, G * B * 2, std::vector<double>(static_cast<size_t>(N * G * B * 2))};
  const auto* bytes = blocks.data_as<const uint8_t>() + e * N * G * B;
  const auto* exps = scales.data_as<const uint8_t>() + e * N * G;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t j = 0; j < B; ++j) {
        const uint8_t byte = bytes[(n * G + g) * B + j];
        const double scale = std::ldexp(1.0, static_cast<int>(exps[n * G + g]) - 127);
        w.v[static_cast<size_t>(n * w.cols + g * B * 2 + 2 * j)] = kFp4Values[byte & 0x0F] * scale;
        w.v[static_cast<size_t>(n * w.cols + g * B * 2 + 2 * j + 1)] = kFp4Values[byte >> 4] * scale;
      }
  return w;
}

// ---- Routing: (expert, weight) pairs, weights final ---------------------------------------------
using Route = std::vector<std::pair<int, double>>;

inline Vec softmax(const Vec& x) {
  const double m = *std::max_element(x.begin(), x.end());
  Vec p(x.size());
  double sum = 0.0;
  for (size_t i = 0; i < x.size(); ++i) sum += p[i] = std::exp(x[i] - m);
  for (double& v : p) v /= sum;
  return p;
}
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// torch.topk: the k largest, best first.
inline std::vector<int> topk(const Vec& s, int k) {
  std::vector<int> idx(s.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return s[static_cast<size_t>(a)] > s[static_cast<size_t>(b)]; });
  idx.resize(static_cast<size_t>(k));
  return idx;
}

inline Route pick(const std::vector<int>& ids, const Vec& weight_of, bool renormalize, double scale) {
  double sum = 0.0;
  for (int i : ids) sum += weight_of[static_cast<size_t>(i)];
  Route r;
  for (int i : ids) r.push_back({i, weight_of[static_cast<size_t>(i)] / (renormalize ? sum : 1.0) * scale});
  return r;
}

// Mixtral and Qwen: softmax over all experts, top-k, renormalized (Mixtral always; Qwen if norm_topk_prob).
inline Route softmax_topk(const Vec& logits, int k, bool renormalize, double scale = 1.0) {
  const Vec p = softmax(logits);
  return pick(topk(p, k), p, renormalize, scale);
}

// DeepSeek-V3 (noaux_tc): sigmoid scores, biased choice within the best groups, unbiased weights.
inline Route deepseek_v3(const Vec& logits, const Vec& bias, int k, int n_group, int topk_group, bool renormalize, double scale) {
  const size_t E = logits.size(), per = E / static_cast<size_t>(n_group);
  Vec s(E), choice(E);
  for (size_t i = 0; i < E; ++i) choice[i] = (s[i] = sigmoid(logits[i])) + bias[i];
  Vec group_score(static_cast<size_t>(n_group));
  for (size_t g = 0; g < group_score.size(); ++g) {
    Vec members(choice.begin() + static_cast<std::ptrdiff_t>(g * per), choice.begin() + static_cast<std::ptrdiff_t>((g + 1) * per));
    const auto best = topk(members, 2);
    group_score[g] = members[static_cast<size_t>(best[0])] + members[static_cast<size_t>(best[1])];
  }
  Vec masked(E, 0.0);  // masked_fill(~mask, 0.0)
  for (int g : topk(group_score, topk_group))
    for (size_t i = static_cast<size_t>(g) * per; i < (static_cast<size_t>(g) + 1) * per; ++i) masked[i] = choice[i];
  return pick(topk(masked, k), s, renormalize, scale);
}

// GPT-OSS: top-k of the logits, softmax over those k.
inline Route gpt_oss(const Vec& logits, int k) {
  const std::vector<int> ids = topk(logits, k);
  Vec chosen;
  for (int i : ids) chosen.push_back(logits[static_cast<size_t>(i)]);
  const Vec p = softmax(chosen);
  Route r;
  for (size_t j = 0; j < ids.size(); ++j) r.push_back({ids[j], p[j]});
  return r;
}

// ---- Experts --------------------------------------------------------------------------------------

// down(silu(gate x) * up x)
inline Vec swiglu_expert(const Matrix& gate, const Matrix& up, const Matrix& down, const Vec& x) {
  const Vec g = gate.times(x), u = up.times(x);
  Vec h(g.size());
  for (size_t i = 0; i < g.size(); ++i) h[i] = g[i] * sigmoid(g[i]) * u[i];
  return down.times(h);
}

// GptOssExperts: gate_up = W13 x + b13 (gate at even, up at odd positions), clamped SwiGLU, down + b2.
inline Vec gpt_oss_expert(const Matrix& w13, const Vec& b13, const Matrix& w2, const Vec& b2, const Vec& x, double alpha, double limit) {
  Vec gu = w13.times(x);
  for (size_t i = 0; i < gu.size(); ++i) gu[i] += b13[i];
  Vec h(gu.size() / 2);
  for (size_t i = 0; i < h.size(); ++i) {
    const double gate = std::min(gu[2 * i], limit);
    const double up = std::clamp(gu[2 * i + 1], -limit, limit);
    h[i] = (up + 1.0) * gate * sigmoid(gate * alpha);
  }
  Vec y = w2.times(h);
  for (size_t i = 0; i < y.size(); ++i) y[i] += b2[i];
  return y;
}

// The layer's output for one token: sum over the route of weight * expert(e).
inline Vec combine(const Route& route, size_t hidden, const std::function<Vec(int e)>& expert) {
  Vec y(hidden, 0.0);
  for (const auto& [e, weight] : route) {
    const Vec o = expert(e);
    for (size_t h = 0; h < hidden; ++h) y[h] += weight * o[h];
  }
  return y;
}

}  // namespace moekit::testing::hf
