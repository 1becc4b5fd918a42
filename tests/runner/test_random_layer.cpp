// Random layers keep their values: fill_uniform against an independent copy of the generator
// (splitmix64 counters, the rounding of each dtype), since the tuner's reference cache trusts a file
// for (problem, tokens, seed) across builds. If this fails on purpose, bump kReferenceCacheVersion
// (src/tune/reference_cache.h). And weights on a device need quant=none.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "moekit/build_config.h"
#include "moekit/float_formats.h"
#include "moekit/random_layer.h"

namespace moekit {
namespace {

// The generator as written before it was shared with the device (src/runner/random_bits.h).
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
double uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  const uint64_t bits = mix(mix(seed ^ (stream * 0xD1B54A32D192ED03ull)) + i);
  return static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0;
}

TEST(RandomLayer, FillUniformKeepsItsValuesInEveryDtype) {
  constexpr int64_t n = 4099;
  constexpr double scale = 0.37;
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    auto x = Tensor::empty(t, {n});
    ASSERT_TRUE(x.ok());
    fill_uniform(*x, scale, 11, 5);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = scale * uniform(11, 5, static_cast<uint64_t>(i));
      const float f = static_cast<float>(v);
      uint32_t fbits;
      std::memcpy(&fbits, &f, 4);
      if (t == DType::kBF16) wrong += x->data_as<uint16_t>()[i] != static_cast<uint16_t>(fbits >> 16);  // truncated float
      if (t == DType::kF16) wrong += x->data_as<uint16_t>()[i] != encode_f16(v);                        // from the double
      if (t == DType::kF32) wrong += x->data_as<float>()[i] != f;
    }
    EXPECT_EQ(wrong, 0) << dtype_name(t);
  }
}

TEST(RandomLayer, BiasesAndWeightsUseTheirStreams) {
  const MoeProblem p{.num_experts = 3, .top_k = 2, .hidden = 16, .intermediate = 8};
  auto L = make_random_layer(p, {.num_tokens = 1, .seed = 9, .biases = true, .weights_only = true});
  ASSERT_TRUE(L.ok()) << L.status().to_string();
  EXPECT_EQ(L->weights.w13_bias.data_as<float>()[7], static_cast<float>(0.5 * uniform(9, 3, 7)));
  EXPECT_EQ(L->weights.w2_bias.data_as<float>()[5], static_cast<float>(0.5 * uniform(9, 4, 5)));
  const double w2_scale = 1.0 / std::sqrt(static_cast<double>(p.intermediate)) * std::sqrt(3.0);  // rms 1/sqrt(fan_in)
  const float w2 = static_cast<float>(w2_scale * uniform(9, 2, 13));
  uint32_t bits;
  std::memcpy(&bits, &w2, 4);
  EXPECT_EQ(L->weights.w2.data_as<uint16_t>()[13], static_cast<uint16_t>(bits >> 16));
  EXPECT_FALSE(L->hidden.data());  // weights only
}

TEST(RandomLayer, DeviceWeightsNeedQuantNoneAndACudaBuild) {
  MoeProblem fp8{.num_experts = 3, .top_k = 2, .hidden = 128, .intermediate = 128, .quant = QuantScheme::kFp8Block};
  auto q = make_random_layer(fp8, {.num_tokens = 1, .weights_device = Device::cuda()});
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(q.status().message().find("weights_device=cuda:0 needs quant=none (the fp8_block scheme's weights are made on the host only)"),
            std::string::npos)
      << q.status().to_string();
  // Inputs only: no weights to place, so nothing to refuse.
  EXPECT_TRUE(make_random_layer(fp8, {.num_tokens = 1, .inputs_only = true, .weights_device = Device::cuda()}).ok());
  if (MOEKIT_WITH_CUDA) GTEST_SKIP() << "CUDA build: device weights are tested under label gpu (test_random_fill_cuda)";
  const MoeProblem bf16{.num_experts = 3, .top_k = 2, .hidden = 16, .intermediate = 8};
  auto none = make_random_layer(bf16, {.num_tokens = 1, .weights_device = Device::cuda()});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("built without CUDA"), std::string::npos) << none.status().to_string();
}

}  // namespace
}  // namespace moekit
