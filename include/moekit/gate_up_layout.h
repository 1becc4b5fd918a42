// W13's gate and up rows from the concatenated layout (all gate rows, then all up rows: the w1;w3 of
// Mixtral, Qwen and DeepSeek checkpoints) to the interleaved one (gate i at row 2i, up i at row
// 2i + 1: GPT-OSS's gate_up_proj). On Hopper the sm_90a kernel computes the gated activation in
// gemm1's epilogue only with interleaved rows (docs/cuda-backend.md); converting once at load time
// and setting MoeProblem::gate_up_layout = GateUpLayout::kInterleaved gives the same layer output.
#pragma once

#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit {

// A new tensor on w13's device: w13 is [E, 2I, ...] (a weight [E, 2I, H], its per-row scales
// [E, 2I] or [E, 2I, groups], or gemm1's bias [E, 2I]), contiguous, with whole bytes per row; row
// r < I of each expert goes to row 2r, row I + r to row 2r + 1. Synchronous. Block scales that span
// several rows ([E, 2I / 128, ...]) have no such form: convert their weights only where the scheme
// is per row or per tensor.
Result<Tensor> interleave_gate_up(const TensorView& w13);

}  // namespace moekit
