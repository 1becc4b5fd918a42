// The description of one MoE layer: what to compute (MoeProblem), the expert weights (MoeWeights),
// the inputs in one of four formats (MoeInputs) and where results go (MoeOutputs).
//
// Vocabulary: T tokens, E experts in the model, E_local experts on this rank, K = top_k,
// H = hidden, I = intermediate per expert. "Gemm1" maps H -> 2I (gated) or I; "gemm2" maps I -> H.
// Every option is documented here and in docs/moe-semantics.md; the CPU reference backend
// (moekit/cpu_reference.h) implements all of them and is the oracle for every other backend.
#pragma once

#include <cstdint>
#include <string_view>

#include "moekit/dtype.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit {

// ---- Routing -------------------------------------------------------------------------------------
enum class RoutingMethod : uint8_t {
  // p = softmax(logits) over all E; the K largest p; weights = p (renormalized if asked).
  kSoftmaxTopK,
  // Mixtral: the K largest logits; weights = softmax over those K logits.
  kTopKSoftmax,
  // DeepSeek-V3: s = sigmoid(logits), b = s + e_score_correction_bias; a group's score is the sum
  // of its two largest b; the topk_group best groups are kept; the K largest b among their experts
  // are chosen; weights = s of the chosen (unbiased), renormalized if asked.
  kDeepSeekV3,
  // Llama-4: the K largest logits (K = 1 in the model); weights = sigmoid(logit).
  kLlama4,
  // Plain top-k of the given scores; weights = the scores themselves (renormalized if asked).
  kTopK,
};

struct RoutingParams {
  RoutingMethod method = RoutingMethod::kSoftmaxTopK;
  bool renormalize = false;  // divide the K weights by their sum
  int n_group = 0;           // kDeepSeekV3: number of expert groups (E % n_group == 0)
  int topk_group = 0;        // kDeepSeekV3: groups kept per token
  // Multiplies every final routing weight (applied in finalize). DeepSeek-V3 uses 2.5.
  float routed_scaling_factor = 1.0f;
};

// ---- Activation ----------------------------------------------------------------------------------
enum class Activation : uint8_t {
  kSwiGLU,          // silu(gate) * up
  kGeGLU,           // gelu_erf(gate) * up
  kGeGLUTanh,       // gelu_tanh(gate) * up
  kSwiGLUClamped,   // GPT-OSS: gate = min(gate, limit), up = clamp(up, -limit, limit),
                    // out = (up + 1) * gate * sigmoid(alpha * gate)
  kReLU2,           // relu(x)^2, not gated
  kSiLU,            // not gated
  kGeLU,            // gelu_erf, not gated
  kReLU,            // not gated
  kIdentity,        // not gated
};
bool activation_is_gated(Activation a);

struct ActivationParams {
  Activation kind = Activation::kSwiGLU;
  float alpha = 1.702f;  // kSwiGLUClamped: seed 000's gemm1_alpha
  float limit = 7.0f;    // kSwiGLUClamped: seed 000's gemm1_clamp_limit
};

// How gate and up rows are stored in w13 [E_local, 2I, H] (gated activations only).
enum class GateUpLayout : uint8_t {
  kConcatenated,  // rows [0, I) are gate, rows [I, 2I) are up (Mixtral/Qwen/DeepSeek w1;w3)
  kInterleaved,   // row 2i is gate i, row 2i+1 is up i (GPT-OSS gate_up_proj)
};

// ---- Quantization --------------------------------------------------------------------------------
// One scheme describes both GEMMs' weights and activations; scales live in MoeWeights. Exact
// scale layouts and rounding are in docs/quantization.md.
enum class QuantScheme : uint8_t {
  kNone,               // weights and activations in the activation dtype (f32, f16, bf16)
  kFp8PerTensor,       // e4m3 weights, one fp32 scale per expert and GEMM; e4m3 activations with a
                       // static per-tensor scale (input_scale) or a dynamic one (absent input_scale)
  kFp8PerToken,        // e4m3 weights with per-output-channel scales; dynamic per-token activations
  kFp8Block,           // DeepSeek-V3: weights in 128x128 blocks, activations 1x128 dynamic, fp32 scales
  kInt8PerToken,       // W8A8: int8 weights per output channel, int8 activations per token (dynamic)
  kW4A16,              // int4 weights, group-wise scales (+ optional zero points) along K; 16-bit acts
  kW8A16,              // int8 weights, group-wise scales (+ optional zero points) along K; 16-bit acts
  kMxfp4,              // GPT-OSS: e2m1 weights, one e8m0 scale per 32 along K; 16-bit activations
  kMxfp4Mxfp8,         // MXFP4 weights; activations e4m3 with one e8m0 scale per 32 (dynamic)
  kNvfp4,              // e2m1 weights and activations, ue4m3 scale per 16, fp32 global scales
  kW4A8,               // int4 group-wise weights, e4m3 activations with a static per-tensor scale
};
std::string_view quant_scheme_name(QuantScheme q);

// ---- Input formats -------------------------------------------------------------------------------
enum class InputFormat : uint8_t {
  kStandard,   // hidden [T, H] + router_logits [T, E]: routing runs inside the layer
  kPreRouted,  // hidden [T, H] + topk_ids [T, K] + topk_weights [T, K]: routing already done
  kMasked,     // hidden [E_local, max_m, H] + masked_m [E_local]: expert-parallel low-latency
               // layout; output [E_local, max_m, H]; rows at or beyond masked_m[e] untouched;
               // no routing weights are applied (the dispatcher's combine applies them)
  kIndexed,    // hidden [T, H] + expert_offsets [E_local + 1] + gather_index [R] +
               // row_weights [R]: row r of expert e (off[e] <= r < off[e+1]) reads token
               // gather_index[r]; out[gather_index[r]] += row_weights[r] * expert_e(row)
};
std::string_view input_format_name(InputFormat f);

