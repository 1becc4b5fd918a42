// Helpers for tests with label `gpu`.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <vector>

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

// Device memory for `count` elements of T, freed at scope exit; p is null when cudaMalloc failed
// (tests assert on it). A zero count still allocates one element, so p is a valid pointer.
template <typename T>
struct DeviceBuffer {
  T* p = nullptr;
  size_t count = 0;
  explicit DeviceBuffer(size_t n) : count(n) {
    if (cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(n, 1) * sizeof(T)) != cudaSuccess) p = nullptr;
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  size_t bytes() const { return count * sizeof(T); }
  void upload(const std::vector<T>& v) const { cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice); }
  std::vector<T> download(size_t n) const {
    std::vector<T> v(n);
    cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return v;
  }
  void poison() const { cudaMemset(p, 0xA5, std::max<size_t>(count, 1) * sizeof(T)); }
};
// Untyped device memory of a byte count.
using DeviceBytes = DeviceBuffer<std::byte>;
