// CPU reference routing: moekit::cpu::route_token (one token, double precision) and
// moekit::cpu::route (validation + an OpenMP loop over tokens). The semantics of every method are
// those of RoutingMethod in moekit/moe_problem.h; this file is the oracle for the GPU routers.
//
// Ordering rule, shared by every method: candidates are ranked by (score descending, expert id
// ascending), so ties always go to the lower id and the output order is fully determined. NaN is
// ranked below every number (including -inf): NaN logits therefore give unspecified (but
// deterministic) ids and weights, never an id outside [0, E). route() does not look at values.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <new>
#include <span>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "cpu/routing_reference.h"
#include "cpu/validate.h"
#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"

namespace moekit::cpu {
namespace {

// True when (va, ia) ranks strictly before (vb, ib). A strict total order over distinct ids, so
// std::partial_sort gives the same result on every platform and thread count.
inline bool ranks_before(double va, int ia, double vb, int ib) {
  const bool na = std::isnan(va);
  const bool nb = std::isnan(vb);
  if (na != nb) return nb;                  // a number ranks before NaN
  if (!na && va != vb) return va > vb;      // -0.0 == +0.0 counts as a tie
  return ia < ib;
}

// Reorders `cand` so that its first k entries are the k best by `score`, best first.
void select_top(std::span<const double> score, std::vector<int>& cand, int k) {
  std::partial_sort(cand.begin(), cand.begin() + k, cand.end(),
                    [score](int a, int b) { return ranks_before(score[a], a, score[b], b); });
}

// Sigmoid without overflow: exp() only ever sees a non-positive argument.
inline double sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

void iota_into(std::vector<int>& v, int n, int first = 0) {
  v.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = first + i;
}


// Per-thread scratch: route_token runs once per token inside OpenMP loops, so it must not allocate
// after the first call on a thread.
struct Scratch {
  std::vector<double> score;  // the selection score of each expert
  std::vector<double> aux;    // DeepSeek: the unbiased sigmoid of each expert
  std::vector<double> weight; // the K weights before renormalization
  std::vector<double> group_score;
  std::vector<int> cand;
  std::vector<int> groups;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// DeepSeek-V3 grouped selection: leaves the chosen ids, best first, in s.cand[0, k) and the
// unbiased sigmoid of every expert in s.aux (the weights come from those, not the biased scores).
void select_deepseek(const RoutingParams& p, std::span<const double> logits, std::span<const double> bias,
                     int k, Scratch& s) {
  const int e = static_cast<int>(logits.size());
  const int per_group = e / p.n_group;
  s.aux.resize(static_cast<size_t>(e));
  s.score.resize(static_cast<size_t>(e));
  for (int i = 0; i < e; ++i) {
    s.aux[i] = sigmoid(logits[i]);
    s.score[i] = s.aux[i] + bias[i];  // biased: used for selection only
  }
  // A group's score is the sum of its two largest biased scores (its only one when per_group == 1).
  s.group_score.resize(static_cast<size_t>(p.n_group));
  for (int g = 0; g < p.n_group; ++g) {
    const int base = g * per_group;
    int best = base;
    int second = -1;
    for (int i = base + 1; i < base + per_group; ++i) {
      if (ranks_before(s.score[i], i, s.score[best], best)) {
        second = best;
        best = i;
      } else if (second < 0 || ranks_before(s.score[i], i, s.score[second], second)) {
        second = i;
      }
    }
    s.group_score[g] = s.score[best] + (second >= 0 ? s.score[second] : 0.0);
  }
  iota_into(s.groups, p.n_group);
  select_top(s.group_score, s.groups, p.topk_group);
  // Candidates: every expert of the kept groups. The order does not matter (total order).
  s.cand.clear();
  for (int j = 0; j < p.topk_group; ++j)
    for (int i = 0; i < per_group; ++i) s.cand.push_back(s.groups[j] * per_group + i);
  select_top(s.score, s.cand, k);
}

}  // namespace

void route_token(const RoutingParams& params, std::span<const double> logits, std::span<const double> bias,
                 std::span<int32_t> ids, std::span<float> weights) {
  const int e = static_cast<int>(logits.size());
  const int k = static_cast<int>(ids.size());
  Scratch& s = scratch();
  std::vector<double>& w = s.weight;
  bool renormalize = params.renormalize;

  switch (params.method) {
    case RoutingMethod::kSoftmaxTopK: {
      // Stable softmax over all E (the max of the non-NaN logits is subtracted); select on p.
      double m = -INFINITY;
      for (double x : logits)
        if (x > m) m = x;
      s.score.resize(static_cast<size_t>(e));
      double sum = 0.0;
      for (int i = 0; i < e; ++i) sum += (s.score[i] = std::exp(logits[i] - m));
      for (int i = 0; i < e; ++i) s.score[i] /= sum;
      iota_into(s.cand, e);
      select_top(s.score, s.cand, k);
      w.resize(static_cast<size_t>(k));
      for (int j = 0; j < k; ++j) w[j] = s.score[s.cand[j]];
      break;
    }
    case RoutingMethod::kTopKSoftmax: {
      // Mixtral: select on logits, then softmax over the K selected (cand[0] holds their max).
      s.score.assign(logits.begin(), logits.end());
      iota_into(s.cand, e);
      select_top(s.score, s.cand, k);
      const double m = s.score[s.cand[0]];
      w.resize(static_cast<size_t>(k));
      double sum = 0.0;
      for (int j = 0; j < k; ++j) sum += (w[j] = std::exp(s.score[s.cand[j]] - m));
      for (int j = 0; j < k; ++j) w[j] /= sum;
      renormalize = false;  // already sums to one; dividing again would only add rounding
      break;
    }
    case RoutingMethod::kDeepSeekV3: {
      select_deepseek(params, logits, bias, k, s);
      // Selection used the biased scores; the weights are the unbiased ones.
      w.resize(static_cast<size_t>(k));
      for (int j = 0; j < k; ++j) w[j] = s.aux[s.cand[j]];
      break;
    }
    case RoutingMethod::kLlama4:
    case RoutingMethod::kTopK: {
      s.score.assign(logits.begin(), logits.end());
      iota_into(s.cand, e);
      select_top(s.score, s.cand, k);
      w.resize(static_cast<size_t>(k));
      const bool llama = params.method == RoutingMethod::kLlama4;
      for (int j = 0; j < k; ++j) w[j] = llama ? sigmoid(s.score[s.cand[j]]) : s.score[s.cand[j]];
      break;
    }
  }

  // The flag means "divide the K weights by their sum" for every method. A zero sum (all chosen
  // scores 0, e.g. kTopK) gives non-finite weights, as the frameworks' division does.
  double sum = 0.0;
  if (renormalize)
    for (int j = 0; j < k; ++j) sum += w[j];
  for (int j = 0; j < k; ++j) {
    ids[j] = static_cast<int32_t>(s.cand[j]);
    weights[j] = static_cast<float>(renormalize ? w[j] / sum : w[j]);
  }
}

namespace {

Status validate_route(const RoutingParams& p, int e, int k, const TensorView& logits, const TensorView& bias,
                      const TensorView& ids, const TensorView& weights) {
  MOEKIT_RETURN_IF_ERROR(validate_routing_params(p, e, k));
  const int64_t logits_shape[] = {-1, e};
  MOEKIT_RETURN_IF_ERROR(check_host_tensor("logits", logits, {DType::kF32, DType::kBF16}, logits_shape,
                                           fmt::format("[T, {}] (num_experts={})", e, e)));
  if (p.method == RoutingMethod::kDeepSeekV3) {
    const int64_t bias_shape[] = {e};
    MOEKIT_RETURN_IF_ERROR(check_host_tensor("correction_bias", bias, {DType::kF32, DType::kBF16}, bias_shape,
                                             fmt::format("[{}] (num_experts={}) for routing method deepseek_v3", e, e)));
  } else if (bias.defined()) {
    // Rejected rather than ignored: a caller passing a bias expects it to change the routing.
    return Status::InvalidArgument(fmt::format("correction_bias: {} is given but routing method {} does not use it",
                                               bias.describe(), routing_method_name(p.method)));
  }
  const int64_t t = logits.size(0);
  const int64_t out_shape[] = {t, k};
  const std::string out_text = fmt::format("[{}, {}] (T={}, top_k={})", t, k, t, k);
  MOEKIT_RETURN_IF_ERROR(check_host_tensor("topk_ids", ids, {DType::kI32}, out_shape, out_text));
  return check_host_tensor("topk_weights", weights, {DType::kF32}, out_shape, out_text);
}

}  // namespace

Status validate_routing_params(const RoutingParams& p, int e, int k) {
  if (routing_method_name(p.method) == "unknown")
    return Status::InvalidArgument(fmt::format("routing method={} is unknown", static_cast<int>(p.method)));
  if (e < 1) return Status::InvalidArgument(fmt::format("num_experts={} must be >= 1", e));
  if (k < 1) return Status::InvalidArgument(fmt::format("top_k={} must be >= 1", k));
  if (k > e) return Status::InvalidArgument(fmt::format("top_k={} exceeds num_experts={}", k, e));
  if (p.method == RoutingMethod::kDeepSeekV3) {
    if (p.n_group < 1) return Status::InvalidArgument(fmt::format("n_group={} must be >= 1", p.n_group));
    if (e % p.n_group != 0)
      return Status::InvalidArgument(fmt::format("n_group={} does not divide num_experts={}", p.n_group, e));
    if (p.topk_group < 1 || p.topk_group > p.n_group)
      return Status::InvalidArgument(fmt::format("topk_group={} must be in [1, n_group={}]", p.topk_group, p.n_group));
    const int per_group = e / p.n_group;
    if (k > p.topk_group * per_group)
      return Status::InvalidArgument(fmt::format("top_k={} exceeds the {} experts of topk_group={} groups of {}", k,
                                                 p.topk_group * per_group, p.topk_group, per_group));
  }
  return Status::Ok();
}

Status route(const RoutingParams& params, int num_experts, int top_k, const TensorView& logits,
             const TensorView& correction_bias, const TensorView& topk_ids, const TensorView& topk_weights) {
  MOEKIT_RETURN_IF_ERROR(validate_route(params, num_experts, top_k, logits, correction_bias, topk_ids, topk_weights));
  const int64_t tokens = logits.size(0);
  if (tokens == 0) return Status::Ok();
  const int e = num_experts;
  const int k = top_k;
  std::vector<double> bias;
  if (params.method == RoutingMethod::kDeepSeekV3) {
    bias.resize(static_cast<size_t>(e));
    load_elements(correction_bias.data(), correction_bias.dtype(), 0, e, bias.data());
  }
  int32_t* ids = topk_ids.data_as<int32_t>();
  float* weights = topk_weights.data_as<float>();

  // An exception must not leave an OpenMP region (it would terminate the process): allocation
  // failures are caught per token and reported after the loop.
  // Small calls (decode steps, tests) stay on the calling thread: starting a team costs more.
  std::atomic<bool> out_of_memory{false};
  const bool parallel = tokens * e >= 4096;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tokens; ++t) {
    try {
      thread_local std::vector<double> row;
      row.resize(static_cast<size_t>(e));
      load_elements(logits.data(), logits.dtype(), t * e, e, row.data());
      route_token(params, row, bias, std::span<int32_t>(ids + t * k, static_cast<size_t>(k)),
                  std::span<float>(weights + t * k, static_cast<size_t>(k)));
    } catch (const std::bad_alloc&) {
      out_of_memory.store(true, std::memory_order_relaxed);
    }
  }
  if (out_of_memory.load())
    return Status::OutOfMemory(fmt::format("routing scratch for num_experts={} could not be allocated", e));
  return Status::Ok();
}

}  // namespace moekit::cpu
