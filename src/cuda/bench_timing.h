// Device timing for `moekit bench` and `moekit tune`: CUDA-graph replays over rotated weight copies
// (how both time a layer), CUDA-event timing of a launch, and a read-bandwidth probe. Plain C++ (no
// CUDA types). In a build without CUDA every call answers kUnsupported (src/attention/cuda_none.cpp).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "moekit/status.h"

namespace moekit::cuda {

// One CUDA graph per weight copy of what `enqueue(copy, stream)` puts on a stream, replayed back to
// back in turn (copy i % copies for the i-th replay). This is the protocol of the table and
// of a serving engine's decode step: one replay's first kernels may start under the previous one's
// last (programmatic dependent launch), nothing runs between them, and the rotation keeps the
// weights one replay reads out of the L2 the previous one left (the caller makes enough copies:
// rotated_weight_copies). `moekit bench` and the tuner's worker time with it, so a tuned row wins
// under the same protocol that later measures it.
class GraphReplays {
 public:
  // Captures enqueue(copy, stream) for copy = 0 .. copies - 1 on a non-blocking stream the object
  // owns. Nothing runs. Fails with the enqueue's own error (with "during graph capture") or CUDA's.
  static Result<GraphReplays> capture(int copies, const std::function<Status(int copy, void* stream)>& enqueue);

  GraphReplays(GraphReplays&&) noexcept;
  GraphReplays& operator=(GraphReplays&&) noexcept;
  ~GraphReplays();  // waits for the stream, then frees the graphs and the stream

  // `warmup` untimed rounds over every copy, then `samples` samples, each the mean time in
  // microseconds of `replays` back-to-back replays between two events.
  Result<std::vector<double>> time(int warmup, int replays, int samples) const;

  // One replay of `copy`, waited for (e.g. to read the output of a whole call after timing steps).
  Status replay(int copy) const;

  int copies() const;

 private:
  struct Impl;
  explicit GraphReplays(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// How many weight copies a replay rotates through: enough that the weight bytes the smallest call
// reads (`bytes_per_call`, e.g. top_k experts) exceed twice the L2 cache, within half the free
// device memory (`bytes_per_copy` each); from 1 to 16.
Result<int> rotated_weight_copies(double bytes_per_call, double bytes_per_copy);

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
