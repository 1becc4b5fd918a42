// A build without CUDA: the moekit_cuda entry points that the attention layer and `moekit bench`
// call answer kUnsupported. (Device tensors cannot exist in such a build, so the dispatcher never
// reaches them; the messages are for direct callers.)
#include "cuda/attention/attention_cuda.h"
#include "cuda/bench_timing.h"

namespace moekit::cuda {
namespace {
Status no_cuda(const char* what) { return Status::Unsupported(std::string(what) + ": moekit was built without CUDA"); }
}  // namespace

Result<AttentionLaunchInfo> shared_attention_launch_info(const AttentionParams&, const AttentionInputs&, const AttentionOptions&) {
  return no_cuda("shared_attention_launch_info");
}
Result<size_t> shared_attention_workspace_size(const AttentionParams&, const AttentionInputs&, const AttentionOptions&) {
  return no_cuda("shared_attention_workspace_size");
}
Status shared_attention(const AttentionParams&, const AttentionInputs&, const AttentionOutputs&, void*, size_t, void*,
                        const AttentionOptions&) {
  return no_cuda("shared_attention");
}
Result<size_t> replicated_workspace_size(const AttentionParams&, const AttentionInputs&) {
  return no_cuda("replicated_workspace_size");
}
Status replicated_attention(const AttentionParams&, const AttentionInputs&, const AttentionOutputs&, void*, size_t, void*) {
  return no_cuda("replicated_attention");
}
Status replicated_materialize(const AttentionParams&, const AttentionInputs&, void*, size_t, void*) {
  return no_cuda("replicated_materialize");
}
Status replicated_attend_materialized(const AttentionParams&, const AttentionInputs&, const AttentionOutputs&, void*, size_t,
                                      void*) {
  return no_cuda("replicated_attend_materialized");
}
Status append_buffer(DType, int, int, int, int64_t, int64_t, const void*, const void*, const int32_t*, void*, void*, int32_t*,
                     void*) {
  return no_cuda("append_buffer");
}
Status zero_device_memory(void*, size_t, void*) { return no_cuda("zero_device_memory"); }
Status synchronize_stream(void*) { return no_cuda("synchronize_stream"); }

struct GraphReplays::Impl {};
GraphReplays::GraphReplays(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GraphReplays::GraphReplays(GraphReplays&&) noexcept = default;
GraphReplays& GraphReplays::operator=(GraphReplays&&) noexcept = default;
GraphReplays::~GraphReplays() = default;
Result<GraphReplays> GraphReplays::capture(int, const std::function<Status(int, void*)>&) { return no_cuda("GraphReplays::capture"); }
Result<std::vector<double>> GraphReplays::time(int, int, int) const { return no_cuda("GraphReplays::time"); }
Status GraphReplays::replay(int) const { return no_cuda("GraphReplays::replay"); }
int GraphReplays::copies() const { return 0; }
Result<int> rotated_weight_copies(double, double) { return no_cuda("rotated_weight_copies"); }

Result<std::vector<double>> time_launches(const std::function<Status(void*)>&, int, int, size_t) {
  return no_cuda("time_launches");
}
Result<double> measure_read_bandwidth(size_t, int) { return no_cuda("measure_read_bandwidth"); }

}  // namespace moekit::cuda
