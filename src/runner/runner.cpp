// MoeRunner: validation, backend choice, workspace layout and the execution of a plan's steps.
#include "moekit/runner.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include <fmt/format.h>

#include "cpu/stages.h"
#if MOEKIT_HAS_CUDA_BACKEND
#include "cuda/moe/cuda_backend.h"
#endif
#include "moekit/cpu_reference.h"
#include "moekit/tuning.h"

namespace moekit {

struct MoeRunner::PlanCache {
  std::mutex mutex;
  // Keyed by token count and the weight traits that change decisions.
  std::map<std::tuple<int64_t, bool, bool, bool, bool>, MoePlan> plans;
};

namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The row counts of a call from the inputs' shapes: tokens (for the plan), R_max and output rows.
struct RowCounts {
  int64_t tokens = 0;
  int64_t max_rows = 0;
  int64_t out_rows = 0;
};

Result<RowCounts> row_counts(const MoeProblem& p, const MoeInputs& in) {
  const int64_t want_dims = p.input_format == InputFormat::kMasked ? 3 : 2;
  if (in.hidden.ndim() != want_dims)
    return Status::InvalidArgument(fmt::format("hidden: format={} needs {} dimensions, got {}", input_format_name(p.input_format),
                                               want_dims, in.hidden.describe()));
  RowCounts rc;
  switch (p.input_format) {
    case InputFormat::kStandard:
    case InputFormat::kPreRouted:
      rc.tokens = in.hidden.size(0);
      rc.max_rows = rc.tokens * p.top_k;
      rc.out_rows = p.no_combine ? rc.max_rows : rc.tokens;
      break;
    case InputFormat::kMasked:
      rc.tokens = in.hidden.size(0) * in.hidden.size(1);
      rc.max_rows = rc.out_rows = rc.tokens;
      break;
    case InputFormat::kIndexed:
      if (in.gather_index.ndim() != 1)
        return Status::InvalidArgument(fmt::format("gather_index: expected [R], got {}", in.gather_index.describe()));
      rc.tokens = in.hidden.size(0);
      rc.max_rows = in.gather_index.size(0);
      rc.out_rows = rc.tokens;
      break;
  }
  return rc;
}

bool same_weight_shapes(const MoeProblem& a, const MoeProblem& b) {
  return a.num_experts == b.num_experts && a.local_expert_begin == b.local_expert_begin && a.local_experts() == b.local_experts() &&
         a.hidden == b.hidden && a.intermediate == b.intermediate && a.gemm1_rows() == b.gemm1_rows() && a.quant == b.quant &&
         a.group_size == b.group_size && a.gate_up_layout == b.gate_up_layout && a.activation_dtype == b.activation_dtype;
}

}  // namespace

MoeRunner::MoeRunner(MoeRunner&&) noexcept = default;
MoeRunner& MoeRunner::operator=(MoeRunner&&) noexcept = default;
MoeRunner::~MoeRunner() = default;

Result<MoeRunner> MoeRunner::create(const MoeProblem& problem, const RunnerOptions& options) {
  MOEKIT_RETURN_IF_ERROR(cpu::validate_problem(problem));
  auto selection = select_device(options.backend, default_registry());
  if (!selection.ok()) return selection.status();
  MoeRunner r;
  r.problem_ = problem;
  r.options_ = options;
  r.device_ = selection->device;
  r.device_decision_ = selection->decision;
  r.plans_ = std::make_unique<PlanCache>();
  if (!r.options_.tuning_table && options.read_env_table) {
    auto env = tuning_table_from_env();
    if (!env.ok()) return env.status();
    r.options_.tuning_table = *env;
  }
  // A scheme the device cannot run is an error now, not at the first call; with backend=auto the CPU
  // backend takes it instead (saying why).
  MoePlan probe = make_plan(problem, 1, r.device_, {options.fusions, {}, {}, nullptr});
  if (!probe.backend.on && options.backend == BackendChoice::kAuto && r.device_.backend != BackendKind::kCpu) {
    r.device_decision_ = {true, "select_device",
                          fmt::format("backend=auto: {} cannot run this layer ({}), so the CPU backend runs", r.device_.name, probe.backend.reason)};
    r.device_ = DeviceTarget::host_cpu();
    probe = make_plan(problem, 1, r.device_, {options.fusions, {}, {}, nullptr});
  }
  if (!probe.backend.on) return Status::Unsupported(fmt::format("{} [{}]", probe.backend.reason, probe.backend.rule));
  return r;
}

