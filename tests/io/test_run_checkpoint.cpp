// `moekit run --checkpoint` end to end: a synthetic checkpoint on disk (real tensor names), hidden
// states from a .npy file, the output written to a .npy file; the output must equal, bit for bit,
// the CPU reference run directly on the loaded layer with the checkpoint's router.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "io/checkpoint_fixtures.h"
#include "moekit/checkpoint.h"
#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"
#include "moekit/npy.h"

namespace moekit {
namespace {

using testing::CheckpointWriter;
using testing::Sizes;

// Runs the CLI; returns its exit code.
int moekit_cli(const std::string& args) {
  const std::string cmd = std::string(MOEKIT_CLI_PATH) + " " + args + " > /dev/null 2>&1";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// `extra`: more CLI options; the library side loads the layer as it is, so options that must not change
// the output (--gate-up) are checked bit for bit too.
void expect_cli_matches_reference(const CheckpointWriter& w, int layer_index, int64_t T, const std::string& extra = "") {
  auto layer = load_moe_layer(w.path(), layer_index);
  ASSERT_TRUE(layer.ok()) << layer.status().to_string();
  const MoeProblem& p = layer->problem;
  Tensor hidden = testing::make_tensor(DType::kF32, {T, p.hidden});
  testing::fill_values(hidden, [](int64_t i) { return std::sin(0.37 * static_cast<double>(i)); });
  const auto in_path = w / "hidden.npy";
  const auto out_path = w / "out.npy";
  ASSERT_TRUE(write_npy(in_path, hidden.view()).ok());

  ASSERT_EQ(moekit_cli(fmt::format("run --checkpoint {} --layer {} --input {} --output {} --backend cpu --refcheck{}", w.path().string(),
                                   layer_index, in_path.string(), out_path.string(), extra)),
            0);
  auto got = read_npy(out_path);
  ASSERT_TRUE(got.ok()) << got.status().to_string();

  // The same computation through the library: hidden in the activation dtype, the router's logits.
  Tensor h = testing::make_tensor(p.activation_dtype, {T, p.hidden});
  for (int64_t i = 0; i < h.numel(); ++i) store_element(h.data(), h.dtype(), i, load_element(hidden.data(), DType::kF32, i));
  Tensor logits = testing::make_tensor(DType::kF32, {T, p.num_experts});
  ASSERT_TRUE(compute_router_logits(*layer, h.view(), logits.view()).ok());
  Tensor want = testing::make_tensor(p.activation_dtype, {T, p.hidden});
  MoeInputs in;
  in.hidden = h.view();
  in.router_logits = logits.view();
  in.e_score_correction_bias = layer->e_score_correction_bias;
  MoeOutputs out;
  out.out = want.view();
  ASSERT_TRUE(cpu::run_reference(p, layer->weights, in, out).ok());

  ASSERT_EQ(got->numel(), want.numel());
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_EQ(load_element(got->data(), got->dtype(), i), load_element(want.data(), want.dtype(), i)) << "element " << i;
}

TEST(RunCheckpoint, DeepSeekV3Fp8BlockLayer) {
  const Sizes s{.E = 4, .K = 2, .H = 256, .I = 128};
  CheckpointWriter w;
  testing::add_dense_mlp(w, 0, s.H, 384);
  testing::add_mlp_experts(w, 1, s, /*fp8=*/true);
  w.add("model.layers.1.mlp.gate.e_score_correction_bias", DType::kF32, {s.E}, -0.1, 0.1);
  w.write_config(testing::deepseek_v3_config(s, 2, /*first_k_dense=*/1, /*n_group=*/2, /*topk_group=*/1));
  w.write();
  expect_cli_matches_reference(w, 1, 7);
}

// The library loads W13 interleaved (the default for unquantized layers); the CLI once the same way
// and once in the checkpoint's order: the same output, bit for bit.
TEST(RunCheckpoint, MixtralLayerInEitherGateUpLayout) {
  const Sizes s{.E = 4, .K = 2, .H = 64, .I = 32};
  CheckpointWriter w;
  testing::add_mixtral_layer(w, 0, s);
  w.write_config(testing::mixtral_config(s, 1));
  w.write();
  expect_cli_matches_reference(w, 0, 5);
  expect_cli_matches_reference(w, 0, 5, " --gate-up concatenated");
}

TEST(RunCheckpoint, GptOssMxfp4Layer) {
  const Sizes s{.E = 4, .K = 2, .H = 64, .I = 32};
  CheckpointWriter w;
  testing::add_gpt_oss_layer(w, 0, s, /*mxfp4=*/true);
  w.write_config(testing::gpt_oss_config(s, 1, /*mxfp4=*/true));
  w.write();
  expect_cli_matches_reference(w, 0, 3);
}

TEST(RunCheckpoint, ErrorsNameTheProblem) {
  const Sizes s{.E = 4, .K = 2, .H = 64, .I = 32};
  CheckpointWriter w;
  testing::add_gpt_oss_layer(w, 0, s, /*mxfp4=*/true);
  w.write_config(testing::gpt_oss_config(s, 1, /*mxfp4=*/true));
  w.write();
  EXPECT_EQ(moekit_cli(fmt::format("run --checkpoint {} --layer 5 --backend cpu", w.path().string())), 1);
  EXPECT_EQ(moekit_cli(fmt::format("run --checkpoint {} --backend cpu", w.path().string())), 1);
  Tensor wrong = testing::make_tensor(DType::kF32, {3, 65});
  ASSERT_TRUE(write_npy(w / "bad.npy", wrong.view()).ok());
  EXPECT_EQ(moekit_cli(fmt::format("run --checkpoint {} --layer 0 --input {} --backend cpu", w.path().string(), (w / "bad.npy").string())), 1);
}

}  // namespace
}  // namespace moekit
