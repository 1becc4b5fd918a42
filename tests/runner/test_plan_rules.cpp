// Each rule of the fusion matrix (src/runner/plan_rules.cpp), on its own: the conditions that turn
// it on and off and the words a user reads in `moekit explain`. Also the registry and how the plan
// builder combines rules, caller switches and what backends implement.
#include <gtest/gtest.h>

#include <string>

#include "moekit/plan.h"
#include "moekit/presets.h"
#include "runner/plan_rules.h"

namespace moekit {
namespace {

using rules::RuleInput;

MoeProblem problem(int E = 8, int K = 2) {
  return {.num_experts = E, .top_k = K, .hidden = 256, .intermediate = 256,
          .routing = {.method = RoutingMethod::kSoftmaxTopK, .renormalize = true}};
}
DeviceTarget sm(const char* arch) { return *DeviceTarget::named(arch); }
const DeviceTarget kCpu = DeviceTarget::host_cpu();

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// ---- backend_supports_scheme ----------------------------------------------------------------------
TEST(RuleBackendSupportsScheme, CpuRunsEverything) {
  for (int q = 0; q < 11; ++q) {
    MoeProblem p = problem();
    p.quant = QuantScheme(q);
    EXPECT_TRUE(rules::backend_supports_scheme({p, 1, kCpu, {}}).on) << quant_scheme_name(p.quant);
  }
}

TEST(RuleBackendSupportsScheme, Fp8NeedsSm89AndFp4ActivationsNeedSm100) {
  MoeProblem p = problem();
  p.quant = QuantScheme::kFp8Block;
  const auto a100 = sm("sm80"), h100 = sm("sm90"), b200 = sm("sm100");
  Decision d = rules::backend_supports_scheme({p, 1, a100, {}});
  EXPECT_FALSE(d.on);
  EXPECT_HAS(d.reason, "quant=fp8_block needs fp8 tensor cores (sm_89 or newer)");
  p.quant = QuantScheme::kNvfp4;
  d = rules::backend_supports_scheme({p, 1, h100, {}});
  EXPECT_FALSE(d.on);
  EXPECT_HAS(d.reason, "sm_100 or newer");
}

TEST(RuleBackendSupportsScheme, TheCudaBackendRuns16BitLayersWithRowsOf16Bytes) {
  MoeProblem p = problem();
  const auto a100 = sm("sm80"), h100 = sm("sm90");
  for (DType t : {DType::kBF16, DType::kF16}) {
    p.activation_dtype = t;
    EXPECT_TRUE(rules::backend_supports_scheme({p, 1, a100, {}}).on);
    EXPECT_TRUE(rules::backend_supports_scheme({p, 1, h100, {}}).on);
  }
  p.activation_dtype = DType::kF32;
  EXPECT_HAS(rules::backend_supports_scheme({p, 1, h100, {}}).reason, "activation dtype f32");
  p.activation_dtype = DType::kBF16;
  for (QuantScheme q : {QuantScheme::kFp8Block, QuantScheme::kMxfp4, QuantScheme::kW4A16}) {
    p.quant = q;
    const Decision d = rules::backend_supports_scheme({p, 1, h100, {}});
    EXPECT_FALSE(d.on);
    EXPECT_HAS(d.reason, "16-bit layers only");
  }
  p.quant = QuantScheme::kNone;
  p.hidden = 2884;
  EXPECT_HAS(rules::backend_supports_scheme({p, 1, h100, {}}).reason, "hidden=2884 is not a multiple of 8");
  p.hidden = 2880;
  p.intermediate = 1410;
  EXPECT_HAS(rules::backend_supports_scheme({p, 1, h100, {}}).reason, "intermediate=1410 is not a multiple of 8");
}

// ---- stage_runs ------------------------------------------------------------------------------------
TEST(RuleStageRuns, OnlyTheStandardFormatRoutes) {
  for (auto f : {InputFormat::kStandard, InputFormat::kPreRouted, InputFormat::kMasked, InputFormat::kIndexed}) {
    MoeProblem p = problem();
    p.input_format = f;
    EXPECT_EQ(rules::stage_runs({p, 4, kCpu, {}}, Stage::kRoute).on, f == InputFormat::kStandard) << input_format_name(f);
    for (int s = 1; s < kNumStages; ++s) EXPECT_TRUE(rules::stage_runs({p, 4, kCpu, {}}, Stage(s)).on);
  }
}

// ---- routing_prologue_fusion ------------------------------------------------------------------------
TEST(RuleRoutingPrologue, NeedsRoutingAndOnCudaFitsOneCta) {
  MoeProblem p = problem(128, 8);
  EXPECT_TRUE(rules::routing_prologue_fusion({p, 100000, kCpu, {}}).on);
  const auto h = sm("sm90");
  EXPECT_TRUE(rules::routing_prologue_fusion({p, 32, h, {}}).on);  // a warp per token in one CTA
  const Decision cost = rules::routing_prologue_fusion({p, 512, h, {}});  // 4096 rows: fits, but slower
  EXPECT_FALSE(cost.on);
  EXPECT_TRUE(cost.forceable);
  EXPECT_HAS(cost.reason, "T=512 > 32");
  const Decision d = rules::routing_prologue_fusion({p, 513, h, {}});
  EXPECT_FALSE(d.on);
  EXPECT_FALSE(d.forceable);
  EXPECT_HAS(d.reason, "T*K=4104 exceeds 4096");
  p.input_format = InputFormat::kPreRouted;
  EXPECT_HAS(rules::routing_prologue_fusion({p, 1, kCpu, {}}).reason, "format=pre_routed has no routing stage");
}

// ---- gemm1_activation_fusion -------------------------------------------------------------------------
TEST(RuleGemm1Activation, DynamicPerTensorScaleNeedsAllRowsFirst) {
  MoeProblem p = problem();
  p.quant = QuantScheme::kFp8PerTensor;
  Decision d = rules::gemm1_activation_fusion({p, 4, kCpu, {}});
  EXPECT_FALSE(d.on);
  EXPECT_FALSE(d.forceable);
  EXPECT_HAS(d.reason, "dynamic per-tensor scale");
  WeightTraits w;
  w.w2_input_scale = true;  // static: quantizable row by row
  EXPECT_TRUE(rules::gemm1_activation_fusion({p, 4, kCpu, w}).on);
}

TEST(RuleGemm1Activation, PerTokenScalesDoNotFitACudaTile) {
  MoeProblem p = problem();
  p.quant = QuantScheme::kFp8PerToken;
  const auto h = sm("sm90");
  EXPECT_TRUE(rules::gemm1_activation_fusion({p, 4, kCpu, {}}).on);
  EXPECT_HAS(rules::gemm1_activation_fusion({p, 4, h, {}}).reason, "per-token scale spans all I=256 columns");
  p.intermediate = 128;
  EXPECT_TRUE(rules::gemm1_activation_fusion({p, 4, h, {}}).on);
  p.quant = QuantScheme::kFp8Block;  // 1x128 blocks match a tile
  p.intermediate = 2048;
  EXPECT_TRUE(rules::gemm1_activation_fusion({p, 4, h, {}}).on);
}

// ---- gemm2_finalize_fusion ---------------------------------------------------------------------------
// Enough tokens that the float32 rows of gemm2 outweigh two launches (the cost rule below).
constexpr int64_t kMany = 65536;

TEST(RuleGemm2Finalize, CudaDeterministicAllowsAtMostTwoAddends) {
  const auto h = sm("sm90");
  MoeProblem p = problem(8, 2);
  p.deterministic = true;
  EXPECT_TRUE(rules::gemm2_finalize_fusion({p, kMany, h, {}}).on);
  p.top_k = 3;
  const Decision d = rules::gemm2_finalize_fusion({p, kMany, h, {}});
  EXPECT_FALSE(d.on);
  EXPECT_HAS(d.reason, "deterministic with top_k=3");
  p.deterministic = false;
  EXPECT_TRUE(rules::gemm2_finalize_fusion({p, kMany, h, {}}).on);
  p.deterministic = true;
  p.no_combine = true;  // one destination per row: no addition at all
  EXPECT_TRUE(rules::gemm2_finalize_fusion({p, kMany, h, {}}).on);
  p.no_combine = false;
  p.top_k = 2;
  p.input_format = InputFormat::kIndexed;  // any number of rows per token
  EXPECT_HAS(rules::gemm2_finalize_fusion({p, kMany, h, {}}).reason, "Indexed token may receive any number of rows");
  p.input_format = InputFormat::kMasked;
  EXPECT_TRUE(rules::gemm2_finalize_fusion({p, kMany, h, {}}).on);
}

TEST(RuleGemm2Finalize, CudaFewRowsTakeTheUnfusedFinalizeForCost) {
  const auto h = sm("sm90");
  MoeProblem p = problem(8, 2);
  p.hidden = 4096;
  // 1 token: 2 rows x 4096 x 8 bytes = 65 KB of float32 rows against two launches.
  const Decision few = rules::gemm2_finalize_fusion({p, 1, h, {}});
  EXPECT_FALSE(few.on);
  EXPECT_TRUE(few.forceable);
  EXPECT_HAS(few.reason, "T*K=2 rows x H=4096");
  // 16e6 / (4096 * 8) = 488 rows: T=244 is the last unfused token count at K=2.
  EXPECT_FALSE(rules::gemm2_finalize_fusion({p, 244, h, {}}).on);
  EXPECT_TRUE(rules::gemm2_finalize_fusion({p, 245, h, {}}).on);
  // One destination per row needs no combine: fused whatever the size.
  p.no_combine = true;
  EXPECT_TRUE(rules::gemm2_finalize_fusion({p, 1, h, {}}).on);
}

TEST(RuleGemm2Finalize, CpuTokenMajorOnlyWhenExpertsSeeAboutOneRow) {
  MoeProblem p = problem(8, 2);
  EXPECT_TRUE(rules::gemm2_finalize_fusion({p, 4, kCpu, {}}).on);  // 8 rows, 8 experts
  const Decision more = rules::gemm2_finalize_fusion({p, 5, kCpu, {}});
  EXPECT_FALSE(more.on);
  EXPECT_TRUE(more.forceable);
  EXPECT_HAS(more.reason, "T*K=10 rows over E_local=8 experts");
  p.quant = QuantScheme::kFp8Block;
  const Decision quant = rules::gemm2_finalize_fusion({p, 1, kCpu, {}});
  EXPECT_FALSE(quant.on);
  EXPECT_TRUE(quant.forceable);
  EXPECT_HAS(quant.reason, "dequantize w2 once per row");
  p.no_combine = true;
  EXPECT_TRUE(rules::gemm2_finalize_fusion({p, 100, kCpu, {}}).on);
}

// ---- placements --------------------------------------------------------------------------------------
TEST(RulePlacements, WhereEachOptionIsApplied) {
  MoeProblem p = problem(8, 1);
  EXPECT_EQ(rules::router_weight_placement({p, 1, kCpu, {}})->stage, Stage::kFinalize);
  p.apply_router_weight_on_input = true;
  EXPECT_EQ(rules::router_weight_placement({p, 1, kCpu, {}})->stage, Stage::kExpand);
  p.input_format = InputFormat::kMasked;
  EXPECT_HAS(rules::router_weight_placement({p, 1, kCpu, {}})->reason, "not applied");

  MoeProblem q = problem();
  EXPECT_FALSE(rules::routed_scaling_placement({q, 1, kCpu, {}}).has_value());
  q.routing.routed_scaling_factor = 2.5f;
  EXPECT_HAS(rules::routed_scaling_placement({q, 1, kCpu, {}})->reason, "2.5 multiplies every row in finalize");

  EXPECT_FALSE(rules::gemm1_input_quant_placement({q, 1, kCpu, {}}).has_value());
  q.quant = QuantScheme::kFp8PerTensor;
  EXPECT_HAS(rules::gemm1_input_quant_placement({q, 1, kCpu, {}})->reason, "amax pass");
  WeightTraits w{.w13_input_scale = true, .w2_input_scale = true, .w13_pre_quant_scale = true, .w2_pre_quant_scale = true};
  EXPECT_HAS(rules::gemm1_input_quant_placement({q, 1, kCpu, w})->reason, "static per-tensor");
  EXPECT_EQ(rules::gemm2_input_quant_placement({q, 1, kCpu, w}, true)->stage, Stage::kGemm1);
  EXPECT_EQ(rules::gemm2_input_quant_placement({q, 1, kCpu, w}, false)->stage, Stage::kActivation);
  EXPECT_EQ(rules::gemm1_awq_placement({q, 1, kCpu, w})->stage, Stage::kExpand);
  EXPECT_EQ(rules::gemm2_awq_placement({q, 1, kCpu, w}, false)->stage, Stage::kActivation);
  EXPECT_FALSE(rules::gemm1_awq_placement({q, 1, kCpu, {}}).has_value());
}

TEST(RuleActivationQuantization, EverySchemeIsClassified) {
  MoeProblem p = problem();
  using rules::ActQuant;
  const std::pair<QuantScheme, ActQuant> want[] = {
      {QuantScheme::kNone, ActQuant::kNone},           {QuantScheme::kFp8PerTensor, ActQuant::kDynamicPerTensor},
      {QuantScheme::kFp8PerToken, ActQuant::kDynamicPerRow}, {QuantScheme::kFp8Block, ActQuant::kDynamicPerRow},
      {QuantScheme::kInt8PerToken, ActQuant::kDynamicPerRow}, {QuantScheme::kW4A16, ActQuant::kNone},
      {QuantScheme::kW8A16, ActQuant::kNone},          {QuantScheme::kMxfp4, ActQuant::kNone},
      {QuantScheme::kMxfp4Mxfp8, ActQuant::kDynamicPerRow}, {QuantScheme::kNvfp4, ActQuant::kDynamicPerRow},
      {QuantScheme::kW4A8, ActQuant::kStaticPerTensor}};
  for (auto [q, a] : want) {
    p.quant = q;
    EXPECT_EQ(rules::activation_quantization(p, {}, false), a) << quant_scheme_name(q);
  }
}

// ---- the plan builder ---------------------------------------------------------------------------------
TEST(PlanBuilder, SwitchesOverrideOnlyWhatMayBeOverridden) {
  MoeProblem p = problem(8, 2);
  p.quant = QuantScheme::kFp8PerTensor;  // activation fusion: off, and not forceable
  PlanOptions o;
  o.fusions.gemm1_activation = Switch::kOn;
  o.fusions.gemm2_finalize = Switch::kOn;  // off for cost on the CPU (quantized w2): forceable
  const MoePlan plan = make_plan(p, 64, kCpu, o);
  EXPECT_FALSE(plan.fusion(Fusion::kGemm1Activation).decision.on);
  EXPECT_HAS(plan.fusion(Fusion::kGemm1Activation).decision.reason, "request to force it on was refused");
  EXPECT_TRUE(plan.fusion(Fusion::kGemm2Finalize).decision.on);
  EXPECT_EQ(plan.fusion(Fusion::kGemm2Finalize).decision.rule, "FusionControls");
  EXPECT_EQ(plan.steps.back().kernel, "cpu.gemm2_finalize");
  o.fusions.routing_prologue = Switch::kOff;
  EXPECT_EQ(make_plan(p, 64, kCpu, o).steps.front().kernel, "cpu.route");
}

TEST(PlanBuilder, ABackendWithoutImplementationsIsNotRunnableAndSaysSo) {
  Registry empty;
  const MoePlan plan = make_plan(problem(), kMany, sm("sm90"), {}, empty);
  EXPECT_FALSE(plan.runnable);
  EXPECT_TRUE(plan.steps.empty());
  EXPECT_HAS(plan.backend.reason, "this build has no cuda backend");
  // The policy is still shown.
  EXPECT_TRUE(plan.fusion(Fusion::kGemm2Finalize).decision.on);
}

// ---- the registry -------------------------------------------------------------------------------------
Status dummy(const StageContext&) { return Status::Ok(); }
std::optional<std::string> never(const PlanQuery&) { return std::nullopt; }
std::optional<std::string> small_only(const PlanQuery& q) {
  if (q.num_tokens > 2) return std::string("too many tokens");
  return std::nullopt;
}

TEST(Registry, ResolvesByFormatAndBackendAndRejectsBadRegistrations) {
  Registry r;
  using F = InputFormat;
  ASSERT_TRUE(r.add_stage({"x.gemm1", BackendKind::kCuda, Stage::kGemm1, Stage::kGemm1, {F::kStandard, F::kMasked}, dummy}).ok());
  EXPECT_NE(r.find_stage(F::kMasked, BackendKind::kCuda, Stage::kGemm1, Stage::kGemm1), nullptr);
  EXPECT_EQ(r.find_stage(F::kIndexed, BackendKind::kCuda, Stage::kGemm1, Stage::kGemm1), nullptr);
  EXPECT_EQ(r.find_stage(F::kMasked, BackendKind::kCpu, Stage::kGemm1, Stage::kGemm1), nullptr);
  EXPECT_EQ(r.find_stage(F::kMasked, BackendKind::kCuda, Stage::kGemm1, Stage::kActivation), nullptr);
  EXPECT_TRUE(r.has_backend(BackendKind::kCuda));
  EXPECT_FALSE(r.has_backend(BackendKind::kCpu));

  EXPECT_HAS(r.add_stage({"x.gemm1", BackendKind::kCuda, Stage::kGemm2, Stage::kGemm2, {F::kStandard}, dummy}).message(), "registered already");
  EXPECT_HAS(r.add_stage({"x.other", BackendKind::kCuda, Stage::kGemm1, Stage::kGemm1, {F::kMasked}, dummy}).message(),
             "gemm1..gemm1 for (masked, cuda) is registered already");
  EXPECT_HAS(r.add_stage({"x.back", BackendKind::kCuda, Stage::kGemm2, Stage::kGemm1, {F::kMasked}, dummy}).message(), "comes after");
  EXPECT_HAS(r.add_stage({"x.none", BackendKind::kCuda, Stage::kGemm2, Stage::kGemm2, {}, dummy}).message(), "no input formats");
  EXPECT_HAS(r.add_fused_layer({"x.layer", BackendKind::kCuda, {F::kStandard}, nullptr, dummy}).message(), "declines function");
}

TEST(Registry, FusedLayersAreTriedInOrderAndMayDecline) {
  Registry r;
  using F = InputFormat;
  ASSERT_TRUE(r.add_fused_layer({"x.small", BackendKind::kCpu, {F::kStandard}, small_only, dummy}).ok());
  ASSERT_TRUE(r.add_fused_layer({"x.any", BackendKind::kCpu, {F::kStandard}, never, dummy}).ok());
  ASSERT_TRUE(r.add_stage({"x.route", BackendKind::kCpu, Stage::kRoute, Stage::kRoute, {F::kStandard}, dummy}).ok());
  MoePlan plan = make_plan(problem(), 1, kCpu, {}, r);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].kernel, "x.small");
  plan = make_plan(problem(), 3, kCpu, {}, r);
  EXPECT_EQ(plan.steps[0].kernel, "x.any");
  ASSERT_EQ(plan.declined.size(), 1u);
  EXPECT_EQ(plan.declined[0], "x.small: too many tokens");
}