// Names as used by the CLI, explain output and docs ("softmax_topk", "swiglu", ...), and the
// parsers back (an unknown name is an error listing the known ones).
std::string_view routing_method_name(RoutingMethod m);
std::string_view activation_name(Activation a);
std::string_view gate_up_layout_name(GateUpLayout l);
Result<RoutingMethod> parse_routing_method(std::string_view s);
Result<Activation> parse_activation(std::string_view s);
Result<QuantScheme> parse_quant_scheme(std::string_view s);
Result<InputFormat> parse_input_format(std::string_view s);
Result<GateUpLayout> parse_gate_up_layout(std::string_view s);  // concatenated, interleaved
Result<DType> parse_activation_dtype(std::string_view s);  // f32, f16, bf16

// ---- The problem ---------------------------------------------------------------------------------
struct MoeProblem {
  int num_experts = 0;         // E: experts in the model (router width)
  int top_k = 0;               // K
  int hidden = 0;              // H
  int intermediate = 0;        // I (per expert)
  // Expert parallelism: this rank holds global experts [local_expert_begin,
  // local_expert_begin + num_local_experts). -1 means all E. An expert_map in MoeWeights, when
  // given, overrides the range. Tokens routed to experts not held here contribute zero.
  int local_expert_begin = 0;
  int num_local_experts = -1;

  RoutingParams routing{};
  ActivationParams activation{};
  GateUpLayout gate_up_layout = GateUpLayout::kConcatenated;
  QuantScheme quant = QuantScheme::kNone;
  int group_size = 128;        // kW4A16/kW8A16/kW4A8: weight group size along K (32, 64 or 128)

  DType activation_dtype = DType::kBF16;  // hidden and output: f32, f16 or bf16
  InputFormat input_format = InputFormat::kStandard;

  bool no_combine = false;     // output [T, K, H]: out[t,k] = scale * w[t,k] * expert(t,k); the sum
                               // over k is the combined output. Zero rows for non-local experts.
  // The routing weight multiplies the expert's input instead of its output (top_k must be 1).
  bool apply_router_weight_on_input = false;
  bool deterministic = false;  // bitwise-reproducible output (no atomics in reductions)

  int local_experts() const { return num_local_experts < 0 ? num_experts : num_local_experts; }
  int gemm1_rows() const { return activation_is_gated(activation.kind) ? 2 * intermediate : intermediate; }
};

// ---- Weights -------------------------------------------------------------------------------------
// Weights are [E_local, N, K] row-major (out x in, as PyTorch's Linear stores them): w13 is
// [E_local, gemm1_rows, H], w2 is [E_local, H, I]. Packed 4-bit weights keep logical shapes.
// Unused scale fields stay empty (a default TensorView). docs/quantization.md gives each
// scheme's required fields, shapes and dtypes.
struct MoeWeights {
  TensorView w13;
  TensorView w2;
  TensorView w13_bias;          // optional, [E_local, gemm1_rows] f32 or activation dtype
  TensorView w2_bias;           // optional, [E_local, H]
  TensorView w13_scale;         // per scheme (per tensor [E_local], per channel [E_local, N],
  TensorView w2_scale;          //   block [E_local, ceil(N/128), ceil(K/128)], group [E_local, N, K/g])
  TensorView w13_zero_point;    // optional, group-wise schemes: [E_local, N, K/g]
  TensorView w2_zero_point;
  TensorView w13_global_scale;  // kNvfp4: [E_local] fp32
  TensorView w2_global_scale;
  TensorView w13_input_scale;   // static activation scale before gemm1 (fp8 per-tensor, W4A8,
  TensorView w2_input_scale;    //   NVFP4 global): scalar [] or per expert [E_local], fp32
  TensorView w13_pre_quant_scale;  // AWQ: multiplies gemm1's input per channel, [H] or [E_local, H]
  TensorView w2_pre_quant_scale;   // AWQ: multiplies gemm2's input per channel, [I] or [E_local, I]
  TensorView expert_map;        // optional, [E] i32: global expert -> local index, or -1
};

// ---- Inputs and outputs --------------------------------------------------------------------------
struct MoeInputs {
  TensorView hidden;                  // [T, H] (Masked: [E_local, max_m, H]), activation dtype
  TensorView router_logits;           // kStandard: [T, E] f32 or bf16
  TensorView e_score_correction_bias; // kDeepSeekV3: [E] f32 or bf16
  TensorView topk_ids;                // kPreRouted: [T, K] i32
  TensorView topk_weights;            // kPreRouted: [T, K] f32
  TensorView masked_m;                // kMasked: [E_local] i32
  TensorView expert_offsets;          // kIndexed: [E_local + 1] i32
  TensorView gather_index;            // kIndexed: [R] i32
  TensorView row_weights;             // kIndexed: [R] f32
};

struct MoeOutputs {
  TensorView out;           // [T, H] ([T, K, H] with no_combine; Masked: [E_local, max_m, H])
  TensorView topk_ids;      // optional (kStandard): receives the routing decision [T, K] i32
  TensorView topk_weights;  // optional (kStandard): receives the final weights [T, K] f32
};

}  // namespace moekit
