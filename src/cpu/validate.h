// Checks shared by the CPU backend's entry points (cpu::validate, cpu::route, the quantization
// checks). Each returns a Status whose message starts with the field name: "hidden: shape [3, 41]
// does not match [3, 40]".
#pragma once

#include <initializer_list>
#include <span>
#include <string_view>

#include "moekit/moe_problem.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit::cpu {

// Where a backend's tensors live.
enum class Residence : uint8_t { kHost, kCuda };

// validate_weights / validate_io (moekit/cpu_reference.h) for tensors in `where`: for kCuda the same
// shapes and dtypes are required of device tensors, and values (ids, counts, offsets, the expert map)
// are not read, since that would synchronize with the device.
Status validate_weights_on(const MoeProblem& p, const MoeWeights& w, Residence where);
Status validate_io_on(const MoeProblem& p, const MoeInputs& in, const MoeOutputs& out, Residence where);

// A given tensor the backend being validated may read: host memory (device memory inside
// validate_*_on(kCuda)), contiguous.
Status check_host_placement(std::string_view name, const TensorView& t);

// t's dtype is one of `allowed`; `by` (e.g. "fp8_block") is named in the message when not empty.
Status check_dtype(std::string_view name, const TensorView& t, std::span<const DType> allowed, std::string_view by = {});

// t's shape is `shape`, where a negative extent matches any. `expected` describes the wanted shape
// in the message (default: `shape` itself), e.g. "[T, 8] (num_experts=8)".
Status check_shape(std::string_view name, const TensorView& t, std::span<const int64_t> shape,
                   std::string_view expected = {});

// A required tensor: given, then check_host_placement, check_dtype and check_shape, in that order.
Status check_host_tensor(std::string_view name, const TensorView& t, std::initializer_list<DType> dtypes,
                         std::span<const int64_t> shape, std::string_view expected = {});

// Local index of global expert `g`, or -1 when this rank does not hold it.
int local_expert_of(const MoeProblem& problem, const MoeWeights& weights, int g);

}  // namespace moekit::cpu
