// Random weights generated on the GPU (src/cuda/random_fill.h, RandomLayerOptions::weights_device) are
// the host's bytes: make_random_layer on the device against the same call on the host, in bf16, f16
// and f32, with biases, w13 and w2, at a size that is not a multiple of a block; one tensor past the
// kernel's grid cap, so that the grid-stride loop runs; and what it refuses.
#include <cstring>
#include <vector>

#include "cuda/random_fill.h"
#include "gpu_test_util.h"
#include "moekit/random_layer.h"

namespace moekit {
namespace {

// How many bytes of the device tensor `dev` differ from the host tensor `host`; the first one is
// reported.
int64_t differing_bytes(const TensorView& host, const TensorView& dev, const char* what) {
  EXPECT_TRUE(dev.device().is_cuda()) << what << " is " << dev.describe();
  EXPECT_EQ(host.dtype(), dev.dtype()) << what;
  EXPECT_EQ(host.storage_bytes(), dev.storage_bytes()) << what;
  auto back = Tensor::empty(dev.dtype(), dev.shape());
  EXPECT_TRUE(back.ok());
  EXPECT_TRUE(copy_tensor(*back, dev).ok()) << what;
  const auto* a = static_cast<const unsigned char*>(host.data());
  const auto* b = back->data_as<const unsigned char>();
  int64_t n = 0;
  for (int64_t i = 0; i < host.storage_bytes(); ++i) {
    if (a[i] == b[i]) continue;
    if (n++ == 0) ADD_FAILURE() << what << ": first difference at byte " << i << " (host " << int{a[i]} << ", device " << int{b[i]} << ")";
  }
  return n;
}

TEST(RandomFillCuda, DeviceWeightsAreTheHostBytes) {
  MOEKIT_REQUIRE_GPU();
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    // E=5 experts, 3 of them local; H and I odd multiples of 8: w13 is [3, 2*40, 56] (13440
    // elements, not a multiple of the 256-thread block).
    MoeProblem p{.num_experts = 5, .top_k = 2, .hidden = 56, .intermediate = 40, .local_expert_begin = 1, .num_local_experts = 3};
    p.activation_dtype = t;
    const RandomLayerOptions host_opts{.num_tokens = 1, .seed = 21, .biases = true, .weights_only = true};
    RandomLayerOptions dev_opts = host_opts;
    dev_opts.weights_device = Device::cuda(0);
    auto host = make_random_layer(p, host_opts);
    auto dev = make_random_layer(p, dev_opts);
    ASSERT_TRUE(host.ok()) << host.status().to_string();
    ASSERT_TRUE(dev.ok()) << dev.status().to_string();
    const std::string name(dtype_name(t));
    EXPECT_EQ(differing_bytes(host->weights.w13, dev->weights.w13, (name + " w13").c_str()), 0);
    EXPECT_EQ(differing_bytes(host->weights.w2, dev->weights.w2, (name + " w2").c_str()), 0);
    EXPECT_EQ(differing_bytes(host->weights.w13_bias, dev->weights.w13_bias, (name + " w13_bias").c_str()), 0);
    EXPECT_EQ(differing_bytes(host->weights.w2_bias, dev->weights.w2_bias, (name + " w2_bias").c_str()), 0);
    EXPECT_EQ(dev->weights.w13_bias.dtype(), DType::kF32);
  }
}

TEST(RandomFillCuda, AGridStrideLoopPastTheGridCap) {
  MOEKIT_REQUIRE_GPU();
  // The kernel caps its grid at 2^20 blocks of 256 threads: 2^28 + 5 elements make threads take a
  // second element (0.5 GiB in bf16 on each side).
  const int64_t n = (int64_t{1} << 28) + 5;
  auto host = Tensor::empty(DType::kBF16, {n});
  auto dev = Tensor::empty(DType::kBF16, {n}, Device::cuda(0));
  ASSERT_TRUE(host.ok() && dev.ok());
  fill_uniform(*host, 0.02, 7, 1);
  ASSERT_TRUE(cuda::fill_uniform_device(*dev, 0.02, 7, 1).ok());
  EXPECT_EQ(differing_bytes(*host, *dev, "bf16[2^28 + 5]"), 0);
}

TEST(RandomFillCuda, RefusesWhatTheHostPathKeeps) {
  MOEKIT_REQUIRE_GPU();
  auto i8 = Tensor::empty(DType::kI8, {16}, Device::cuda(0));
  ASSERT_TRUE(i8.ok());
  const Status s = cuda::fill_uniform_device(*i8, 1.0, 1, 1);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("dtype i8"), std::string::npos) << s.to_string();
  auto host = Tensor::empty(DType::kBF16, {16});
  EXPECT_NE(cuda::fill_uniform_device(*host, 1.0, 1, 1).message().find("is not in CUDA memory"), std::string::npos);
  MoeProblem fp8{.num_experts = 3, .top_k = 2, .hidden = 128, .intermediate = 128, .quant = QuantScheme::kFp8Block};
  auto q = make_random_layer(fp8, {.num_tokens = 1, .weights_device = Device::cuda(0)});
  EXPECT_EQ(q.status().code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace moekit
