// Device timing for `moekit bench`: CUDA-event timing of a launch and a read-bandwidth probe.
// Plain C++ (no CUDA types). In a build without CUDA every call answers kUnsupported
// (src/attention/cuda_none.cpp).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "moekit/status.h"

namespace moekit::cuda {

// Runs `launch(stream)` `warmup` times, then `iters` times, each of those timed alone with a pair of
// CUDA events on one stream the call creates. Before each run, `flush_bytes` of scratch device
// memory are overwritten (cudaMemsetAsync), so the L2 cache holds none of the inputs and the host
// has time to enqueue the launch before the GPU reaches it. Returns each timed run in microseconds.
Result<std::vector<double>> time_launches(const std::function<Status(void* stream)>& launch, int warmup, int iters,
                                          size_t flush_bytes);

// Device-memory read bandwidth in bytes per second: a streaming kernel (16-byte loads, grid-stride)
// reads `bytes` bytes; the median of `iters` event-timed runs.
Result<double> measure_read_bandwidth(size_t bytes, int iters);

}  // namespace moekit::cuda
