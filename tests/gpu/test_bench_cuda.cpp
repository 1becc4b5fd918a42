// The GPU side of `moekit bench` that does not need the CUDA MoE backend: the ceilings, and the
// cuBLAS baseline against the CPU reference on the reference's own routing. Host code only.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "bench/cuda/baseline.h"
#include "bench/layer_bench.h"
#include "bench/refcheck.h"
#include "gpu/gpu_test_util.h"
#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"
#include "moekit/random_layer.h"

namespace moekit::bench {
namespace {

TEST(BenchCuda, CeilingsAreMeasured) {
  MOEKIT_REQUIRE_GPU();
  auto c = measure_cuda_ceilings();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_GE(c->size(), 3u);
  EXPECT_EQ((*c)[0].name, "read bandwidth");
  EXPECT_GT((*c)[0].value, 0.0);
  EXPECT_GT((*c)[1].value, 0.0) << (*c)[1].how;  // bf16 GEMM runs on every supported GPU
}

struct Case {
  const char* name;
  MoeProblem problem;
};

void check_baseline(const MoeProblem& p, int64_t T) {
  auto layer = make_random_layer(p, {.num_tokens = T, .seed = 11});
  ASSERT_TRUE(layer.ok()) << layer.status().to_string();
  // The reference, and the routing it chose (what the fused layer hands the baseline in a bench run).
  Tensor ref = Tensor::empty(p.activation_dtype, {T, int64_t{p.hidden}}).value();
  Tensor ids = Tensor::empty(DType::kI32, {T, int64_t{p.top_k}}).value();
  Tensor wts = Tensor::empty(DType::kF32, {T, int64_t{p.top_k}}).value();
  MoeOutputs ro;
  ro.out = ref;
  ro.topk_ids = ids;
  ro.topk_weights = wts;
  ASSERT_TRUE(cpu::run_reference(p, layer->weights, layer->inputs(), ro).ok());

  auto dev = [](const TensorView& h) {
    Tensor d = Tensor::empty(h.dtype(), h.shape(), Device::cuda()).value();
    EXPECT_TRUE(copy_tensor(d, h).ok());
    return d;
  };
  Tensor hidden = dev(layer->hidden), w13 = dev(layer->weights.w13), w2 = dev(layer->weights.w2);
  Tensor out = Tensor::empty(p.activation_dtype, {T, int64_t{p.hidden}}, Device::cuda()).value();
  MoeWeights w;
  w.w13 = w13;
  w.w2 = w2;
  auto base = CublasBaseline::create(p);
  ASSERT_TRUE(base.ok()) << base.status().to_string();
  const std::vector<int32_t> id_vec(ids.data_as<int32_t>(), ids.data_as<int32_t>() + ids.numel());
  const std::vector<float> wt_vec(wts.data_as<float>(), wts.data_as<float>() + wts.numel());
  ASSERT_TRUE((*base)->set_routing(id_vec, wt_vec, T).ok());
  ASSERT_TRUE((*base)->enqueue(w, hidden, out, nullptr).ok());
  MOEKIT_ASSERT_CUDA(cudaDeviceSynchronize());
  Tensor got = Tensor::empty(p.activation_dtype, {T, int64_t{p.hidden}}).value();
  ASSERT_TRUE(copy_tensor(got, out).ok());
  EXPECT_LE(relative_l2_error(got, ref), refcheck_limit(p.activation_dtype));
}

TEST(BenchCuda, BaselineMatchesTheReference) {
  MOEKIT_REQUIRE_GPU();
  MoeProblem swiglu{.num_experts = 8, .top_k = 2, .hidden = 128, .intermediate = 64,
                    .routing = {.method = RoutingMethod::kSoftmaxTopK, .renormalize = true}};
  MoeProblem gptoss = swiglu;  // interleaved gate/up, clamped SwiGLU, routed scaling
  gptoss.activation = {.kind = Activation::kSwiGLUClamped, .alpha = 1.702f, .limit = 7.0f};
  gptoss.gate_up_layout = GateUpLayout::kInterleaved;
  gptoss.routing.routed_scaling_factor = 2.5f;
  MoeProblem ep = swiglu;  // expert parallel: experts 2..5 here, the rest contribute zero
  ep.local_expert_begin = 2;
  ep.num_local_experts = 4;
  MoeProblem f16 = swiglu;
  f16.activation_dtype = DType::kF16;
  for (const MoeProblem& p : {swiglu, gptoss, ep, f16})
    for (int64_t T : {1, 37}) {
      SCOPED_TRACE(testing::Message() << "T=" << T << " act=" << activation_name(p.activation.kind)
                                      << " local=" << p.local_experts() << " dtype=" << dtype_name(p.activation_dtype));
      check_baseline(p, T);
    }
}

// One of the batched reference's GEMMs against a product on the host: out[e] = in[e] x W[e]^T for
// every local expert and row, W the layer's own weights [E_local, n, k] (bf16).
void expect_batched_gemm(const CublasBaseline& base, int gemm, const TensorView& weights, int64_t E, int64_t m) {
  SCOPED_TRACE(testing::Message() << "gemm" << gemm);
  Tensor in, out;
  ASSERT_TRUE(base.read_batched(gemm, in, out).ok());
  ASSERT_EQ(in.shape().size(), 3u);
  EXPECT_EQ(in.shape()[0], E);
  EXPECT_EQ(in.shape()[1], m);
  EXPECT_EQ(in.shape()[2], weights.shape()[2]);
  EXPECT_EQ(out.shape()[2], weights.shape()[1]);
  const int64_t n = weights.shape()[1], k = weights.shape()[2];
  auto bf = [](const TensorView& t, int64_t i) { return decode_bf16(static_cast<const uint16_t*>(t.data())[i]); };
  Tensor ref = Tensor::empty(DType::kBF16, {E, m, n}).value();
  bool any_nonzero_input = false;
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double acc = 0.0;
        for (int64_t j = 0; j < k; ++j) {
          const double a = bf(in.view(), (e * m + r) * k + j);
          any_nonzero_input |= a != 0.0;
          acc += a * bf(weights, (e * n + c) * k + j);
        }
        static_cast<uint16_t*>(ref.data())[(e * m + r) * n + c] = encode_bf16(acc);
      }
  EXPECT_TRUE(any_nonzero_input) << "the batched rows were never filled";
  EXPECT_LE(relative_l2_error(out.view(), ref.view()), refcheck_limit(DType::kBF16));
}

// `moekit bench --batched-reference`: the rows routed to local experts, spread evenly (ceil(rows /
// E_local) an expert), through one strided-batched GEMM per layer GEMM, without set_routing's
// per-expert buffers; captured in a graph as the bench times it.
TEST(BenchCuda, BatchedReferenceMultipliesEvenlySpreadRows) {
  MOEKIT_REQUIRE_GPU();
  MoeProblem p{.num_experts = 8, .top_k = 2, .hidden = 136, .intermediate = 72,
               .routing = {.method = RoutingMethod::kSoftmaxTopK, .renormalize = true}};
  p.local_expert_begin = 2;  // expert parallel: experts 2..5 are local
  p.num_local_experts = 4;
  auto layer = make_random_layer(p, {.num_tokens = 3, .seed = 5});
  ASSERT_TRUE(layer.ok()) << layer.status().to_string();
  ASSERT_EQ(layer->weights.w13.dtype(), DType::kBF16);
  auto dev = [](const TensorView& h) {
    Tensor d = Tensor::empty(h.dtype(), h.shape(), Device::cuda()).value();
    EXPECT_TRUE(copy_tensor(d, h).ok());
    return d;
  };
  Tensor w13 = dev(layer->weights.w13), w2 = dev(layer->weights.w2);
  MoeWeights w;
  w.w13 = w13;
  w.w2 = w2;
  auto base = CublasBaseline::create(p);
  ASSERT_TRUE(base.ok()) << base.status().to_string();

  // No local rows: nothing to time, nothing to read.
  auto none = (*base)->set_batched({0, 1, 7, 6, 1, 0});
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(*none, 0);
  Tensor in, out;
  EXPECT_FALSE((*base)->read_batched(1, in, out).ok());

  // Eleven of the fifteen (token, slot) ids are local (2..5): ceil(11 / 4) = 3 rows an expert.
  const std::vector<int32_t> ids{2, 3, 4, 5, 0, 2, 7, 3, 4, 5, 1, 2, 3, 6, 5};
  auto m = (*base)->set_batched(ids);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(*m, 3);
  EXPECT_FALSE((*base)->read_batched(3, in, out).ok());

  cudaStream_t stream = nullptr;
  MOEKIT_ASSERT_CUDA(cudaStreamCreate(&stream));
  cudaGraph_t graph = nullptr;
  MOEKIT_ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const Status enq = (*base)->enqueue_batched(w, stream);
  MOEKIT_ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
  ASSERT_TRUE(enq.ok()) << enq.to_string();
  cudaGraphExec_t exec = nullptr;
  MOEKIT_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  MOEKIT_ASSERT_CUDA(cudaGraphLaunch(exec, stream));
  MOEKIT_ASSERT_CUDA(cudaStreamSynchronize(stream));
  expect_batched_gemm(**base, 1, layer->weights.w13, 4, 3);
  expect_batched_gemm(**base, 2, layer->weights.w2, 4, 3);
  EXPECT_EQ((*base)->layer_buffer_bytes(), 0u) << "the batched reference allocated the per-expert layer's buffers";
  MOEKIT_ASSERT_CUDA(cudaGraphExecDestroy(exec));
  MOEKIT_ASSERT_CUDA(cudaGraphDestroy(graph));
  MOEKIT_ASSERT_CUDA(cudaStreamDestroy(stream));
}

TEST(BenchCuda, BaselineDeclinesQuantizedWeights) {
  MoeProblem p{.num_experts = 8, .top_k = 2, .hidden = 128, .intermediate = 64, .quant = QuantScheme::kFp8Block};
  auto base = CublasBaseline::create(p);
  ASSERT_FALSE(base.ok());
  EXPECT_NE(base.status().message().find("unquantized"), std::string::npos);
}

}  // namespace
}  // namespace moekit::bench
