// Timing one MoE layer on one backend: the interface `moekit bench` drives, with a CPU
// implementation (cpu_layer_bench.cpp, host clock) and a CUDA one (cuda/layer_bench_cuda.cpp,
// CUDA-graph replay, the cuBLAS baseline). Plain C++: no CUDA types.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/report.h"
#include "moekit/runner.h"

namespace moekit::bench {

struct TimingOptions {
  int warmup = 2;
  int iters = 1;        // calls per timed sample (GPU: graph replays between two events); the sample is their mean
  int reps = 3;         // timed samples per measurement set
  bool stages = false;  // also time each step of the plan on its own
  bool baseline = true; // also time the cuBLAS baseline (GPU only)
  bool batched_reference = false;  // also time the two GEMMs alone, evenly routed (CublasBaseline::set_batched; GPU only)
};

// One measurement set: one routing (fresh router logits), timed `reps` times.
struct SetTiming {
  std::vector<double> layer_us;                  // the whole layer, per call
  std::vector<double> baseline_us;               // empty when there is no baseline
  std::vector<double> batched_us;                // the batched reference; empty when not asked or not possible
  int64_t batched_rows_per_expert = 0;           // its rows per local expert
  std::vector<std::string> step_names;           // the plan's steps (with --stages)
  std::vector<std::vector<double>> step_us;      // [step][sample]
  std::vector<int32_t> topk_ids;                 // the routing decision [T * K], global expert ids
};

class LayerBench {
 public:
  virtual ~LayerBench() = default;
  // Times the layer on host inputs (hidden states and router logits of T tokens; copied to the
  // device first where the backend needs it).
  virtual Result<SetTiming> measure(const MoeInputs& host_inputs, const TimingOptions& options) = 0;
  // The output of the last call `measure` made, on the host [T, H] (for --refcheck).
  virtual Result<Tensor> last_output() = 0;
  // The baseline's output of the last call (host), or kNotFound when there is no baseline.
  virtual Result<Tensor> last_baseline_output() = 0;
  // What the baseline is, or why there is none.
  virtual std::string baseline_note() const = 0;
};

// The runner and the weights must outlive the bench.
Result<std::unique_ptr<LayerBench>> make_cpu_layer_bench(const MoeRunner& runner, const MoeWeights& weights);

// The device's ceilings: read bandwidth, bf16 and fp8 dense GEMM through cuBLAS (cuda/ceilings.cu).
// In a build without CUDA: kUnsupported.
Result<std::vector<Ceiling>> measure_cuda_ceilings();
// Copies the weights to the device (`copies` times, so the bytes one call reads exceed the L2 cache
// when the layer is small: cuda::rotated_weight_copies) and times on the GPU. In a build without
// CUDA: kUnsupported.
struct CudaBenchConfig {
  int weight_copies = 1;
  // Whether to create the cuBLAS baseline (a handle and its workspace). `bench --ab` creates it for
  // its first variant only, the one that times it; `--no-baseline` for none.
  bool baseline = true;
};
Result<std::unique_ptr<LayerBench>> make_cuda_layer_bench(const MoeRunner& runner, const MoeWeights& host_weights,
                                                          const CudaBenchConfig& config);

}  // namespace moekit::bench
