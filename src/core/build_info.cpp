#include <omp.h>

#include "moekit/build_config.h"
#include "moekit/system_info.h"

namespace moekit {

BuildInfo build_info() {
  return BuildInfo{
      .version = MOEKIT_VERSION_STRING,
      .cuda = MOEKIT_WITH_CUDA != 0,
      .cuda_archs = MOEKIT_CUDA_ARCHS_STRING,
      .cutlass_version = MOEKIT_CUTLASS_VERSION_STRING,
      .build_type = MOEKIT_BUILD_TYPE_STRING,
      .cxx_compiler = MOEKIT_CXX_COMPILER_STRING,
      .cuda_compiler = MOEKIT_WITH_CUDA ? MOEKIT_CUDA_COMPILER_STRING : "",
  };
}

namespace detail {
int cpu_threads() { return omp_get_max_threads(); }
}  // namespace detail

}  // namespace moekit
