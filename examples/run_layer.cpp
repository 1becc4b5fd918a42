// The README's example, compiled and run by the tests (ctest -R example): one MoE layer through
// MoeRunner. Random weights and inputs stand in for a model's tensors; with real ones, build the
// TensorViews over your own memory (or import them with moekit/dlpack.h).
#include <cstdio>
#include <memory>
#include <vector>

#include "moekit/random_layer.h"
#include "moekit/runner.h"

int main() {
  using namespace moekit;
  // A Qwen3-30B-A3B-shaped layer, smaller: 16 experts, top-8, H=256, I=128, bf16.
  const MoeProblem problem{.num_experts = 16, .top_k = 8, .hidden = 256, .intermediate = 128,
                           .routing = {.method = RoutingMethod::kSoftmaxTopK, .renormalize = true},
                           .activation = {.kind = Activation::kSwiGLU}};
  auto layer = make_random_layer(problem, {.num_tokens = 5, .seed = 42}).value();

  // 1. Create the runner: checks the problem and picks the device (the GPU when there is one).
  Result<MoeRunner> runner = MoeRunner::create(problem, {.backend = BackendChoice::kAuto});
  if (!runner.ok()) {
    std::fprintf(stderr, "%s\n", runner.status().to_string().c_str());
    return 1;
  }
  // 2. Prepare the weights once.
  Result<PreparedWeights> weights = runner->prepare_weights(layer.weights);
  if (!weights.ok()) {
    std::fprintf(stderr, "%s\n", weights.status().to_string().c_str());
    return 1;
  }
  // 3. Ask the workspace size for these inputs, then run (stream last; no allocation inside).
  const MoeInputs inputs = layer.inputs();
  const size_t bytes = runner->workspace_size(inputs).value();
  std::vector<std::byte> storage(bytes + 256);
  void* p = storage.data();
  size_t space = storage.size();
  std::span<std::byte> workspace(static_cast<std::byte*>(std::align(256, bytes, p, space)), bytes);
  const Status s = runner->run(*weights, inputs, layer.outputs(), workspace, Stream{});
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    return 1;
  }
  // What ran, and why: the same plan `moekit explain` prints.
  std::fputs(plan_to_text(runner->plan(5, WeightTraits::of(layer.weights))).c_str(), stdout);
  return 0;
}
