// Turns a cuBLAS / cuBLASLt error into a Status naming the call, file and line.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <string>

#include "moekit/status.h"

namespace moekit::bench::detail {

inline Status cublas_status(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Status::CudaError(std::string(what) + " failed: " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ") at " +
                           file + ":" + std::to_string(line));
}

}  // namespace moekit::bench::detail

#define MOEKIT_CUBLAS_RETURN_IF_ERROR(call) \
  MOEKIT_RETURN_IF_ERROR(::moekit::bench::detail::cublas_status((call), #call, __FILE__, __LINE__))