TEST(Registry, TheDefaultRegistryHasEveryCpuStageForEveryFormat) {
  const Registry& r = default_registry();
  for (auto f : {InputFormat::kStandard, InputFormat::kPreRouted, InputFormat::kMasked, InputFormat::kIndexed})
    for (int s = 1; s < kNumStages; ++s) EXPECT_NE(r.find_stage(f, BackendKind::kCpu, Stage(s), Stage(s)), nullptr);
  EXPECT_NE(r.find_stage(InputFormat::kStandard, BackendKind::kCpu, Stage::kRoute, Stage::kRoute), nullptr);
}

// ---- presets ------------------------------------------------------------------------------------------
TEST(Presets, ThePublicFourAreThereAsPublished) {
  auto q = find_preset("Qwen3-30B-A3B");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->problem.num_experts, 128);
  EXPECT_EQ(q->problem.top_k, 8);
  auto d = find_preset("deepseek-v3");
  EXPECT_EQ(d->problem.routing.method, RoutingMethod::kDeepSeekV3);
  EXPECT_EQ(d->problem.routing.routed_scaling_factor, 2.5f);
  EXPECT_EQ(d->problem.quant, QuantScheme::kFp8Block);
  auto g = find_preset("gpt-oss-120b");
  EXPECT_EQ(g->problem.activation.kind, Activation::kSwiGLUClamped);
  EXPECT_EQ(g->problem.gate_up_layout, GateUpLayout::kInterleaved);
  EXPECT_EQ(g->problem.quant, QuantScheme::kMxfp4);
  auto m = find_preset("mixtral-8x7b");
  EXPECT_EQ(m->problem.routing.method, RoutingMethod::kTopKSoftmax);
  EXPECT_EQ(m->problem.intermediate, 14336);
  EXPECT_HAS(find_preset("gpt-5").status().message(), "known: mixtral-8x7b, qwen3-30b-a3b");
}

// plan_refusal: the backend's reason when none was chosen, then every note, "; " between them; ""
// for a plan with a backend and no notes.
TEST(Plan, RefusalJoinsTheBackendsReasonAndTheNotes) {
  MoePlan plan;
  plan.backend = {false, "no_backend", "no GPU"};
  plan.notes = {"a knob is refused", "a stage is missing"};
  EXPECT_EQ(plan_refusal(plan), "no GPU; a knob is refused; a stage is missing");
  plan.backend.on = true;
  EXPECT_EQ(plan_refusal(plan), "a knob is refused; a stage is missing");
  plan.notes.clear();
  EXPECT_EQ(plan_refusal(plan), "");
}

}  // namespace
}  // namespace moekit
