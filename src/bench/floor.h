// The floor of one MoE layer call (shared/PERFORMANCE.md): the time no implementation can beat on
// a device with the measured ceilings, from the experts this call actually hit.
//
//   bytes = experts hit x weight bytes per expert (+ weights shared by all experts)
//           + the call's activations in (hidden, router logits) and out
//   flops = 2 x (rows routed to local experts) x (gemm1_rows + I) x H
//   floor = max(bytes / read bandwidth, flops / dense peak), and which of the two bounds it
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "moekit/moe_problem.h"

namespace moekit::bench {

// Weight bytes of the layer, split into what one local expert owns (rows of every [E_local, ...]
// tensor: w13, w2, their scales, zero points, biases) and what all experts share (e.g. an AWQ scale
// of shape [H]). Quantized schemes count what they store (fp8: 1 byte, mxfp4: half a byte plus one
// e8m0 scale per 32), so the floor follows the scheme.
struct WeightBytes {
  double per_expert = 0;
  double shared = 0;
};
WeightBytes weight_bytes(const MoeWeights& weights, int local_experts);

// What cuda::rotated_weight_copies weighs for a layer: the weight bytes the smallest call reads
// (top_k experts) and those of one whole copy. `moekit bench` and the tuner's worker both make
// that many copies.
std::pair<double, double> rotation_bytes(const MoeProblem& problem, const WeightBytes& weights);

// What one call moves and computes.
struct LayerTraffic {
  int64_t experts_hit = 0;   // distinct local experts with at least one routed row
  int64_t routed_rows = 0;   // (token, slot) pairs routed to a local expert
  // The most rows routed to one local expert: against routed_rows / experts_hit, how uneven the
  // experts are (the grouped GEMMs pay for the most loaded expert's partial tiles and last wave).
  int64_t max_expert_rows = 0;
  double weight_bytes = 0;
  double activation_bytes = 0;
  double flops = 0;
  double bytes() const { return weight_bytes + activation_bytes; }
};

// Rows routed to each local expert by topk_ids [T*K] (global expert ids; ids of other ranks' experts
// are not counted): local_experts() entries, expert local_expert_begin first.
std::vector<int64_t> rows_per_local_expert(const MoeProblem& problem, std::span<const int32_t> topk_ids);

// From the routing decision topk_ids [T*K] (global expert ids): the local experts are
// [local_expert_begin, local_expert_begin + local_experts()); rows routed elsewhere cost nothing here.
LayerTraffic layer_traffic(const MoeProblem& problem, std::span<const int32_t> topk_ids, const WeightBytes& weights,
                           double activation_bytes);

struct Floor {
  double seconds = 0;
  double memory_seconds = 0;   // bytes / bandwidth
  double compute_seconds = 0;  // flops / peak
  std::string_view bound;      // "memory" or "compute"
};
// bandwidth in bytes/s, peak in FLOP/s; a zero ceiling contributes no bound.
Floor layer_floor(const LayerTraffic& traffic, double bandwidth, double peak_flops);

}  // namespace moekit::bench
