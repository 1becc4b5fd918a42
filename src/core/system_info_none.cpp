// CPU-only build: there is no GPU to report.
#include "moekit/system_info.h"

namespace moekit {
namespace detail {
int cpu_threads();
}

SystemInfo query_system() {
  SystemInfo info;
  info.no_gpu_reason = "moekit was built without CUDA";
  info.cpu_threads = detail::cpu_threads();
  return info;
}

}  // namespace moekit
