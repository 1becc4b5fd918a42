// Host side of the CUDA attention backends: checks, the launch plan (how the context and the
// buffers are split so that the grid fills the GPU), the workspace layout, and the launches.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "cuda/attention/attention_cuda.h"
#include "cuda/attention/attention_kernels.h"
#include "cuda/cuda_check.h"

namespace moekit::cuda {
namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Makes `device` current for the lifetime of the guard (no call at all when it already is, so that
// nothing but the launch happens inside a stream capture).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current != device) {
      status_ = cudaSetDevice(device);
      if (status_ == cudaSuccess) previous_ = current;
    }
  }
  ~DeviceGuard() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  Status status() const { return detail::cuda_status(status_, "cudaSetDevice", __FILE__, __LINE__); }

 private:
  int previous_ = -1;
  cudaError_t status_ = cudaSuccess;
};

Status check_device_tensors(const AttentionInputs& in, std::string_view backend) {
  if (!in.q.device().is_cuda())
    return Status::InvalidArgument(fmt::format("backend {} needs device tensors; q is on {}", backend, in.q.device().to_string()));
  return Status::Ok();
}

// The kernels read rows as 16-byte vectors.
Status check_aligned(std::string_view name, const void* p) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
    return Status::InvalidArgument(fmt::format("{}: data pointer {} is not 16-byte aligned (the CUDA backend reads 16-byte vectors)",
                                               name, p));
  return Status::Ok();
}

Status check_alignment(const AttentionInputs& in, const AttentionOutputs* out) {
  MOEKIT_RETURN_IF_ERROR(check_aligned("q", in.q.data()));
  MOEKIT_RETURN_IF_ERROR(check_aligned("context_k", in.context_k.data()));
  MOEKIT_RETURN_IF_ERROR(check_aligned("context_v", in.context_v.data()));
  MOEKIT_RETURN_IF_ERROR(check_aligned("buffer_k", in.buffer_k.data()));
  MOEKIT_RETURN_IF_ERROR(check_aligned("buffer_v", in.buffer_v.data()));
  if (out != nullptr) MOEKIT_RETURN_IF_ERROR(check_aligned("out", out->out.data()));
  return Status::Ok();
}

Result<const KernelEntry*> pick_kernel(DType dtype, int head_dim, ContextEngine engine) {
  if (engine == ContextEngine::kAuto) engine = dtype == DType::kF32 ? ContextEngine::kSimt : ContextEngine::kMma;
  if (engine == ContextEngine::kMma && dtype == DType::kF32)
    return Status::InvalidArgument("engine mma needs f16 or bf16 tensors, dtype=f32 (use simt or auto)");
  const KernelEntry* k = find_kernel(dtype, head_dim, engine);
  if (k == nullptr)
    return Status::Internal(fmt::format("no attention kernel compiled for dtype={} head_dim={} engine={}", dtype_name(dtype),
                                        head_dim, context_engine_name(engine)));
  return k;
}

// Where everything goes, and how the work is split.
struct Plan {
  const KernelEntry* kernel = nullptr;
  int sm_count = 0, ctas_per_sm = 0;
  int rows = 0, row_blocks = 0;
  int ctx_splits = 0, buf_splits = 1, buf_ctas = 1;
  int64_t ctx_chunk = 0, buf_chunk = 0;
  int grid_x = 0;
  size_t ml_offset = 0, acc_offset = 0, bytes = 0;  // counters at offset 0
};

