// What this build is and what it runs on: the facts `moekit info` prints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moekit {

struct BuildInfo {
  std::string_view version;
  bool cuda = false;
  std::string_view cuda_archs;       // "90a;80", empty without CUDA
  std::string_view cutlass_version;  // empty without CUDA
  std::string_view build_type;
  std::string_view cxx_compiler;
  std::string_view cuda_compiler;
};
BuildInfo build_info();

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int64_t total_memory_bytes = 0;
  int64_t l2_cache_bytes = 0;
  int64_t shared_memory_per_block_optin_bytes = 0;
  int64_t shared_memory_per_sm_bytes = 0;
  int memory_clock_khz = 0;   // 0 if the driver does not report it
  int memory_bus_width_bits = 0;
  int sm_clock_khz = 0;
  std::string pci_bus_id;

  // Datasheet-style peak from clock x bus width (2 transfers per clock); a lead, not a measurement.
  double theoretical_bandwidth_gbps() const {
    return 2.0 * memory_clock_khz * 1e3 * (memory_bus_width_bits / 8.0) / 1e9;
  }
  std::string compute_capability() const { return std::to_string(cc_major) + "." + std::to_string(cc_minor); }
};

struct SystemInfo {
  int cuda_driver_version = 0;   // e.g. 13000; 0 when unknown
  int cuda_runtime_version = 0;
  std::vector<CudaDeviceInfo> devices;
  std::string no_gpu_reason;     // set when devices is empty
  int cpu_threads = 0;           // threads the CPU backend will use (OpenMP)
};
SystemInfo query_system();

}  // namespace moekit
