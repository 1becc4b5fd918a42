// MoeRunner on the CPU backend: every plan (each fusion forced on and off, the whole-layer path on
// and off) must give output bytes identical to cpu::run_reference, which is itself checked against an
// independent naive layer in tests/cpu. Outputs are poisoned before each run. Also: workspace sizing,
// and the errors of create / prepare_weights / run.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "moekit/cpu_reference.h"
#include "moekit/random_layer.h"
#include "moekit/runner.h"

namespace moekit {
namespace {

struct Case {
  std::string name;
  MoeProblem problem;
  int64_t tokens;
  bool biases = false;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

MoeProblem base(int E, int K, int H, int I) {
  return {.num_experts = E, .top_k = K, .hidden = H, .intermediate = I,
          .routing = {.method = RoutingMethod::kSoftmaxTopK, .renormalize = true}};
}

std::vector<Case> cases() {
  std::vector<Case> c;
  for (int64_t T : {0, 1, 3, 77}) {
    MoeProblem p = base(8, 3, 72, 40);
    c.push_back({"standard_bf16_T" + std::to_string(T), p, T, true});
  }
  {
    MoeProblem p = base(16, 4, 160, 64);
    p.routing = {.method = RoutingMethod::kDeepSeekV3, .renormalize = true, .n_group = 4, .topk_group = 2, .routed_scaling_factor = 2.5f};
    p.quant = QuantScheme::kFp8Block;
    c.push_back({"deepseek_fp8_block_T33", p, 33});
    c.push_back({"deepseek_fp8_block_T1", p, 1});
  }
  {
    MoeProblem p = base(8, 2, 96, 64);
    p.routing = {.method = RoutingMethod::kTopKSoftmax};
    p.activation = {.kind = Activation::kSwiGLUClamped, .alpha = 1.702f, .limit = 7.0f};
    p.gate_up_layout = GateUpLayout::kInterleaved;
    p.quant = QuantScheme::kMxfp4;
    c.push_back({"gptoss_mxfp4_T3", p, 3, true});
    c.push_back({"gptoss_mxfp4_T77", p, 77, true});
  }
  {
    MoeProblem p = base(8, 3, 64, 48);
    p.input_format = InputFormat::kPreRouted;
    p.no_combine = true;
    p.local_expert_begin = 2;
    p.num_local_experts = 4;
    p.activation_dtype = DType::kF16;
    c.push_back({"prerouted_no_combine_ep_T5", p, 5});
  }
  {
    MoeProblem p = base(4, 1, 64, 32);
    p.input_format = InputFormat::kMasked;
    p.quant = QuantScheme::kInt8PerToken;
    p.activation.kind = Activation::kReLU2;
    c.push_back({"masked_int8_relu2", p, 6});
  }
  {
    MoeProblem p = base(4, 2, 96, 64);
    p.input_format = InputFormat::kIndexed;
    p.quant = QuantScheme::kW4A16;
    p.group_size = 32;
    p.activation.kind = Activation::kGeGLU;
    c.push_back({"indexed_w4a16_T9", p, 9, true});
  }
  {
    MoeProblem p = base(8, 2, 64, 32);
    p.quant = QuantScheme::kFp8PerTensor;  // dynamic scales: the activation fusion must stay off
    p.activation_dtype = DType::kF32;
    c.push_back({"fp8_per_tensor_dynamic_T3", p, 3});
  }
  {
    MoeProblem p = base(16, 1, 64, 32);
    p.routing = {.method = RoutingMethod::kLlama4};
    p.apply_router_weight_on_input = true;
    p.quant = QuantScheme::kNvfp4;
    c.push_back({"llama4_nvfp4_weight_on_input_T4", p, 4});
  }
  return c;
}

void poison(const Tensor& t) { std::memset(t.data(), 0xFF, static_cast<size_t>(t.storage_bytes())); }

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data());
  return {p, p + t.storage_bytes()};
}

// A workspace of exactly the size the runner asks for, 256-byte aligned.
struct Workspace {
  std::vector<std::byte> storage;
  std::span<std::byte> span;
  explicit Workspace(size_t bytes) : storage(bytes + 256) {
    auto addr = reinterpret_cast<uintptr_t>(storage.data());
    span = {storage.data() + (256 - addr % 256) % 256, bytes};
  }
};

class RunnerMatchesReference : public ::testing::TestWithParam<Case> {};

TEST_P(RunnerMatchesReference, EveryFusionChoiceGivesTheReferenceBytes) {
  const Case& c = GetParam();
  auto layer = make_random_layer(c.problem, {.num_tokens = c.tokens, .seed = 7, .biases = c.biases});
  ASSERT_TRUE(layer.ok()) << layer.status().to_string();
  poison(layer->out);
  ASSERT_TRUE(cpu::run_reference(c.problem, layer->weights, layer->inputs(), layer->outputs()).ok());
  const std::vector<uint8_t> want = bytes_of(layer->out);

  int plans_seen = 0;
  for (int mask = 0; mask < 16; ++mask) {
    auto sw = [&](int bit) { return (mask >> bit) & 1 ? Switch::kOn : Switch::kOff; };
    // The CPU GEMM row-block knobs change the speed, never a bit: every plan takes other values.
    const char* blocks[] = {"4", "8", "16"};
    RunnerOptions opts{.backend = BackendChoice::kCpu,
                       .fusions = {.routing_prologue = sw(0), .gemm1_activation = sw(1), .gemm2_finalize = sw(2), .whole_layer = sw(3)},
                       .choice = {{{"gemm1.row_block", blocks[mask % 3]}, {"gemm2.row_block", blocks[(mask / 3) % 3]}}}};
    auto runner = MoeRunner::create(c.problem, opts);
    ASSERT_TRUE(runner.ok()) << runner.status().to_string();
    auto prepared = runner->prepare_weights(layer->weights);
    ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
    const MoeInputs in = layer->inputs();
    auto bytes = runner->workspace_size(in);
    ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
    Workspace ws(*bytes);
    poison(layer->out);
    const Status s = runner->run(*prepared, in, layer->outputs(), ws.span);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const MoePlan plan = runner->plan(in.hidden.ndim() == 3 ? in.hidden.size(0) * in.hidden.size(1) : in.hidden.size(0),
                                      WeightTraits::of(layer->weights));
    std::string steps;
    for (const auto& st : plan.steps) steps += st.kernel + " ";
    EXPECT_EQ(bytes_of(layer->out), want) << c.name << " with fusion mask " << mask << ": steps " << steps;
    ++plans_seen;
  }
  EXPECT_EQ(plans_seen, 16);
}

INSTANTIATE_TEST_SUITE_P(Cpu, RunnerMatchesReference, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// The switches really change what runs (otherwise the comparison above proves nothing).
TEST(RunnerPlan, SwitchesChangeTheSteps) {
  const MoeProblem p = base(8, 2, 64, 32);
  auto steps_of = [&](FusionControls f, int64_t T) {
    auto r = MoeRunner::create(p, {.backend = BackendChoice::kCpu, .fusions = f});
    std::vector<std::string> names;
    for (const auto& s : r->plan(T, {}).steps) names.push_back(s.kernel);
    return names;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(steps_of({.whole_layer = Switch::kOn}, 1), V{"cpu.token_major_layer"});
  EXPECT_EQ(steps_of({.routing_prologue = Switch::kOff, .gemm1_activation = Switch::kOff, .gemm2_finalize = Switch::kOff,
                      .whole_layer = Switch::kOff},
                     1),
            (V{"cpu.route", "cpu.build_maps", "cpu.expand", "cpu.gemm1", "cpu.activation", "cpu.gemm2", "cpu.finalize"}));
  EXPECT_EQ(steps_of({.routing_prologue = Switch::kOn, .gemm1_activation = Switch::kOn, .gemm2_finalize = Switch::kOn,
                      .whole_layer = Switch::kOff},
                     1),
            (V{"cpu.route_build_maps", "cpu.expand", "cpu.gemm1_activation", "cpu.gemm2_finalize"}));
  // T=77 > kTokenMajorMaxTokens: the whole-layer path declines even when asked for.
  EXPECT_EQ(steps_of({.whole_layer = Switch::kOn}, 77).front(), "cpu.route_build_maps");
}

// ---- workspace ----------------------------------------------------------------------------------
TEST(RunnerWorkspace, SizeIsTheSumOfAlignedSegments) {
  MoeProblem p = base(8, 2, 64, 32);  // gated: gemm1_rows = 64
  auto r = MoeRunner::create(p, {.backend = BackendChoice::kCpu});
  ASSERT_TRUE(r.ok());
  auto layer = make_random_layer(p, {.num_tokens = 5});
  auto l = r->workspace_layout(layer->inputs());
  ASSERT_TRUE(l.ok());
  const int64_t R = 10;  // T*K
  auto up = [](int64_t b) { return (b + 255) / 256 * 256; };
  const int64_t want = up(R * 4) + up(R * 4) + up(9 * 8) + up(R * 8) + up(R * 4) + up(6 * 8) + up(R * 8) + up(R * 64 * 8) +
                       up(R * 64 * 8) + up(R * 32 * 8) + up(R * 64 * 8);
  EXPECT_EQ(static_cast<int64_t>(l->total_bytes), want);
  EXPECT_EQ(l->max_rows, R);
  EXPECT_EQ(*r->workspace_size(layer->inputs()), l->total_bytes);
}

TEST(RunnerWorkspace, TooSmallOrMisalignedIsAnErrorAndWritesNothing) {
  MoeProblem p = base(8, 2, 64, 32);
  auto r = MoeRunner::create(p, {.backend = BackendChoice::kCpu});
  auto layer = make_random_layer(p, {.num_tokens = 3});
  auto prepared = r->prepare_weights(layer->weights);
  const size_t need = *r->workspace_size(layer->inputs());
  Workspace small(need - 1);
  poison(layer->out);
  const auto before = bytes_of(layer->out);
  Status s = r->run(*prepared, layer->inputs(), layer->outputs(), small.span);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("workspace: " + std::to_string(need - 1) + " bytes given, " + std::to_string(need) + " needed"), std::string::npos)
      << s.message();
  Workspace big(need + 8);
  s = r->run(*prepared, layer->inputs(), layer->outputs(), big.span.subspan(8, need));
  EXPECT_NE(s.message().find("not 256-byte aligned"), std::string::npos) << s.message();
  EXPECT_EQ(bytes_of(layer->out), before);
}

// ---- errors -------------------------------------------------------------------------------------
TEST(RunnerErrors, CreateRejectsABadProblem) {
  MoeProblem p = base(8, 9, 64, 32);
  auto r = MoeRunner::create(p, {.backend = BackendChoice::kCpu});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("top_k=9 exceeds num_experts=8"), std::string::npos) << r.status().message();
}

TEST(RunnerErrors, PrepareWeightsNamesTheField) {
  MoeProblem p = base(8, 2, 64, 32);
  auto r = MoeRunner::create(p, {.backend = BackendChoice::kCpu});
  MoeProblem other = p;
  other.intermediate = 48;
  auto layer = make_random_layer(other, {.num_tokens = 1});
  auto prepared = r->prepare_weights(layer->weights);
  ASSERT_FALSE(prepared.ok());
  EXPECT_NE(prepared.status().message().find("w13: shape [8, 96, 64]"), std::string::npos) << prepared.status().message();
}

TEST(RunnerErrors, WeightsOfAnotherProblemAreRejected) {
  MoeProblem p = base(8, 2, 64, 32);
  MoeProblem q = p;
  q.quant = QuantScheme::kFp8PerToken;
  auto rp = MoeRunner::create(p, {.backend = BackendChoice::kCpu});
  auto rq = MoeRunner::create(q, {.backend = BackendChoice::kCpu});
  auto lq = make_random_layer(q, {.num_tokens = 2});
  auto wq = rq->prepare_weights(lq->weights);
  Workspace ws(*rp->workspace_size(lq->inputs()));
  const Status s = rp->run(*wq, lq->inputs(), lq->outputs(), ws.span);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("prepared for a problem with different"), std::string::npos) << s.message();
}