// `ctx_len` keys of shared context; `buf_keys` rows per sequence in the buffer tensor.
Result<Plan> make_plan(const AttentionParams& p, int64_t ctx_len, int64_t buf_keys, ContextEngine engine, int device) {
  Plan plan;
  auto kernel = pick_kernel(p.dtype, p.head_dim, engine);
  if (!kernel.ok()) return kernel.status();
  plan.kernel = *kernel;
  auto occupancy = prepare_kernel(*plan.kernel, device);
  if (!occupancy.ok()) return occupancy.status();
  plan.ctas_per_sm = occupancy->ctas_per_sm;
  plan.sm_count = occupancy->sm_count;

  const int64_t rows = int64_t{p.batch} * p.group_size() * p.q_len;
  constexpr int64_t kMaxRowBlocks = 65535;  // grid y
  if (rows > kMaxRowBlocks * kRowsPerBlock)
    return Status::InvalidArgument(fmt::format("batch * (num_q_heads / num_kv_heads) * q_len = {} query rows per kv head exceeds the "
                                               "CUDA backend's limit of {}",
                                               rows, kMaxRowBlocks * kRowsPerBlock));
  if (p.num_kv_heads > 65535)
    return Status::InvalidArgument(fmt::format("num_kv_heads={} exceeds the CUDA backend's limit of 65535", p.num_kv_heads));
  plan.rows = static_cast<int>(rows);
  plan.row_blocks = static_cast<int>(ceil_div(rows, kRowsPerBlock));
  if (rows == 0) return plan;

  // About four waves of CTAs: enough that a few kv heads or a small batch still fill every SM,
  // and the last wave's tail costs little.
  const int64_t target = 4 * int64_t{plan.sm_count} * plan.ctas_per_sm;
  const int64_t groups = int64_t{plan.row_blocks} * p.num_kv_heads;
  plan.buf_ctas = kRowsPerBlock / (plan.kernel->threads / 32);

  // Buffers: split only when they are long (at least 4 steps of 32 keys a split); next to a shared
  // context into at most 16 splits.
  const int64_t buf_tiles = ceil_div(buf_keys, kBufferTile);
  if (buf_tiles > 0) {
    const int64_t most = std::min<int64_t>(ctx_len > 0 ? 16 : kMaxSlots, std::max<int64_t>(1, buf_tiles / 4));
    const int64_t want = std::clamp<int64_t>(ceil_div(target, groups * plan.buf_ctas), 1, most);
    const int64_t chunk_tiles = ceil_div(buf_tiles, want);
    plan.buf_chunk = chunk_tiles * kBufferTile;
    plan.buf_splits = static_cast<int>(ceil_div(buf_tiles, chunk_tiles));
  } else {
    plan.buf_chunk = kBufferTile;
    plan.buf_splits = 1;
  }

  // Context: as many splits as the target asks, each at least two tiles, all the slots left at most.
  // Every split adds a partial result per row to write and merge, so no more than fill the GPU.
  const int64_t tile = plan.kernel->context_tile;
  const int64_t ctx_tiles = ceil_div(ctx_len, tile);
  if (ctx_tiles > 0) {
    const int64_t most = std::min<int64_t>(kMaxSlots - plan.buf_splits, std::max<int64_t>(1, ctx_tiles / 2));
    const int64_t want = std::clamp<int64_t>(ceil_div(target, groups), 1, most);
    const int64_t chunk_tiles = ceil_div(ctx_tiles, want);
    plan.ctx_chunk = chunk_tiles * tile;
    plan.ctx_splits = static_cast<int>(ceil_div(ctx_tiles, chunk_tiles));
  }

  if (plan.ctx_splits + plan.buf_splits > kMaxSlots)
    return Status::Internal(fmt::format("attention plan: {} context + {} buffer splits exceed {} partials per row", plan.ctx_splits,
                                        plan.buf_splits, kMaxSlots));
  plan.grid_x = plan.ctx_splits + plan.buf_splits * plan.buf_ctas;
  const size_t slots = static_cast<size_t>(plan.ctx_splits + plan.buf_splits);
  const size_t row_slots = static_cast<size_t>(p.num_kv_heads) * static_cast<size_t>(rows) * slots;
  plan.ml_offset = align_up(static_cast<size_t>(groups) * sizeof(int));
  plan.acc_offset = plan.ml_offset + align_up(row_slots * 2 * sizeof(float));
  plan.bytes = plan.acc_offset + align_up(row_slots * static_cast<size_t>(p.head_dim) * sizeof(float));
  return plan;
}

struct Operands {
  const void* ctx_k = nullptr;
  const void* ctx_v = nullptr;
  int64_t ctx_len = 0;
  const void* buf_k = nullptr;
  const void* buf_v = nullptr;
  const int32_t* buf_len = nullptr;
  int64_t buf_capacity = 0, buf_prefix = 0;
};

Status launch(const AttentionParams& p, const Plan& plan, const AttentionInputs& in, const Operands& ops,
              const AttentionOutputs& out, void* workspace, size_t workspace_bytes, void* stream) {
  if (plan.rows == 0) return Status::Ok();
  if (workspace_bytes < plan.bytes || workspace == nullptr)
    return Status::InvalidArgument(fmt::format("workspace: {} bytes given, the CUDA attention kernel needs {}",
                                               workspace == nullptr ? 0 : workspace_bytes, plan.bytes));
  MOEKIT_RETURN_IF_ERROR(check_aligned("workspace", workspace));
  auto* ws = static_cast<uint8_t*>(workspace);
  const SharedAttentionArgs args{
      .q = in.q.data(),
      .ctx_k = ops.ctx_k,
      .ctx_v = ops.ctx_v,
      .buf_k = ops.buf_k,
      .buf_v = ops.buf_v,
      .buf_len = ops.buf_len,
      .out = out.out.data(),
      .lse = out.lse.defined() ? out.lse.data_as<float>() : nullptr,
      .batch = p.batch,
      .num_q_heads = p.num_q_heads,
      .num_kv_heads = p.num_kv_heads,
      .q_len = p.q_len,
      .ctx_len = ops.ctx_len,
      .buf_capacity = ops.buf_capacity,
      .buf_prefix = ops.buf_prefix,
      .scale_log2 = static_cast<float>(p.scale() * 1.4426950408889634),
      .rows = plan.rows,
      .row_blocks = plan.row_blocks,
      .ctx_splits = plan.ctx_splits,
      .ctx_chunk = plan.ctx_chunk,
      .buf_splits = plan.buf_splits,
      .buf_chunk = plan.buf_chunk,
      .buf_ctas = plan.buf_ctas,
      .counters = reinterpret_cast<int*>(ws),
      .part_ml = reinterpret_cast<float*>(ws + plan.ml_offset),
      .part_acc = reinterpret_cast<float*>(ws + plan.acc_offset),
  };
  return launch_kernel(*plan.kernel, args, plan.grid_x, plan.row_blocks, p.num_kv_heads, stream);
}

