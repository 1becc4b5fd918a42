// Per-stage work of one MoE layer call, from the experts actually active: the FLOPs and the bytes each
// stage moves, for the tuner's per-stage TFLOP/s and GB/s. Pure functions, tested number by number
// (tests/tune/test_tune_metrics.cpp): seed 003's tuner reported wrong per-stage figures because its
// stage variable was reset before the per-stage branches; here each stage has its own formula.
#pragma once

#include <cstdint>
#include <span>

#include "moekit/moe_problem.h"
#include "moekit/stages.h"

namespace moekit::tune {

// What the routing of one call produced.
struct RoutingStats {
  int64_t tokens = 0;          // T (Masked: E_local * max_m)
  int64_t rows = 0;            // R: expanded rows routed to local experts
  int64_t active_experts = 0;  // distinct local experts with at least one row
  int64_t out_rows = 0;        // rows of `out`
};

// From topk_ids [T*K] (Standard and PreRouted): rows and distinct experts in the local range.
RoutingStats routing_stats(const MoeProblem& problem, int64_t tokens, std::span<const int32_t> topk_ids);
// From per-local-expert row counts (Masked: masked_m; Indexed: offsets' differences).
RoutingStats routing_stats_from_counts(const MoeProblem& problem, int64_t tokens, int64_t out_rows, std::span<const int64_t> rows_per_expert);

struct Work {
  double flops = 0;
  double bytes = 0;
};

// Bytes per weight element of the problem's scheme (scales not counted): 16-bit for none/f32 as the
// activation dtype says, 1 for fp8/int8, 0.5 for int4/fp4.
double weight_element_bytes(const MoeProblem& problem);

// One stage's work. Activations move in the activation dtype (what a GPU backend moves; the CPU
// backend's float64 buffers are its own business). gemm1: 2*R*H*N1 FLOPs; bytes = active experts'
// w13 (N1*H each) + R*H in + R*N1 out. gemm2: 2*R*I*H; active experts' w2 (H*I) + R*I in + R*H out.
// route: T*E f32 logits in, T*K ids and weights out. build_maps: T*K ids in; R row maps (source i64,
// weight f32, dest i64) and the offsets out. expand: R*H in and out. activation: R*N1 in, R*I out.
// finalize: R*H in, out_rows*H out. Only the GEMMs count FLOPs.
Work stage_work(const MoeProblem& problem, Stage stage, const RoutingStats& routing);
// A step covering stages [first, last]: the sum of its stages' work (a fused step may move fewer
// bytes; this is the work of the unfused stages it replaces, so fused and unfused compare).
Work step_work(const MoeProblem& problem, Stage first, Stage last, const RoutingStats& routing);

inline double tflops(const Work& w, double us) { return us > 0 ? w.flops / us / 1e6 : 0.0; }
inline double gbps(const Work& w, double us) { return us > 0 ? w.bytes / us / 1e3 : 0.0; }

}  // namespace moekit::tune
