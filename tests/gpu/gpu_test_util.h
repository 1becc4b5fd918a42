// Helpers for tests with label `gpu`.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include "moekit/system_info.h"

// Skips the current test, saying why, when no CUDA device can be used.
#define MOEKIT_REQUIRE_GPU()                                                             \
  do {                                                                                   \
    const auto moekit_sys_ = ::moekit::query_system();                                   \
    if (moekit_sys_.devices.empty()) GTEST_SKIP() << "no GPU: " << moekit_sys_.no_gpu_reason; \
  } while (0)

#define MOEKIT_ASSERT_CUDA(call)                                                   \
  do {                                                                             \
    const cudaError_t moekit_err_ = (call);                                        \
    ASSERT_EQ(moekit_err_, cudaSuccess) << #call << ": " << cudaGetErrorString(moekit_err_); \
  } while (0)