Operands shared_operands(const AttentionInputs& in) {
  return Operands{.ctx_k = in.context_k.defined() ? in.context_k.data() : nullptr,
                  .ctx_v = in.context_v.defined() ? in.context_v.data() : nullptr,
                  .ctx_len = in.context_len(),
                  .buf_k = in.buffer_k.defined() ? in.buffer_k.data() : nullptr,
                  .buf_v = in.buffer_v.defined() ? in.buffer_v.data() : nullptr,
                  .buf_len = in.buffer_lengths.defined() ? in.buffer_lengths.data_as<const int32_t>() : nullptr,
                  .buf_capacity = in.buffer_capacity(),
                  .buf_prefix = 0};
}

// The replicated workspace: K copy, V copy, then the attention kernel's own workspace.
struct ReplicatedLayout {
  size_t copy_bytes = 0;  // each of K and V
  Plan plan;
  size_t bytes() const { return 2 * align_up(copy_bytes) + plan.bytes; }
};

Result<ReplicatedLayout> replicated_layout(const AttentionParams& p, const AttentionInputs& in) {
  ReplicatedLayout l;
  const int64_t keys = in.context_len() + in.buffer_capacity();
  l.copy_bytes = static_cast<size_t>(dtype_storage_bytes(p.dtype, int64_t{p.batch} * p.num_kv_heads * keys * p.head_dim));
  auto plan = make_plan(p, 0, keys, ContextEngine::kAuto, in.q.device().index);
  if (!plan.ok()) return plan.status();
  l.plan = *plan;
  return l;
}

Status check_inputs(const AttentionParams& p, const AttentionInputs& in, std::string_view backend) {
  MOEKIT_RETURN_IF_ERROR(validate_attention_inputs(p, in));
  MOEKIT_RETURN_IF_ERROR(check_device_tensors(in, backend));
  return check_alignment(in, nullptr);
}

Status check_call(const AttentionParams& p, const AttentionInputs& in, const AttentionOutputs& out, std::string_view backend) {
  MOEKIT_RETURN_IF_ERROR(validate_attention(p, in, out));
  MOEKIT_RETURN_IF_ERROR(check_device_tensors(in, backend));
  return check_alignment(in, &out);
}

}  // namespace

Result<AttentionLaunchInfo> shared_attention_launch_info(const AttentionParams& p, const AttentionInputs& in,
                                                         const AttentionOptions& options) {
  MOEKIT_RETURN_IF_ERROR(check_inputs(p, in, "cuda"));
  DeviceGuard guard(in.q.device().index);
  MOEKIT_RETURN_IF_ERROR(guard.status());
  auto plan = make_plan(p, in.context_len(), in.buffer_capacity(), options.engine, in.q.device().index);
  if (!plan.ok()) return plan.status();
  return AttentionLaunchInfo{.engine = plan->kernel->engine,
                             .threads = plan->kernel->threads,
                             .ctas_per_sm = plan->ctas_per_sm,
                             .sm_count = plan->sm_count,
                             .row_blocks = plan->row_blocks,
                             .context_splits = plan->ctx_splits,
                             .buffer_splits = plan->buf_splits,
                             .grid_ctas = int64_t{plan->grid_x} * plan->row_blocks * p.num_kv_heads,
                             .shared_memory_bytes = plan->kernel->smem_bytes,
                             .workspace_bytes = plan->bytes};
}

Result<size_t> shared_attention_workspace_size(const AttentionParams& p, const AttentionInputs& in, const AttentionOptions& options) {
  auto info = shared_attention_launch_info(p, in, options);
  if (!info.ok()) return info.status();
  return info->workspace_bytes;
}

