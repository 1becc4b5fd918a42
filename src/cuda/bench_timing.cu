// CUDA-graph replays, CUDA-event timing and a streaming read-bandwidth probe for `moekit bench` and
// `moekit tune`.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "cuda/bench_timing.h"
#include "cuda/cuda_check.h"

namespace moekit::cuda {
namespace {

// Owns what a measurement allocates, whatever path it leaves by.
struct Scratch {
  cudaStream_t stream = nullptr;
  void* memory = nullptr;
  std::vector<cudaEvent_t> events;
  ~Scratch() {
    if (stream != nullptr) (void)cudaStreamSynchronize(stream);
    for (cudaEvent_t e : events) (void)cudaEventDestroy(e);
    if (memory != nullptr) (void)cudaFree(memory);
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
  }
};

Status create_events(Scratch& s, int n) {
  for (int i = 0; i < n; ++i) {
    cudaEvent_t e = nullptr;
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));
    s.events.push_back(e);
  }
  return Status::Ok();
}

// Every thread reads 16-byte vectors, four independent loads in flight per iteration. The xor
// keeps the loads alive; the store happens only for a value the data never produces.
__global__ void stream_read_kernel(const uint4* __restrict__ p, int64_t n, unsigned* sink) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n; i += stride) {
    const uint4 a = p[i];
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x9E3779B9u) *sink = acc;
}

}  // namespace

struct GraphReplays::Impl {
  cudaStream_t stream = nullptr;
  std::vector<cudaGraph_t> graphs;
  std::vector<cudaGraphExec_t> execs;
  ~Impl() {
    if (stream != nullptr) (void)cudaStreamSynchronize(stream);
    for (cudaGraphExec_t e : execs) (void)cudaGraphExecDestroy(e);
    for (cudaGraph_t g : graphs) (void)cudaGraphDestroy(g);
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
  }
};

GraphReplays::GraphReplays(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GraphReplays::GraphReplays(GraphReplays&&) noexcept = default;
GraphReplays& GraphReplays::operator=(GraphReplays&&) noexcept = default;
GraphReplays::~GraphReplays() = default;
int GraphReplays::copies() const { return static_cast<int>(impl_->execs.size()); }

Result<GraphReplays> GraphReplays::capture(int copies, const std::function<Status(int copy, void* stream)>& enqueue) {
  if (copies < 1) return Status::InvalidArgument("GraphReplays: copies must be at least 1, got " + std::to_string(copies));
  auto impl = std::make_unique<Impl>();
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking));
  for (int c = 0; c < copies; ++c) {
    cudaGraph_t graph = nullptr;
    // Thread-local mode: a worker thread's own CUDA calls elsewhere do not break this capture.
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(impl->stream, cudaStreamCaptureModeThreadLocal));
    const Status s = enqueue(c, impl->stream);
    const cudaError_t end = cudaStreamEndCapture(impl->stream, &graph);
    if (graph != nullptr) impl->graphs.push_back(graph);
    MOEKIT_RETURN_IF_ERROR(s.with_context("during graph capture"));
    MOEKIT_CUDA_RETURN_IF_ERROR(end);
    cudaGraphExec_t exec = nullptr;
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&exec, graph, 0));
    impl->execs.push_back(exec);
  }
  return GraphReplays(std::move(impl));
}

Result<std::vector<double>> GraphReplays::time(int warmup, int replays, int samples) const {
  if (replays < 1 || samples < 1 || warmup < 0)
    return Status::InvalidArgument("GraphReplays::time: replays (" + std::to_string(replays) + ") and samples (" +
                                   std::to_string(samples) + ") must be at least 1, warmup (" + std::to_string(warmup) +
                                   ") at least 0");
  const std::vector<cudaGraphExec_t>& g = impl_->execs;
  const cudaStream_t stream = impl_->stream;
  for (size_t i = 0; i < static_cast<size_t>(warmup) * g.size(); ++i) MOEKIT_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(g[i % g.size()], stream));
  Scratch s;  // the events, destroyed on every path
  MOEKIT_RETURN_IF_ERROR(create_events(s, 2));
  std::vector<double> us;
  for (int r = 0; r < samples; ++r) {
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(s.events[0], stream));
    for (int i = 0; i < replays; ++i) MOEKIT_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(g[static_cast<size_t>(i) % g.size()], stream));
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(s.events[1], stream));
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(s.events[1]));
    float ms = 0;
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, s.events[0], s.events[1]));
    us.push_back(1e3 * ms / replays);
  }
  return us;
}

Status GraphReplays::replay(int copy) const {
  if (copy < 0 || copy >= copies())
    return Status::InvalidArgument("GraphReplays::replay: copy " + std::to_string(copy) + " is not in [0, " +
                                   std::to_string(copies()) + ")");
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(impl_->execs[static_cast<size_t>(copy)], impl_->stream));
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(impl_->stream));
  return Status::Ok();
}

Result<int> rotated_weight_copies(double bytes_per_call, double bytes_per_copy) {
  int device = 0, l2 = 0;
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  size_t free = 0, total = 0;
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free, &total));
  // In double until clamped: a few bytes a call would ask for more copies than an int holds.
  const double want = std::ceil(2.0 * l2 / std::max(1.0, bytes_per_call));
  const double fit = std::floor(0.5 * static_cast<double>(free) / std::max(1.0, bytes_per_copy));
  return static_cast<int>(std::clamp(std::min(want, fit), 1.0, 16.0));
}

Result<std::vector<double>> time_launches(const std::function<Status(void* stream)>& launch, int warmup, int iters,
                                          size_t flush_bytes) {
  Scratch s;
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  if (flush_bytes > 0) MOEKIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&s.memory, flush_bytes));
  MOEKIT_RETURN_IF_ERROR(create_events(s, 2 * iters));
  for (int i = 0; i < warmup; ++i) MOEKIT_RETURN_IF_ERROR(launch(s.stream));
  for (int i = 0; i < iters; ++i) {
    if (flush_bytes > 0) MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(s.memory, i & 0xFF, flush_bytes, s.stream));
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(s.events[2 * i], s.stream));
    MOEKIT_RETURN_IF_ERROR(launch(s.stream));
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(s.events[2 * i + 1], s.stream));
  }
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s.stream));
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    float ms = 0.0f;
    MOEKIT_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, s.events[2 * i], s.events[2 * i + 1]));
    us.push_back(1e3 * ms);
  }
  return us;
}

Result<double> measure_read_bandwidth(size_t bytes, int iters) {
  int device = 0, sms = 0;
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  Scratch s;
  bytes = bytes / 16 * 16;
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&s.memory, bytes + 16));
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemset(s.memory, 0x5A, bytes + 16));
  const auto* data = static_cast<const uint4*>(s.memory);
  auto* sink = reinterpret_cast<unsigned*>(static_cast<char*>(s.memory) + bytes);
  const int64_t n = static_cast<int64_t>(bytes / 16);
  auto us = time_launches(
      [&](void* stream) {
        stream_read_kernel<<<sms * 4, 512, 0, static_cast<cudaStream_t>(stream)>>>(data, n, sink);
        return detail::cuda_status(cudaGetLastError(), "stream_read_kernel", __FILE__, __LINE__);
      },
      2, iters, 0);
  if (!us.ok()) return us.status();
  std::vector<double> t = *us;
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return static_cast<double>(bytes) / (t[t.size() / 2] * 1e-6);
}

}  // namespace moekit::cuda
