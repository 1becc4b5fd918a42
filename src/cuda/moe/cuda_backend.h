// The CUDA MoE backend: its stage implementations, checks and scratch, registered in the runner's
// Registry. Plain C++ (no CUDA headers).
#pragma once

#include "moekit/stages.h"

namespace moekit::cuda {

// Adds the cuda.* stage implementations and the backend hooks.
Status register_cuda_backend(Registry& registry);

}  // namespace moekit::cuda
