// The shared machinery of the MoE layer GPU tests (moe_case.h).
#include "moe_case.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <span>

#include <fmt/format.h>

#include "cpu/naive_moe.h"
#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"
#include "moekit/runner.h"

namespace moekit {

LayerCopy on_gpu(const MoeWeights& w, const MoeInputs& in, const MoeOutputs& out) {
  auto c = copy_layer(Device::cuda(0), w, in, out);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(c).value() : LayerCopy{};
}

std::vector<double> to_doubles(const TensorView& device) {
  auto host = Tensor::empty(device.dtype(), device.shape());
  EXPECT_TRUE(host.ok());
  EXPECT_TRUE(copy_tensor(*host, device).ok());
  std::vector<double> v(static_cast<size_t>(host->numel()));
  load_elements(host->data(), host->dtype(), 0, host->numel(), v.data());
  return v;
}

// cudaMemset runs on the legacy stream and returns before it is done: wait, so that work the test
// then queues on its own non-blocking stream never races the poison.
void poison(const TensorView& t) {
  ASSERT_EQ(cudaMemset(t.data(), 0xFF, static_cast<size_t>(t.storage_bytes())), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// ---- errors ---------------------------------------------------------------------------------------
Errors measure(const std::vector<double>& ref, const std::vector<double>& got, const std::vector<double>& naive, DType dtype) {
  Errors e;
  double num_g = 0, num_n = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(ref[i])) {
      if (!std::isnan(got[i])) ++e.untouched_changed;
      continue;
    }
    if (!std::isfinite(got[i])) {
      ++e.non_finite;
      continue;
    }
    const double n16 = naive::round_to(dtype, naive[i]);
    num_g += (got[i] - ref[i]) * (got[i] - ref[i]);
    num_n += (n16 - ref[i]) * (n16 - ref[i]);
    den += ref[i] * ref[i];
  }
  if (den > 0) {
    e.gpu = std::sqrt(num_g / den);
    e.naive = std::sqrt(num_n / den);
  }
  return e;
}

// ---- one case -------------------------------------------------------------------------------------
MoeProblem base_problem(int E, int K, int H, int I) {
  MoeProblem p;
  p.num_experts = E;
  p.top_k = K;
  p.hidden = H;
  p.intermediate = I;
  p.routing.renormalize = true;
  return p;
}

Case gpt_oss_case(int E, int K, int H, int I, int64_t T) {
  Case c{fmt::format("gpt-oss clamped interleaved biases E{} K{} H{} I{} T{}", E, K, H, I, T), base_problem(E, K, H, I), T, true};
  c.problem.activation = {Activation::kSwiGLUClamped, 1.702f, 7.0f};
  c.problem.gate_up_layout = GateUpLayout::kInterleaved;
  return c;
}

Case activation_case(Activation a, int64_t T) {
  Case c{fmt::format("activation {} f16 biases E8 K2 T{}", activation_name(a), T), base_problem(8, 2, kH, kI), T, true};
  c.problem.activation.kind = a;
  c.problem.activation_dtype = DType::kF16;
  return c;
}

std::vector<Case> every_activation_case(int64_t T) {
  std::vector<Case> cases;
  for (Activation a : {Activation::kSwiGLU, Activation::kGeGLU, Activation::kGeGLUTanh, Activation::kReLU2, Activation::kSiLU,
                       Activation::kGeLU, Activation::kReLU, Activation::kIdentity})
    cases.push_back(activation_case(a, T));
  return cases;
}

std::vector<Case> routing_method_cases(int64_t T) {
  std::vector<Case> cases;
  Case ds{fmt::format("deepseek E64 K6 groups8/3 scale2.5 T{}", T), base_problem(64, 6, kH, kI), T};
  ds.problem.routing.method = RoutingMethod::kDeepSeekV3;
  ds.problem.routing.n_group = 8;
  ds.problem.routing.topk_group = 3;
  ds.problem.routing.routed_scaling_factor = 2.5f;
  cases.push_back(ds);
  Case mix{fmt::format("topk_softmax E256 K10 H2880 I1408 T{}", T), base_problem(256, 10, 2880, 1408), T};
  mix.problem.routing.method = RoutingMethod::kTopKSoftmax;
  cases.push_back(mix);
  Case topk{fmt::format("plain topk E64 K8 no renorm T{}", T), base_problem(64, 8, kH, kI), T};
  topk.problem.routing.method = RoutingMethod::kTopK;
  topk.problem.routing.renormalize = false;
  cases.push_back(topk);
  Case llama{fmt::format("llama4 E16 K1 (weight on the output) T{}", T), base_problem(16, 1, kH, kI), T};
  llama.problem.routing.method = RoutingMethod::kLlama4;
  cases.push_back(llama);
  cases.push_back({fmt::format("softmax E512 K8 T{}", T), base_problem(512, 8, kH, kI), T});
  return cases;
}

Case prerouted_f16_relu2_case(int64_t T) {
  Case c{fmt::format("prerouted f16 relu2 E64 K8 T{}", T), base_problem(64, 8, kH, kI), T};
  c.problem.input_format = InputFormat::kPreRouted;
  c.problem.activation_dtype = DType::kF16;
  c.problem.activation.kind = Activation::kReLU2;
  return c;
}

Case expert_range_no_combine_case(int64_t T) {
  Case c{fmt::format("EP range 2..6 of 8, no_combine, geglu T{}", T), base_problem(8, 3, kH, kI), T};
  c.problem.local_expert_begin = 2;
  c.problem.num_local_experts = 4;
  c.problem.no_combine = true;
  c.problem.activation.kind = Activation::kGeGLU;
  return c;
}

Case expert_map_case(int64_t T) {
  Case c{fmt::format("expert_map every other of 64, K8, T{}", T), base_problem(64, 8, kH, kI), T};
  c.problem.num_local_experts = 32;
  c.expert_map = true;
  return c;
}

Case only_remote_experts_case(int64_t T, bool no_combine) {
  Case c{fmt::format("prerouted, only remote experts hit{}, T{}", no_combine ? ", no_combine" : "", T), base_problem(8, 2, kH, kI), T};
  c.problem.input_format = InputFormat::kPreRouted;
  c.problem.local_expert_begin = 4;
  c.problem.num_local_experts = 4;
  c.problem.no_combine = no_combine;
  c.tweak = [](RandomLayer& l) {
    auto* ids = l.topk_ids.data_as<int32_t>();
    for (int64_t i = 0; i < l.topk_ids.numel(); ++i) ids[i] = static_cast<int32_t>(i % 4);
  };
  return c;
}

Case one_expert_in_every_slot_case(int64_t T) {
  Case c{fmt::format("prerouted, expert 5 in every slot, E8 K4 T{}", T), base_problem(8, 4, kH, kI), T, true};
  c.problem.input_format = InputFormat::kPreRouted;
  c.tweak = [](RandomLayer& l) {
    auto* ids = l.topk_ids.data_as<int32_t>();
    for (int64_t i = 0; i < l.topk_ids.numel(); ++i) ids[i] = 5;
  };
  return c;
}

Outcome run_case(const Case& c, uint64_t seed) {
  Outcome result;
  MoeProblem p = c.problem;
  RandomLayerOptions o;
  o.num_tokens = c.tokens;
  o.seed = seed;
  o.biases = c.biases;
  auto layer = make_random_layer(p, o);
  EXPECT_TRUE(layer.ok()) << layer.status().to_string();
  if (!layer.ok()) return result;
  if (c.tweak) c.tweak(*layer);
  Tensor map;
  if (c.expert_map) {
    map = std::move(*Tensor::empty(DType::kI32, {p.num_experts}));
    for (int g = 0; g < p.num_experts; ++g) map.data_as<int32_t>()[g] = (g % 2 == 0 && g / 2 < p.local_experts()) ? g / 2 : -1;
    layer->weights.expert_map = map.view();
  }
  const MoeInputs host_in = layer->inputs();
  const MoeOutputs host_out = layer->outputs();

  const bool standard = p.input_format == InputFormat::kStandard;
  const int64_t T = host_in.hidden.size(0);
  MoeOutputs wanted = host_out;
  Tensor ids_host, weights_host;
  if (standard && c.check_ids) {
    ids_host = std::move(*Tensor::empty(DType::kI32, {T, p.top_k}));
    weights_host = std::move(*Tensor::empty(DType::kF32, {T, p.top_k}));
    wanted.topk_ids = ids_host.view();
    wanted.topk_weights = weights_host.view();
  }
  const LayerCopy gpu = on_gpu(layer->weights, host_in, wanted);
  const MoeWeights& dw = gpu.weights;
  const MoeInputs& din = gpu.inputs;
  const MoeOutputs& dout = gpu.outputs;

  auto runner = MoeRunner::create(p, {.backend = BackendChoice::kCuda, .fusions = c.fusions, .choice = c.choice});
  EXPECT_TRUE(runner.ok()) << runner.status().to_string();
  if (!runner.ok()) return result;
  auto prepared = runner->prepare_weights(dw);
  EXPECT_TRUE(prepared.ok()) << prepared.status().to_string();
  if (!prepared.ok()) return result;
  auto bytes = runner->workspace_size(din);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(*bytes)}, Device::cuda(0));
  EXPECT_TRUE(ws.ok());
  poison(dout.out);
  if (bytes.ok() && *bytes > 0) poison(ws->view());
  const Status st = runner->run(*prepared, din, dout, std::span(static_cast<std::byte*>(ws->data()), *bytes), {});
  EXPECT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  result.out = to_doubles(dout.out);
  const int64_t plan_tokens = p.input_format == InputFormat::kMasked ? p.local_experts() * c.tokens : T;
  for (const auto& step : runner->plan(plan_tokens, WeightTraits::of(dw)).steps) result.steps += (result.steps.empty() ? "" : " ") + step.kernel;

  // The float64 oracle and the naive 16-bit model, on the host copies.
  const std::vector<double> ref = naive::run(p, layer->weights, host_in);
  const std::vector<double> n16 = naive::run(p, layer->weights, host_in, p.activation_dtype);
  result.errors = measure(ref, result.out, n16, p.activation_dtype);

  if (standard && c.check_ids) {
    // Routing in double on both sides: the same experts, weights within float rounding.
    std::vector<int32_t> ref_ids(static_cast<size_t>(T * p.top_k));
    std::vector<float> ref_w(ref_ids.size());
    const Status rs = cpu::route(p.routing, p.num_experts, p.top_k, host_in.router_logits, host_in.e_score_correction_bias,
                                 TensorView(ref_ids.data(), DType::kI32, {T, p.top_k}), TensorView(ref_w.data(), DType::kF32, {T, p.top_k}));
    EXPECT_TRUE(rs.ok()) << rs.to_string();
    const std::vector<double> got_ids = to_doubles(dout.topk_ids), got_w = to_doubles(dout.topk_weights);
    int64_t id_mismatch = 0;
    double w_err = 0;
    for (size_t i = 0; i < ref_ids.size(); ++i) {
      id_mismatch += got_ids[i] != ref_ids[i];
      w_err = std::max(w_err, std::abs(got_w[i] - ref_w[i]));
    }
    EXPECT_EQ(id_mismatch, 0) << c.name;
    EXPECT_LE(w_err, 1e-6) << c.name;
  }
  return result;
}

