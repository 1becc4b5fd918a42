// The shared machinery of the MoE layer GPU tests: one case (a problem, a token count and options) run
// through MoeRunner on the GPU against the float64 oracle (tests/cpu/naive_moe.h) on a fresh random
// layer, the output poisoned (NaN) first.
//
// Tolerance (docs/cuda-backend.md): with ref the float64 layer, naive16 the same layer computed by a
// naive 16-bit implementation (every GEMM input and output row stored in the activation dtype,
// float64 accumulation, the final output rounded) and err(x) = ||x - ref|| / ||ref||, the GPU output
// must satisfy err(gpu) <= 2 * err(naive16) + 1e-6. Masked rows that must stay untouched must still
// hold the poison, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "moekit/layer_copy.h"
#include "moekit/plan.h"
#include "moekit/random_layer.h"

namespace moekit {

// Odd shapes: H a multiple of 8 but not of 128, I likewise.
constexpr int kH = 264, kI = 136;

// The layer's tensors on the GPU (moekit/layer_copy.h), or a failed test.
LayerCopy on_gpu(const MoeWeights& w, const MoeInputs& in, const MoeOutputs& out);
std::vector<double> to_doubles(const TensorView& device);
void poison(const TensorView& t);

struct Errors {
  double gpu = 0, naive = 0;
  int64_t non_finite = 0, untouched_changed = 0;
};
// ref: float64 (NaN marks Masked rows that must stay untouched); got: the GPU output; naive: the
// naive 16-bit model before its final rounding.
Errors measure(const std::vector<double>& ref, const std::vector<double>& got, const std::vector<double>& naive, DType dtype);

struct Case {
  std::string name;
  MoeProblem problem;
  int64_t tokens = 1;  // T (Masked: max_m)
  bool biases = false;
  bool expert_map = false;  // an expert_map holding every other expert
  FusionControls fusions{};
  bool check_ids = true;
  KernelChoice choice{};  // knob values (tiles, splits); empty: the heuristic's
  std::function<void(RandomLayer&)> tweak = {};  // changes the host layer before it is copied (e.g. PreRouted ids)
};

MoeProblem base_problem(int E, int K, int H, int I);

// The scenarios both the stage pipeline's and the decode layer's tests run, at a token count:
// GPT-OSS's clamped SwiGLU with interleaved gate/up rows and biases (E, K, H, I given);
Case gpt_oss_case(int E, int K, int H, int I, int64_t T);
// activation `a` in f16 with biases, E8 K2 at the odd shape;
Case activation_case(Activation a, int64_t T);
// activation_case for every activation;
std::vector<Case> every_activation_case(int64_t T);
// the routing methods a whole-layer kernel routes itself: DeepSeek-V3's grouped top-k (E64 K6,
// groups 8/3, scale 2.5), topk_softmax with wide experts (E256 K10 H2880 I1408), plain top-k without
// renormalization (E64 K8), Llama-4 (E16 K1, the weight on the output), softmax over 512 experts (K8);
std::vector<Case> routing_method_cases(int64_t T);
// PreRouted ids in f16 with ReLU^2, E64 K8;
Case prerouted_f16_relu2_case(int64_t T);
// experts 2..5 of 8 local, no_combine, GeGLU;
Case expert_range_no_combine_case(int64_t T);
// an expert_map holding every other of 64 experts, K8.
Case expert_map_case(int64_t T);
// PreRouted ids written by the case: every slot on a remote expert (local experts 4..7 of 8), so the
// output must be all zeros;
Case only_remote_experts_case(int64_t T, bool no_combine);
// PreRouted, expert 5 of 8 in every slot of every token (K4, biases).
Case one_expert_in_every_slot_case(int64_t T);

struct Outcome {
  std::vector<double> out;
  Errors errors;
  std::string steps;  // the plan's steps that ran, e.g. "cuda.decode_layer"
};
// Runs the case on the GPU and returns the output (also checks routing outputs against the CPU).
Outcome run_case(const Case& c, uint64_t seed);
void expect_within_tolerance(const Case& c, uint64_t seed);

// The whole layer captured once in a CUDA graph (after one warm-up call that builds the plan) and
// replayed `replays` times, each with new router logits (seeds logits_seed, logits_seed + 1, ...):
// the workspace is poisoned before the capture and the output before every replay, and each replay
// is checked against the float64 oracle with moe_case.h's tolerance. `first_step`, when given, is
// the kernel the plan must start with.
struct GraphReplay {
  MoeProblem problem;
  int64_t tokens = 1;
  uint64_t layer_seed = 0;
  uint64_t logits_seed = 0;
  int replays = 3;
  FusionControls fusions{};
  std::string first_step{};
};
void expect_graph_replays_with_new_routing(const GraphReplay& g);

// A compute capability 9.0 GPU (thread-block clusters of the sm_90a kernels).
bool hopper();

}  // namespace moekit