TEST(RunnerErrors, BadInputsAreReportedBeforeAnythingRuns) {
  MoeProblem p = base(8, 2, 64, 32);
  auto r = MoeRunner::create(p, {.backend = BackendChoice::kCpu});
  auto layer = make_random_layer(p, {.num_tokens = 3});
  auto prepared = r->prepare_weights(layer->weights);
  Workspace ws(*r->workspace_size(layer->inputs()));
  MoeInputs in = layer->inputs();
  auto wrong = Tensor::empty(DType::kF32, {3, 7});
  in.router_logits = wrong->view();
  poison(layer->out);
  const auto before = bytes_of(layer->out);
  const Status s = r->run(*prepared, in, layer->outputs(), ws.span);
  EXPECT_NE(s.message().find("router_logits: shape [3, 7] does not match [3, 8]"), std::string::npos) << s.message();
  EXPECT_EQ(bytes_of(layer->out), before);
}

TEST(RunnerErrors, CudaWithoutAGpuOrBackendSaysWhich) {
  auto r = MoeRunner::create(base(8, 2, 64, 32), {.backend = BackendChoice::kCuda});
  if (default_registry().has_backend(BackendKind::kCuda) && r.ok()) GTEST_SKIP() << "a GPU and the CUDA backend are present";
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("backend=cuda: "), std::string::npos) << r.status().message();
}

TEST(RunnerErrors, AutoFallsBackToTheCpuAndSaysWhy) {
  auto r = MoeRunner::create(base(8, 2, 64, 32), {.backend = BackendChoice::kAuto});
  ASSERT_TRUE(r.ok());
  if (r->device().backend == BackendKind::kCpu) {
    EXPECT_NE(r->device_decision().reason.find("so the CPU backend runs"), std::string::npos) << r->device_decision().reason;
  }
}

}  // namespace
}  // namespace moekit
