// Checks shared by the CPU backend's entry points. Each returns a Status naming the field and value.
#pragma once

#include <initializer_list>
#include <span>
#include <string_view>

#include "moekit/moe_problem.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit::cpu {

// `name` is a host, contiguous tensor of one of `dtypes` with exactly `shape`.
Status check_host_tensor(std::string_view name, const TensorView& t, std::initializer_list<DType> dtypes,
                         std::span<const int64_t> shape);

// Local index of global expert `g`, or -1 when this rank does not hold it.
int local_expert_of(const MoeProblem& problem, const MoeWeights& weights, int g);

}  // namespace moekit::cpu
