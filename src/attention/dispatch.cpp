// The attention entry points: resolve the backend (falling back with a warning when the one asked
// for cannot run), check the workspace, and call it. Backends: src/cpu/attention_reference.cpp and
// src/cuda/attention/.
#include <fmt/format.h>

#include "cpu/attention_reference.h"
#include "cuda/attention/attention_cuda.h"
#include "moekit/attention.h"
#include "moekit/system_info.h"

namespace moekit {
namespace {

// Why the CUDA backend cannot run on host tensors, in the words of the fallback warning (the
// build and the devices do not change while the process runs: asked once).
const std::string& cuda_unavailable_reason() {
  static const std::string reason = [] {
    if (!build_info().cuda) return std::string("moekit was built without CUDA");
    const SystemInfo sys = query_system();
    if (sys.devices.empty()) return "no GPU: " + sys.no_gpu_reason;
    return std::string("the tensors are in host memory; the CUDA backend needs device tensors");
  }();
  return reason;
}

Result<AttentionRunInfo> resolve(const AttentionInputs& in, AttentionBackend requested) {
  AttentionRunInfo info{.requested = requested, .backend = requested, .warning = {}};
  const bool on_device = in.q.device().is_cuda();
  switch (requested) {
    case AttentionBackend::kCpuReference:
      if (on_device)
        return Status::InvalidArgument(fmt::format(
            "backend cpu_reference needs host tensors; q is on {} (use cuda or auto)", in.q.device().to_string()));
      break;
    case AttentionBackend::kReplicated: break;  // runs where the tensors are
    case AttentionBackend::kAuto:
      info.backend = on_device ? AttentionBackend::kCuda : AttentionBackend::kCpuReference;
      break;
    case AttentionBackend::kCuda:
      if (!on_device) {
        info.backend = AttentionBackend::kCpuReference;
        info.warning = fmt::format("backend cuda is not available ({}); ran cpu_reference instead", cuda_unavailable_reason());
      }
      break;
  }
  return info;
}

}  // namespace

Result<size_t> attention_workspace_size(const AttentionParams& params, const AttentionInputs& inputs, AttentionBackend backend) {
  MOEKIT_RETURN_IF_ERROR(validate_attention_inputs(params, inputs));
  auto info = resolve(inputs, backend);
  if (!info.ok()) return info.status();
  const bool on_device = inputs.q.device().is_cuda();
  switch (info->backend) {
    case AttentionBackend::kCpuReference: return size_t{0};
    case AttentionBackend::kReplicated:
      return on_device ? cuda::replicated_workspace_size(params, inputs)
                       : Result<size_t>(cpu::attention_replicated_workspace_size(params, inputs));
    case AttentionBackend::kCuda: return cuda::shared_attention_workspace_size(params, inputs);
    case AttentionBackend::kAuto: break;
  }
  return Status::Internal("attention_workspace_size: unresolved backend");
}

Result<AttentionRunInfo> shared_context_attention(const AttentionParams& params, const AttentionInputs& inputs,
                                                  const AttentionOutputs& outputs, AttentionBackend backend,
                                                  void* workspace, size_t workspace_bytes, void* stream) {
  MOEKIT_RETURN_IF_ERROR(validate_attention(params, inputs, outputs));
  auto info = resolve(inputs, backend);
  if (!info.ok()) return info.status();
  const bool on_device = inputs.q.device().is_cuda();
  switch (info->backend) {
    case AttentionBackend::kCpuReference:
      MOEKIT_RETURN_IF_ERROR(cpu::attention_reference(params, inputs, outputs));
      break;
    case AttentionBackend::kReplicated:
      MOEKIT_RETURN_IF_ERROR(on_device
                                 ? cuda::replicated_attention(params, inputs, outputs, workspace, workspace_bytes, stream)
                                 : cpu::attention_replicated(params, inputs, outputs, workspace, workspace_bytes));
      break;
    case AttentionBackend::kCuda:
      MOEKIT_RETURN_IF_ERROR(cuda::shared_attention(params, inputs, outputs, workspace, workspace_bytes, stream));
      break;
    case AttentionBackend::kAuto: return Status::Internal("shared_context_attention: unresolved backend");
  }
  return info;
}

}  // namespace moekit
