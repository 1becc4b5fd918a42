// The few CUDA runtime services the core needs, behind a plain interface so that the core compiles
// without CUDA. src/cuda/device_runtime.cpp implements it with the CUDA runtime;
// src/core/device_runtime_none.cpp answers "unsupported" in CPU-only builds.
#pragma once

#include <cstddef>

#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit::detail {

Status device_malloc(void** ptr, size_t bytes, int device_index);
void device_free(void* ptr, int device_index) noexcept;
// Synchronous copy of `bytes` between any two of host and CUDA memory.
Status memcpy_sync(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
// Synchronous copy of `height` rows of `width` bytes, `spitch` / `dpitch` bytes apart (cudaMemcpy2D),
// between any two of host and CUDA memory.
Status memcpy2d_sync(void* dst, size_t dpitch, Device dst_device, const void* src, size_t spitch, Device src_device,
                     size_t width, size_t height);
// Waits for all work queued on the device.
Status device_sync(int device_index);

}  // namespace moekit::detail
