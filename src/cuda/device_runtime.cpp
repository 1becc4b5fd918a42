#include "../core/device_runtime.h"

#include <cuda_runtime_api.h>

#include <string>

#include "cuda_check.h"

namespace moekit::detail {

Status device_malloc(void** ptr, size_t bytes, int device_index) {
  *ptr = nullptr;
  if (bytes == 0) return Status::Ok();
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_index));
  const cudaError_t err = cudaMalloc(ptr, bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls are unaffected
    return Status::OutOfMemory("cudaMalloc of " + std::to_string(bytes) + " bytes on cuda:" + std::to_string(device_index) + " failed");
  }
  return cuda_status(err, "cudaMalloc", __FILE__, __LINE__);
}

void device_free(void* ptr, int device_index) noexcept {
  if (ptr == nullptr) return;
  if (cudaSetDevice(device_index) == cudaSuccess) (void)cudaFree(ptr);
}

namespace {
cudaMemcpyKind copy_kind(Device dst_device, Device src_device) {
  return dst_device.is_cpu() ? (src_device.is_cpu() ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost)
                             : (src_device.is_cpu() ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice);
}

// cudaMemcpy returns before a device-to-device copy, or the DMA of a copy from pageable host memory,
// has finished (the CUDA runtime's "API synchronization behavior"): work a caller then queues on a
// non-blocking stream, which does not wait for the legacy stream, could read the old bytes. Waiting
// for the legacy stream, where the copy runs, makes these copies synchronous as their names say.
Status finish_copy() {
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cudaStreamLegacy));
  return Status::Ok();
}
}  // namespace

Status memcpy_sync(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, src, bytes, copy_kind(dst_device, src_device)));
  return finish_copy();
}

Status memcpy3d_sync(const PitchedSide& dst, const PitchedSide& src, size_t width, size_t height, size_t depth) {
  cudaMemcpy3DParms p{};
  p.srcPtr = cudaPitchedPtr{src.ptr, src.pitch, width, src.slice_rows};  // ptr, pitch, xsize, ysize
  p.dstPtr = cudaPitchedPtr{dst.ptr, dst.pitch, width, dst.slice_rows};
  p.extent = cudaExtent{width, height, depth};
  p.kind = copy_kind(dst.device, src.device);
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaMemcpy3D(&p));
  return finish_copy();
}

Status device_sync(int device_index) {
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_index));
  MOEKIT_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return Status::Ok();
}

}  // namespace moekit::detail
