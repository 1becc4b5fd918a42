// Random weights made in device memory: what fill_uniform (moekit/random_layer.h) writes on the host,
// bit for bit, without building gigabytes on the host and copying them (the tuner's workers on large
// presets, docs/tune.md). Plain C++ (no CUDA types); in a build without CUDA the call answers
// kUnsupported (src/runner/cuda_none.cpp).
#pragma once

#include <cstdint>

#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit::cuda {

// Fills `t` (contiguous, on a CUDA device; bf16, f16 or f32) with element i = scale *
// uniform_at(seed, stream, i) rounded as the host rounds it: bf16 is the float's top 16 bits (as
// fill_uniform), f16 and f32 round the double to nearest even (as store_element). Returns after the
// kernel has finished, so a launch error is reported here.
Status fill_uniform_device(const TensorView& t, double scale, uint64_t seed, uint64_t stream);

}  // namespace moekit::cuda
