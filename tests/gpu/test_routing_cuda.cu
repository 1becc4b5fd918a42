// The CUDA router (src/cuda/moe/routing_device.cuh) alone against cpu::route, on logits built to
// stress the ordering rule: many exact ties (values drawn from a few levels, and bf16 logits),
// NaN, -0.0 next to +0.0, -inf, and expert counts on both sides of every register-path width
// (32, 64, 128, 256, 512) plus one above 512 (the shared-memory path). The ids must match exactly;
// the weights within float rounding (both NaN where the reference gives NaN).
#include <algorithm>
#include <array>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda/moe/moe_launch.h"
#include "cuda/moe/routing_device.cuh"
#include "gpu_test_util.h"
#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"

namespace moekit {
namespace {

struct RouteCase {
  std::string name;
  int experts, top_k;
  RoutingMethod method;
  bool bf16_logits = false;
  int n_group = 1, topk_group = 1;
  bool renormalize = true;
};

// kUnderflow and kBelowDouble fill every row (not only a single token's): different logits whose
// probabilities tie, which the router's selection on logits must hand to its full path.
enum class OneRow { kMixed, kAllNan, kAllEqual, kUnderflow, kBelowDouble };

// Logits from a handful of levels so that equal scores are common, with NaN, signed zeros and
// -inf sprinkled in at fixed rates. `one` picks what a single token's row holds (decode's case, so it
// gets the all-NaN and all-equal rows that longer batches carry in rows 1 and 2).
std::vector<float> tie_heavy_logits(int64_t T, int E, uint64_t seed, OneRow one = OneRow::kMixed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> level(-3, 3), pick(0, 99);
  std::vector<float> v(static_cast<size_t>(T * E));
  for (auto& x : v) {
    const int r = pick(rng);
    if (r == 0) x = std::numeric_limits<float>::quiet_NaN();
    else if (r == 1) x = -0.0f;
    else if (r == 2) x = 0.0f;
    else if (r == 3) x = -std::numeric_limits<float>::infinity();
    else x = 0.5f * static_cast<float>(level(rng));
  }
  // One row entirely NaN and one entirely equal: both fall back to the lowest ids.
  if (T > 2) {
    for (int e = 0; e < E; ++e) v[static_cast<size_t>(E + e)] = std::numeric_limits<float>::quiet_NaN();
    for (int e = 0; e < E; ++e) v[static_cast<size_t>(2 * E + e)] = 1.0f;
  }
  if (T == 1 && (one == OneRow::kAllNan || one == OneRow::kAllEqual))
    for (int e = 0; e < E; ++e) v[static_cast<size_t>(e)] = one == OneRow::kAllNan ? std::numeric_limits<float>::quiet_NaN() : 1.0f;
  // Every row: one logit at 0 and the rest spread over [-2000, -800] (their probabilities are all 0:
  // tied, so the reference takes them by id), or all within 1e-28 of each other (exp() of their
  // differences is 1.0 in double: all tied).
  if (one == OneRow::kUnderflow || one == OneRow::kBelowDouble) {
    std::uniform_int_distribution<int> spread(0, 1 << 20);
    for (int64_t t = 0; t < T; ++t)
      for (int e = 0; e < E; ++e) {
        const float r = static_cast<float>(spread(rng));
        v[static_cast<size_t>(t * E + e)] = one == OneRow::kUnderflow ? -800.0f - r * (1200.0f / (1 << 20)) : r * 1e-34f;
      }
    if (one == OneRow::kUnderflow)
      for (int64_t t = 0; t < T; ++t) v[static_cast<size_t>(t * E + (t * 7) % E)] = 0.0f;
  }
  return v;
}

template <typename T>
T* to_device(const void* host, size_t bytes) {
  void* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  return static_cast<T*>(d);
}

void check_case(const RouteCase& c, int64_t T, uint64_t seed, OneRow one = OneRow::kMixed) {
  SCOPED_TRACE(c.name + " T" + std::to_string(T) + " one-row kind " + std::to_string(static_cast<int>(one)));
  const int E = c.experts, K = c.top_k;
  const std::vector<float> logits = tie_heavy_logits(T, E, seed, one);
  std::vector<uint16_t> logits_bf16(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) store_element(logits_bf16.data(), DType::kBF16, static_cast<int64_t>(i), logits[i]);
  std::vector<float> bias(static_cast<size_t>(E));
  for (int e = 0; e < E; ++e) bias[static_cast<size_t>(e)] = 0.25f * static_cast<float>(e % 3);  // ties after the bias too

  RoutingParams params{.method = c.method, .renormalize = c.renormalize, .n_group = c.n_group, .topk_group = c.topk_group};
  std::vector<int32_t> ref_ids(static_cast<size_t>(T * K));
  std::vector<float> ref_w(ref_ids.size());
  const TensorView host_logits = c.bf16_logits ? TensorView(logits_bf16.data(), DType::kBF16, {T, E}) : TensorView(const_cast<float*>(logits.data()), DType::kF32, {T, E});
  const TensorView host_bias = c.method == RoutingMethod::kDeepSeekV3 ? TensorView(bias.data(), DType::kF32, {E}) : TensorView();
  const Status rs = cpu::route(params, E, K, host_logits, host_bias, TensorView(ref_ids.data(), DType::kI32, {T, K}),
                               TensorView(ref_w.data(), DType::kF32, {T, K}));
  ASSERT_TRUE(rs.ok()) << rs.to_string();

  cuda::moe::RouteArgs a;
  a.logits = to_device<void>(host_logits.data(), static_cast<size_t>(host_logits.storage_bytes()));
  a.logits_type = c.bf16_logits ? cuda::moe::Elem::kBF16 : cuda::moe::Elem::kF32;
  a.bias = c.method == RoutingMethod::kDeepSeekV3 ? to_device<void>(bias.data(), bias.size() * 4) : nullptr;
  a.tokens = T;
  a.experts = E;
  a.top_k = K;
  a.method = static_cast<int>(c.method);
  a.renormalize = c.renormalize;
  a.n_group = c.n_group;
  a.topk_group = c.topk_group;
  MOEKIT_ASSERT_CUDA(cudaMalloc(reinterpret_cast<void**>(&a.topk_ids), ref_ids.size() * 4 + 4));
  MOEKIT_ASSERT_CUDA(cudaMalloc(reinterpret_cast<void**>(&a.topk_weights), ref_w.size() * 4 + 4));
  MOEKIT_ASSERT_CUDA(cudaMemset(a.topk_ids, 0xFF, ref_ids.size() * 4 + 4));  // poison
  MOEKIT_ASSERT_CUDA(cudaMemset(a.topk_weights, 0xFF, ref_w.size() * 4 + 4));
  const Status launched = cuda::moe::launch_route(a, nullptr);
  ASSERT_TRUE(launched.ok()) << launched.to_string();
  MOEKIT_ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<int32_t> ids(ref_ids.size());
  std::vector<float> w(ref_w.size());
  MOEKIT_ASSERT_CUDA(cudaMemcpy(ids.data(), a.topk_ids, ids.size() * 4, cudaMemcpyDeviceToHost));
  MOEKIT_ASSERT_CUDA(cudaMemcpy(w.data(), a.topk_weights, w.size() * 4, cudaMemcpyDeviceToHost));
  int64_t id_mismatch = 0, w_mismatch = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    id_mismatch += ids[i] != ref_ids[i];
    // Equal (including the infinite weights of plain top-k over -inf logits), both NaN, or close.
    const bool same = w[i] == ref_w[i] || (std::isnan(w[i]) && std::isnan(ref_w[i])) || std::abs(w[i] - ref_w[i]) <= 1e-6f;
    w_mismatch += !same;
    if (ids[i] != ref_ids[i] && id_mismatch <= 3)
      ADD_FAILURE() << "token " << i / K << " slot " << i % K << ": id " << ids[i] << ", reference " << ref_ids[i];
  }
  EXPECT_EQ(id_mismatch, 0);
  EXPECT_EQ(w_mismatch, 0);
  for (void* p : {const_cast<void*>(a.logits), const_cast<void*>(a.bias), static_cast<void*>(a.topk_ids), static_cast<void*>(a.topk_weights)})
    if (p != nullptr) cudaFree(p);
}

TEST(RoutingCuda, TiesNanAndSignedZerosMatchTheReferenceAtEveryWidth) {
  MOEKIT_REQUIRE_GPU();
  std::vector<RouteCase> cases;
  for (int E : {1, 7, 32, 33, 64, 100, 128, 129, 256, 384, 512, 600}) {
    for (int K : {1, E < 8 ? E : 8, E}) {
      if (K > 64 && K != E) continue;
      const std::string tag = "E" + std::to_string(E) + " K" + std::to_string(K);
      cases.push_back({"softmax_topk " + tag, E, K, RoutingMethod::kSoftmaxTopK});
      cases.push_back({"softmax_topk bf16 " + tag, E, K, RoutingMethod::kSoftmaxTopK, true});
      cases.push_back({"topk_softmax " + tag, E, K, RoutingMethod::kTopKSoftmax});
      cases.push_back({"topk " + tag, E, K, RoutingMethod::kTopK, true, 1, 1, false});
      if (K == 1) cases.push_back({"llama4 " + tag, E, K, RoutingMethod::kLlama4});
    }
  }
  for (int E : {64, 256, 512}) {
    const int G = 8;
    cases.push_back({"deepseek E" + std::to_string(E) + " K8 g8/4", E, 8, RoutingMethod::kDeepSeekV3, false, G, 4});
    cases.push_back({"deepseek bf16 E" + std::to_string(E) + " K6 g8/2", E, 6, RoutingMethod::kDeepSeekV3, true, G, 2});
  }
  // Group widths around the lanes the group scores share (32 / groups, a power of two): one group of
  // all, groups of one expert, more groups than lanes, and group counts that are not powers of two.
  for (const auto& [E, G, kept, K] : std::vector<std::array<int, 4>>{{64, 1, 1, 8}, {96, 3, 2, 8}, {256, 16, 4, 8}, {64, 64, 16, 8}, {72, 9, 3, 5}, {128, 32, 4, 4}}) {
    cases.push_back({"deepseek E" + std::to_string(E) + " K" + std::to_string(K) + " g" + std::to_string(G) + "/" + std::to_string(kept), E, K,
                     RoutingMethod::kDeepSeekV3, false, G, kept});
  }
  uint64_t seed = 1;
  for (const RouteCase& c : cases) {
    for (int64_t T : {1, 5, 77}) check_case(c, T, seed++);
    check_case(c, 1, seed++, OneRow::kAllNan);
    check_case(c, 1, seed++, OneRow::kAllEqual);
  }
}

// softmax_topk selects on the logits when it can (routing_device.cuh); where different logits give
// tied probabilities it must take the full path and give the reference's ids (the lowest ids among
// the tied). topk_softmax ranks the logits themselves, so these rows are not ties for it.
TEST(RoutingCuda, TiedProbabilitiesOfDifferentLogitsMatchTheReference) {
  MOEKIT_REQUIRE_GPU();
  uint64_t seed = 900;
  for (int E : {8, 64, 128, 256, 512})
    for (RoutingMethod m : {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax}) {
      const RouteCase c{std::string(m == RoutingMethod::kSoftmaxTopK ? "softmax_topk" : "topk_softmax") + " E" + std::to_string(E) + " K6", E, 6, m};
      for (OneRow kind : {OneRow::kUnderflow, OneRow::kBelowDouble})
        for (int64_t T : {1, 5}) check_case(c, T, seed++, kind);
    }
}

// One warp per token routes with `early` (routing_device.cuh's route_on_logits): what it publishes
// early per slot, and the slot's final id.
__global__ void route_with_early_kernel(cuda::moe::RouteArgs a, int32_t* early_out, int32_t* ids_out) {
  extern __shared__ __align__(16) unsigned char route_smem[];
  __shared__ int early[32];
  __shared__ int ids[64];
  __shared__ float weights[64];
  const int lane = static_cast<int>(threadIdx.x);
  const int64_t t = blockIdx.x;
  early[lane] = -1;
  __syncwarp();
  cuda::moe::route_token_warp(a, t, route_smem, lane, false, ids, weights, early);
  __syncwarp();
  early_out[t * 32 + lane] = early[lane];
  for (int k = lane; k < a.top_k; k += 32) ids_out[t * a.top_k + k] = ids[k];
}

// The one-token kernel starts a slot's weight loads on the id the routing publishes early, so a
// published id must be the slot's final one, also where the routing then finds a probability tie
// and takes its full path (the underflow and below-double rows), and nothing may be published where
// the fast path does not run (rows with a NaN or an infinity). Normal logits, whose neighbours in
// rank are far apart, publish every slot with either method (softmax_topk's last slot is settled by
// the extra round its tie check takes).
TEST(RoutingCuda, EarlyIdsAreTheFinalIds) {
  MOEKIT_REQUIRE_GPU();
  uint64_t seed = 1300;
  for (int E : {8, 64, 128, 256, 512})
    for (RoutingMethod m : {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax})
      for (int K : {1, 2, 6, std::min(E - 1, 31)})
        for (int kind = 0; kind < 4; ++kind) {  // normal logits, then OneRow kMixed, kUnderflow, kBelowDouble
          const int64_t T = 9;
          SCOPED_TRACE("E" + std::to_string(E) + " K" + std::to_string(K) + (m == RoutingMethod::kSoftmaxTopK ? " softmax_topk" : " topk_softmax") +
                       " rows " + std::to_string(kind));
          std::vector<float> logits;
          if (kind == 0) {
            std::mt19937_64 rng(seed++);
            std::normal_distribution<float> normal(0.f, 2.f);
            logits.resize(static_cast<size_t>(T * E));
            for (auto& x : logits) x = normal(rng);
          } else {
            logits = tie_heavy_logits(T, E, seed++, kind == 1 ? OneRow::kMixed : kind == 2 ? OneRow::kUnderflow : OneRow::kBelowDouble);
          }
          cuda::moe::RouteArgs a;
          a.logits = to_device<void>(logits.data(), logits.size() * 4);
          a.tokens = T;
          a.experts = E;
          a.top_k = K;
          a.method = static_cast<int>(m);
          a.renormalize = true;
          int32_t *d_early = nullptr, *d_ids = nullptr;
          MOEKIT_ASSERT_CUDA(cudaMalloc(reinterpret_cast<void**>(&d_early), static_cast<size_t>(T) * 32 * 4));
          MOEKIT_ASSERT_CUDA(cudaMalloc(reinterpret_cast<void**>(&d_ids), static_cast<size_t>(T * K) * 4));
          MOEKIT_ASSERT_CUDA(cudaMemset(d_ids, 0xFF, static_cast<size_t>(T * K) * 4));
          const size_t smem = cuda::moe::route_smem_per_warp(E, 1);
          route_with_early_kernel<<<static_cast<unsigned>(T), 32, smem>>>(a, d_early, d_ids);
          MOEKIT_ASSERT_CUDA(cudaGetLastError());
          MOEKIT_ASSERT_CUDA(cudaDeviceSynchronize());
          std::vector<int32_t> early(static_cast<size_t>(T) * 32), ids(static_cast<size_t>(T * K));
          MOEKIT_ASSERT_CUDA(cudaMemcpy(early.data(), d_early, early.size() * 4, cudaMemcpyDeviceToHost));
          MOEKIT_ASSERT_CUDA(cudaMemcpy(ids.data(), d_ids, ids.size() * 4, cudaMemcpyDeviceToHost));
          for (int64_t t = 0; t < T; ++t) {
            int published = 0;
            bool finite = true;
            for (int e = 0; e < E; ++e) finite = finite && std::isfinite(logits[static_cast<size_t>(t * E + e)]);
            for (int k = 0; k < 32; ++k) {
              const int32_t v = early[static_cast<size_t>(t * 32 + k)];
              if (v < 0) continue;
              ++published;
              ASSERT_LT(k, K) << "token " << t << ": an early id past the slots";
              EXPECT_EQ(v, ids[static_cast<size_t>(t * K + k)]) << "token " << t << " slot " << k;
            }
            if (!finite) EXPECT_EQ(published, 0) << "token " << t << ": a non-finite row published early ids";
            if (kind == 0) EXPECT_EQ(published, K) << "token " << t;
          }
          cudaFree(const_cast<void*>(a.logits));
          cudaFree(d_early);
          cudaFree(d_ids);
        }
}

}  // namespace
}  // namespace moekit
