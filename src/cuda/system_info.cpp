#include <cuda_runtime_api.h>

#include "moekit/system_info.h"

namespace moekit {
namespace detail {
int cpu_threads();
}

namespace {

int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return value;
}

}  // namespace

SystemInfo query_system() {
  SystemInfo info;
  info.cpu_threads = detail::cpu_threads();
  (void)cudaDriverGetVersion(&info.cuda_driver_version);
  (void)cudaRuntimeGetVersion(&info.cuda_runtime_version);
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    info.no_gpu_reason = err != cudaSuccess ? std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err)
                                            : std::string("the CUDA runtime reports no devices");
    (void)cudaGetLastError();
    return info;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    CudaDeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    d.sm_count = prop.multiProcessorCount;
    d.total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    d.l2_cache_bytes = prop.l2CacheSize;
    d.shared_memory_per_block_optin_bytes = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
    d.shared_memory_per_sm_bytes = static_cast<int64_t>(prop.sharedMemPerMultiprocessor);
    d.memory_bus_width_bits = prop.memoryBusWidth;
    d.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, i);
    d.sm_clock_khz = attribute(cudaDevAttrClockRate, i);
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), i) == cudaSuccess) d.pci_bus_id = bus;
    info.devices.push_back(std::move(d));
  }
  if (info.devices.empty()) info.no_gpu_reason = "cudaGetDeviceProperties failed for every device";
  return info;
}

}  // namespace moekit