void expect_within_tolerance(const Case& c, uint64_t seed) {
  SCOPED_TRACE(c.name);
  const Outcome o = run_case(c, seed);
  EXPECT_EQ(o.errors.non_finite, 0) << c.name;
  EXPECT_EQ(o.errors.untouched_changed, 0) << c.name;
  EXPECT_LE(o.errors.gpu, 2 * o.errors.naive + 1e-6) << c.name << ": gpu err " << o.errors.gpu << " naive16 err " << o.errors.naive;
  std::printf("  %-44s err %.3e  naive16 %.3e\n", c.name.c_str(), o.errors.gpu, o.errors.naive);
}


void expect_graph_replays_with_new_routing(const GraphReplay& g) {
  const MoeProblem& p = g.problem;
  auto layer = make_random_layer(p, {.num_tokens = g.tokens, .seed = g.layer_seed});
  ASSERT_TRUE(layer.ok());
  const LayerCopy gpu = on_gpu(layer->weights, layer->inputs(), layer->outputs());
  auto runner = MoeRunner::create(p, {.backend = BackendChoice::kCuda, .fusions = g.fusions});
  ASSERT_TRUE(runner.ok()) << runner.status().to_string();
  if (!g.first_step.empty()) ASSERT_EQ(runner->plan(g.tokens, WeightTraits::of(gpu.weights)).steps.front().kernel, g.first_step);
  auto prepared = runner->prepare_weights(gpu.weights);
  ASSERT_TRUE(prepared.ok());
  const size_t bytes = *runner->workspace_size(gpu.inputs);
  auto ws = Tensor::empty(DType::kU8, {static_cast<int64_t>(bytes)}, Device::cuda(0));
  ASSERT_TRUE(ws.ok());
  poison(ws->view());
  cudaStream_t stream;
  MOEKIT_ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::span<std::byte> workspace(static_cast<std::byte*>(ws->data()), bytes);
  // Warm-up outside the capture: the plan for this T is built and cached on the first call.
  ASSERT_TRUE(runner->run(*prepared, gpu.inputs, gpu.outputs, workspace, {stream}).ok());
  cudaGraph_t graph;
  MOEKIT_ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const Status captured = runner->run(*prepared, gpu.inputs, gpu.outputs, workspace, {stream});
  MOEKIT_ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
  ASSERT_TRUE(captured.ok()) << captured.to_string();
  cudaGraphExec_t exec;
  MOEKIT_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < g.replays; ++replay) {
    fill_uniform(layer->router_logits.view(), 3.0, g.logits_seed + static_cast<uint64_t>(replay), 1);  // new routing every replay
    ASSERT_TRUE(copy_tensor(gpu.inputs.router_logits, layer->router_logits.view()).ok());
    poison(gpu.outputs.out);
    MOEKIT_ASSERT_CUDA(cudaGraphLaunch(exec, stream));
    MOEKIT_ASSERT_CUDA(cudaStreamSynchronize(stream));
    const MoeInputs host_in = layer->inputs();
    const Errors e = measure(naive::run(p, layer->weights, host_in), to_doubles(gpu.outputs.out),
                             naive::run(p, layer->weights, host_in, p.activation_dtype), p.activation_dtype);
    EXPECT_EQ(e.non_finite, 0) << "replay " << replay;
    EXPECT_LE(e.gpu, 2 * e.naive + 1e-6) << "replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

bool hopper() {
  int dev = 0, major = 0, minor = 0;
  return cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
         cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 && minor == 0;
}

}  // namespace moekit
