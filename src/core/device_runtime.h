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
// A strided side of memcpy3d_sync: row r of slice z starts at ptr + (z * slice_rows + r) * pitch.
struct PitchedSide {
  void* ptr;
  size_t pitch;       // bytes from one row to the next
  size_t slice_rows;  // rows from one slice to the next
  Device device;
};
// Synchronous copy of `depth` slices of `height` rows of `width` bytes (cudaMemcpy3D), between any
// two of host and CUDA memory.
Status memcpy3d_sync(const PitchedSide& dst, const PitchedSide& src, size_t width, size_t height, size_t depth);
// Waits for all work queued on the device.
Status device_sync(int device_index);

}  // namespace moekit::detail