Result<PreparedWeights> MoeRunner::prepare_weights(const MoeWeights& weights) const {
  // Every backend checks the caller's layout with the reference's rules (one source of truth for what
  // a valid weight set is, through its hook); then the backend may repack.
  if (const auto check = default_registry().hooks(device_.backend).validate_weights) MOEKIT_RETURN_IF_ERROR(check(problem_, weights));
  PreparedWeights p;
  p.weights_ = weights;
  p.backend_ = device_.backend;
  p.problem_ = problem_;
  return p;
}

MoePlan MoeRunner::plan(int64_t num_tokens, const WeightTraits& weights) const {
  return make_plan(problem_, num_tokens, device_, {options_.fusions, weights, options_.choice, options_.tuning_table.get()});
}

MoePlan MoeRunner::plan(const MoeInputs& inputs, const WeightTraits& weights) const {
  const TensorView& h = inputs.hidden;
  return plan(h.ndim() == 3 ? h.size(0) * h.size(1) : h.size(0), weights);
}

const MoePlan& MoeRunner::cached_plan(int64_t num_tokens, const WeightTraits& t) const {
  std::lock_guard lock(plans_->mutex);
  const auto key = std::make_tuple(num_tokens, t.w13_input_scale, t.w2_input_scale, t.w13_pre_quant_scale, t.w2_pre_quant_scale);
  auto it = plans_->plans.find(key);
  if (it == plans_->plans.end()) it = plans_->plans.emplace(key, plan(num_tokens, t)).first;
  return it->second;
}

Result<WorkspaceLayout> MoeRunner::workspace_layout(const MoeInputs& inputs) const {
  auto rc = row_counts(problem_, inputs);
  if (!rc.ok()) return rc.status();
  const MoeProblem& p = problem_;
  const int64_t R = rc->max_rows;
  const BackendHooks& hooks = default_registry().hooks(device_.backend);
  const int64_t rows_bytes = dtype_storage_bytes(hooks.rows_dtype, 1);
  const int64_t operand_bytes = hooks.operands_in_activation_dtype ? dtype_storage_bytes(p.activation_dtype, 1) : rows_bytes;
  WorkspaceLayout l;
  l.tokens = rc->tokens;
  l.max_rows = R;
  l.out_rows = rc->out_rows;
  auto add = [&](std::string_view name, int64_t bytes) {
    l.segments.push_back({name, l.total_bytes, static_cast<size_t>(bytes)});
    l.total_bytes += align_up(static_cast<size_t>(bytes));
  };
  if (p.input_format == InputFormat::kStandard) {
    add("topk_ids", rc->tokens * p.top_k * 4);
    add("topk_weights", rc->tokens * p.top_k * 4);
  }
  add("expert_offsets", (p.local_experts() + 1) * int64_t{8});
  add("row_source", R * 8);
  add("row_weight", R * 4);
  add("dest_offsets", (rc->out_rows + 1) * 8);
  add("dest_rows", R * 8);
  add("gemm1_in", R * p.hidden * operand_bytes);
  add("gemm1_out", R * p.gemm1_rows() * rows_bytes);
  add("gemm2_in", R * p.intermediate * operand_bytes);
  add("gemm2_out", R * p.hidden * rows_bytes);
  if (hooks.scratch_bytes) {
    auto bytes = hooks.scratch_bytes(p, rc->tokens, R, rc->out_rows);
    if (!bytes.ok()) return bytes.status();
    add("scratch", static_cast<int64_t>(*bytes));
  }
  return l;
}

Result<size_t> MoeRunner::workspace_size(const MoeInputs& inputs) const {
  auto l = workspace_layout(inputs);
  if (!l.ok()) return l.status();
  return l->total_bytes;
}

Status MoeRunner::run(const PreparedWeights& weights, const MoeInputs& inputs, const MoeOutputs& outputs,
                      std::span<std::byte> workspace, Stream stream) const {
  return run_steps(weights, inputs, outputs, workspace, stream, 0, SIZE_MAX);
}

