// Turns a CUDA runtime error into a Status naming the call, file and line.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "moekit/status.h"

namespace moekit::detail {

inline Status cuda_status(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return Status::Ok();
  return Status::CudaError(std::string(what) + " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                           ") at " + file + ":" + std::to_string(line));
}

}  // namespace moekit::detail

#define MOEKIT_CUDA_RETURN_IF_ERROR(call) \
  MOEKIT_RETURN_IF_ERROR(::moekit::detail::cuda_status((call), #call, __FILE__, __LINE__))
