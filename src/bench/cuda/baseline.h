// The in-tree baseline of `moekit bench` on a GPU: the obvious MoE layer. With the routing the fused
// layer chose (its topk ids and weights, read to the host once per measurement set), the host sorts
// the (token, slot) rows by expert; then, on the stream: a gather kernel, one cublasGemmEx per
// expert with rows for gemm1, an activation kernel, one cublasGemmEx per expert for gemm2, and a
// weighted-combine kernel. Intermediates in the activation dtype, fp32 accumulation. Plain C++ API.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "moekit/moe_problem.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit::bench {

class CublasBaseline {
 public:
  // Declines (kUnsupported, saying why) what it does not implement: quantized weights, f32
  // activations' absence of a tensor-core path is fine; only quant=none, no_combine off.
  static Result<std::unique_ptr<CublasBaseline>> create(const MoeProblem& problem);
  virtual ~CublasBaseline() = default;

  // The permutation for one routing: topk_ids / topk_weights [T * K] on the host. Allocates the
  // device buffers for it (never inside a capture).
  virtual Status set_routing(const std::vector<int32_t>& topk_ids, const std::vector<float>& topk_weights, int64_t tokens) = 0;

  // Enqueues the layer on `stream` (capturable): hidden [T, H] and out [T, H] on the device,
  // weights w13/w2 on the device.
  virtual Status enqueue(const MoeWeights& weights, const TensorView& hidden, const TensorView& out, void* stream) = 0;

  // The reference of `moekit bench --batched-reference`: the layer's two GEMMs alone, as a dense GEMM
  // library runs them where routing is perfectly even. The rows topk_ids routes to local experts are
  // spread over every local expert, ceil(rows / E_local) each; gemm1 ([E, m, H] x W13^T) and gemm2
  // ([E, m, I] x W2^T) are one cublasGemmStridedBatchedEx each, on rows filled with random values (no
  // gather, activation, combine, partial tiles or routing). Independent of set_routing. Allocates
  // (never inside a capture); returns m (0: no routed rows, nothing to time).
  virtual Result<int64_t> set_batched(const std::vector<int32_t>& topk_ids) = 0;
  // Enqueues the two batched GEMMs on `stream` (capturable), with the weights on the device.
  virtual Status enqueue_batched(const MoeWeights& weights, void* stream) = 0;
  // The batched reference's rows of `gemm` (1 or 2) as the last enqueue_batched left them, copied to
  // the host after a device synchronize: in [E_local, m, k] and out [E_local, m, n] in the activation
  // dtype (so a test can check the strides against a product of its own). kInvalidArgument for another
  // gemm, or before set_batched has found rows.
  virtual Status read_batched(int gemm, Tensor& in, Tensor& out) const = 0;
  // Device bytes held for the per-expert layer (set_routing's row buffers): 0 until set_routing, so
  // `--batched-reference --no-baseline` allocates none of them.
  virtual size_t layer_buffer_bytes() const = 0;
};

}  // namespace moekit::bench