Status MoeRunner::run_steps(const PreparedWeights& weights, const MoeInputs& inputs, const MoeOutputs& outputs,
                            std::span<std::byte> workspace, Stream stream, size_t first, size_t end) const {
  if (weights.backend() != device_.backend)
    return Status::InvalidArgument(fmt::format("weights: prepared for backend {}, but this runner uses {}", backend_kind_name(weights.backend()),
                                               backend_kind_name(device_.backend)));
  if (!same_weight_shapes(weights.problem_, problem_))
    return Status::InvalidArgument("weights: prepared for a problem with different experts, sizes, quantization or layout");
  // The problem was checked by create and the weights by prepare_weights: only the call's tensors now.
  if (const auto check = default_registry().hooks(device_.backend).validate_io) MOEKIT_RETURN_IF_ERROR(check(problem_, inputs, outputs));
  auto layout = workspace_layout(inputs);
  if (!layout.ok()) return layout.status();
  if (workspace.size() < layout->total_bytes)
    return Status::InvalidArgument(fmt::format("workspace: {} bytes given, {} needed (ask workspace_size first)", workspace.size(), layout->total_bytes));
  if (layout->total_bytes > 0 && reinterpret_cast<uintptr_t>(workspace.data()) % kAlign != 0)
    return Status::InvalidArgument(fmt::format("workspace: address {} is not {}-byte aligned", static_cast<const void*>(workspace.data()), kAlign));

  const MoePlan& plan = cached_plan(layout->tokens, WeightTraits::of(weights.weights()));
  if (!plan.runnable) return Status::Unsupported(fmt::format("no runnable plan: {}", plan_refusal(plan)));

  // Carve the buffers. Masked and Indexed need no routing buffers; PreRouted reads the caller's.
  const MoeProblem& p = problem_;
  const Device dev = device_.backend == BackendKind::kCpu ? Device::cpu() : Device::cuda();
  const BackendHooks& hooks = default_registry().hooks(device_.backend);
  const DType rows_dtype = hooks.rows_dtype;
  const DType operand_dtype = hooks.operands_in_activation_dtype ? p.activation_dtype : rows_dtype;
  auto seg = [&](std::string_view name) -> std::byte* {
    for (const auto& s : layout->segments)
      if (s.name == name) return workspace.data() + s.offset;
    return nullptr;
  };
  const int64_t R = layout->max_rows, T = layout->tokens, K = p.top_k;
  StageBuffers b;
  if (p.input_format == InputFormat::kStandard) {
    b.topk_ids = TensorView(seg("topk_ids"), DType::kI32, {T, K}, dev);
    b.topk_weights = TensorView(seg("topk_weights"), DType::kF32, {T, K}, dev);
  } else if (p.input_format == InputFormat::kPreRouted) {
    b.topk_ids = inputs.topk_ids;
    b.topk_weights = inputs.topk_weights;
  }
  b.expert_offsets = TensorView(seg("expert_offsets"), DType::kI64, {p.local_experts() + 1}, dev);
  b.row_source = TensorView(seg("row_source"), DType::kI64, {R}, dev);
  b.row_weight = TensorView(seg("row_weight"), DType::kF32, {R}, dev);
  b.dest_offsets = TensorView(seg("dest_offsets"), DType::kI64, {layout->out_rows + 1}, dev);
  b.dest_rows = TensorView(seg("dest_rows"), DType::kI64, {R}, dev);
  b.gemm1_in = TensorView(seg("gemm1_in"), operand_dtype, {R, p.hidden}, dev);
  b.gemm1_out = TensorView(seg("gemm1_out"), rows_dtype, {R, p.gemm1_rows()}, dev);
  b.gemm2_in = TensorView(seg("gemm2_in"), operand_dtype, {R, p.intermediate}, dev);
  b.gemm2_out = TensorView(seg("gemm2_out"), rows_dtype, {R, p.hidden}, dev);
  if (std::byte* s = seg("scratch")) {
    for (const auto& sg : layout->segments)
      if (sg.name == "scratch") b.scratch = TensorView(s, DType::kU8, {static_cast<int64_t>(sg.bytes)}, dev);
  }

  const StageContext ctx{p, weights.weights(), inputs, outputs, b, stream, plan.knobs};
  if (first >= plan.steps.size() && first != 0)
    return Status::InvalidArgument(fmt::format("step {}: the plan has {} steps", first, plan.steps.size()));
  for (size_t i = first; i < std::min(end, plan.steps.size()); ++i)
    MOEKIT_RETURN_IF_ERROR(plan.steps[i].run(ctx).with_context(plan.steps[i].kernel));
  return Status::Ok();
}

const Registry& default_registry() {
  // Built once, on first use; backends register explicitly (static-library registration through
  // global constructors would be dropped by the linker).
  static const Registry registry = [] {
    Registry r;
    Status s = cpu::register_cpu_backend(r);
#if MOEKIT_HAS_CUDA_BACKEND
    if (s.ok()) s = cuda::register_cuda_backend(r);
#endif
    (void)s;  // names are fixed in code; a duplicate is caught by test_registry
    return r;
  }();
  return registry;
}

Status MoeRunner::run_step(const PreparedWeights& weights, const MoeInputs& inputs, const MoeOutputs& outputs,
                           std::span<std::byte> workspace, Stream stream, size_t step_index) const {
  return run_steps(weights, inputs, outputs, workspace, stream, step_index, step_index + 1);
}

}  // namespace moekit

