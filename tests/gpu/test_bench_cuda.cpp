// The GPU side of `moekit bench` that does not need the CUDA MoE backend: the ceilings, and the
// cuBLAS baseline against the CPU reference on the reference's own routing. Host code only.
#include <gtest/gtest.h>

#include <vector>

#include "bench/cuda/baseline.h"
#include "bench/layer_bench.h"
#include "bench/refcheck.h"
#include "gpu/gpu_test_util.h"
#include "moekit/cpu_reference.h"
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

TEST(BenchCuda, BaselineDeclinesQuantizedWeights) {
  MoeProblem p{.num_experts = 8, .top_k = 2, .hidden = 128, .intermediate = 64, .quant = QuantScheme::kFp8Block};
  auto base = CublasBaseline::create(p);
  ASSERT_FALSE(base.ok());
  EXPECT_NE(base.status().message().find("unquantized"), std::string::npos);
}

}  // namespace
}  // namespace moekit::bench
