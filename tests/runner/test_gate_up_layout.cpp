// interleave_gate_up (include/moekit/gate_up_layout.h): where each row goes, what it refuses, and that
// a layer with its W13 (and gemm1 bias) interleaved and gate_up_layout = kInterleaved gives the CPU
// reference's output bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "moekit/cpu_reference.h"
#include "moekit/gate_up_layout.h"
#include "moekit/random_layer.h"

namespace moekit {
namespace {

TEST(GateUpLayout, GateRowsGoEvenUpRowsOdd) {
  // [E=2, 2I=6, H=3], value = 100 e + 10 r + c.
  auto w = Tensor::empty(DType::kF32, {2, 6, 3});
  ASSERT_TRUE(w.ok());
  for (int e = 0; e < 2; ++e)
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 3; ++c) w->data_as<float>()[(e * 6 + r) * 3 + c] = static_cast<float>(100 * e + 10 * r + c);
  auto out = interleave_gate_up(*w);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ(std::vector<int64_t>(out->shape().begin(), out->shape().end()), (std::vector<int64_t>{2, 6, 3}));
  const int from[6] = {0, 3, 1, 4, 2, 5};  // row 2i <- gate i, row 2i + 1 <- up i (I = 3)
  for (int e = 0; e < 2; ++e)
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(out->data_as<float>()[(e * 6 + r) * 3 + c], static_cast<float>(100 * e + 10 * from[r] + c)) << e << " " << r << " " << c;
  // A bias [E, 2I]: one element a row.
  auto b = Tensor::empty(DType::kBF16, {1, 4});
  ASSERT_TRUE(b.ok());
  const uint16_t codes[4] = {1, 2, 3, 4};
  std::memcpy(b->data(), codes, sizeof(codes));
  auto bi = interleave_gate_up(*b);
  ASSERT_TRUE(bi.ok()) << bi.status().to_string();
  const uint16_t want[4] = {1, 3, 2, 4};
  EXPECT_EQ(std::memcmp(bi->data(), want, sizeof(want)), 0);
}

TEST(GateUpLayout, RefusesWhatHasNoGateUpRows) {
  auto odd = Tensor::empty(DType::kBF16, {2, 5, 8});
  ASSERT_TRUE(odd.ok());
  auto r = interleave_gate_up(*odd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("dimension 1 (2I) must be even, got 5"), std::string::npos) << r.status().to_string();
  auto flat = Tensor::empty(DType::kBF16, {6});
  ASSERT_TRUE(flat.ok());
  r = interleave_gate_up(*flat);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must be [E, 2I, ...]"), std::string::npos) << r.status().to_string();
  // fp4 codes two to a byte: a row of 3 codes does not start on a whole byte.
  auto packed = Tensor::empty(DType::kE2M1, {1, 4, 3});
  if (packed.ok()) {
    r = interleave_gate_up(*packed);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("whole bytes"), std::string::npos) << r.status().to_string();
  }
}

// The same layer both ways: W13 and its bias interleaved, and the problem told so.
TEST(GateUpLayout, InterleavedLayerGivesTheSameOutput) {
  for (Activation act : {Activation::kSwiGLU, Activation::kGeGLU}) {
    MoeProblem p{.num_experts = 8, .top_k = 2, .hidden = 40, .intermediate = 24};
    p.activation.kind = act;
    auto L = make_random_layer(p, {.num_tokens = 7, .seed = 3, .biases = true});
    ASSERT_TRUE(L.ok()) << L.status().to_string();
    ASSERT_TRUE(cpu::run_reference(L->problem, L->weights, L->inputs(), L->outputs()).ok());
    std::vector<char> want(static_cast<size_t>(L->out.storage_bytes()));
    std::memcpy(want.data(), L->out.data(), want.size());

    auto w13 = interleave_gate_up(L->weights.w13);
    auto b13 = interleave_gate_up(L->weights.w13_bias);
    ASSERT_TRUE(w13.ok() && b13.ok());
    MoeProblem q = L->problem;
    q.gate_up_layout = GateUpLayout::kInterleaved;
    MoeWeights w = L->weights;
    w.w13 = *w13;
    w.w13_bias = *b13;
    std::memset(L->out.data(), 0xFF, want.size());
    const Status st = cpu::run_reference(q, w, L->inputs(), L->outputs());
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_EQ(std::memcmp(L->out.data(), want.data(), want.size()), 0) << activation_name(act);
  }
}

}  // namespace
}  // namespace moekit