Status shared_attention(const AttentionParams& p, const AttentionInputs& in, const AttentionOutputs& out, void* workspace,
                        size_t workspace_bytes, void* stream, const AttentionOptions& options) {
  MOEKIT_RETURN_IF_ERROR(check_call(p, in, out, "cuda"));
  DeviceGuard guard(in.q.device().index);
  MOEKIT_RETURN_IF_ERROR(guard.status());
  auto plan = make_plan(p, in.context_len(), in.buffer_capacity(), options.engine, in.q.device().index);
  if (!plan.ok()) return plan.status();
  return launch(p, *plan, in, shared_operands(in), out, workspace, workspace_bytes, stream);
}

Result<size_t> replicated_workspace_size(const AttentionParams& p, const AttentionInputs& in) {
  MOEKIT_RETURN_IF_ERROR(check_inputs(p, in, "replicated"));
  DeviceGuard guard(in.q.device().index);
  MOEKIT_RETURN_IF_ERROR(guard.status());
  auto layout = replicated_layout(p, in);
  if (!layout.ok()) return layout.status();
  return layout->bytes();
}

Status replicated_materialize(const AttentionParams& p, const AttentionInputs& in, void* workspace, size_t workspace_bytes,
                              void* stream) {
  MOEKIT_RETURN_IF_ERROR(check_inputs(p, in, "replicated"));
  DeviceGuard guard(in.q.device().index);
  MOEKIT_RETURN_IF_ERROR(guard.status());
  auto layout = replicated_layout(p, in);
  if (!layout.ok()) return layout.status();
  if (workspace_bytes < layout->bytes() || workspace == nullptr)
    return Status::InvalidArgument(fmt::format("workspace: {} bytes given, the replicated backend needs {}",
                                               workspace == nullptr ? 0 : workspace_bytes, layout->bytes()));
  MOEKIT_RETURN_IF_ERROR(check_aligned("workspace", workspace));
  auto* ws = static_cast<uint8_t*>(workspace);
  const Operands ops = shared_operands(in);
  return launch_materialize(p.dtype, p.batch, p.num_kv_heads, p.head_dim, ops.ctx_len, ops.buf_capacity, ops.ctx_k, ops.ctx_v,
                            ops.buf_k, ops.buf_v, ws, ws + align_up(layout->copy_bytes), stream);
}

Status replicated_attend_materialized(const AttentionParams& p, const AttentionInputs& in, const AttentionOutputs& out,
                                      void* workspace, size_t workspace_bytes, void* stream) {
  MOEKIT_RETURN_IF_ERROR(check_call(p, in, out, "replicated"));
  DeviceGuard guard(in.q.device().index);
  MOEKIT_RETURN_IF_ERROR(guard.status());
  auto layout = replicated_layout(p, in);
  if (!layout.ok()) return layout.status();
  if (workspace_bytes < layout->bytes() || workspace == nullptr)
    return Status::InvalidArgument(fmt::format("workspace: {} bytes given, the replicated backend needs {}",
                                               workspace == nullptr ? 0 : workspace_bytes, layout->bytes()));
  auto* ws = static_cast<uint8_t*>(workspace);
  const size_t copy = align_up(layout->copy_bytes);
  const Operands ops{.buf_k = ws,
                     .buf_v = ws + copy,
                     .buf_len = in.buffer_lengths.defined() ? in.buffer_lengths.data_as<const int32_t>() : nullptr,
                     .buf_capacity = in.context_len() + in.buffer_capacity(),
                     .buf_prefix = in.context_len()};
  return launch(p, layout->plan, in, ops, out, ws + 2 * copy, workspace_bytes - 2 * copy, stream);
}

Status replicated_attention(const AttentionParams& p, const AttentionInputs& in, const AttentionOutputs& out, void* workspace,
                            size_t workspace_bytes, void* stream) {
  MOEKIT_RETURN_IF_ERROR(check_call(p, in, out, "replicated"));
  MOEKIT_RETURN_IF_ERROR(replicated_materialize(p, in, workspace, workspace_bytes, stream));
  return replicated_attend_materialized(p, in, out, workspace, workspace_bytes, stream);
}

Status append_buffer(DType dtype, int batch, int num_kv_heads, int head_dim, int64_t capacity, int64_t new_len,
                     const void* new_k, const void* new_v, const int32_t* counts, void* buffer_k, void* buffer_v,
                     int32_t* lengths, void* stream) {
  MOEKIT_RETURN_IF_ERROR(check_aligned("append k", new_k));
  MOEKIT_RETURN_IF_ERROR(check_aligned("append v", new_v));
  return launch_append(dtype, batch, num_kv_heads, head_dim, capacity, new_len, new_k, new_v, counts, buffer_k, buffer_v, lengths,
                       stream);
}

Status zero_device_memory(void* ptr, size_t bytes, void* stream) {
  if (bytes == 0) return Status::Ok();
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(ptr, 0, bytes, static_cast<cudaStream_t>(stream)));
  return Status::Ok();
}

Status synchronize_stream(void* stream) {
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  return Status::Ok();
}

}  // namespace moekit::cuda
