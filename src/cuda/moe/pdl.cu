// pdl_enabled(): whether the layer's launches may overlap (pdl.cuh).
#include <cstdlib>
#include <cstring>

#include "cuda/moe/pdl.cuh"

namespace moekit::cuda::moe {
namespace {

// Compiled with the same -gencode flags as every kernel of this library: the cubin the driver picks
// for it says which instructions the others were compiled with.
__global__ void pdl_probe_kernel() { pdl_enter(); }

}  // namespace

bool pdl_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("MOEKIT_PDL");
    if (env != nullptr && std::strcmp(env, "0") == 0) return false;
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
    cudaFuncAttributes attr = {};
    if (major < 9 || cudaFuncGetAttributes(&attr, pdl_probe_kernel) != cudaSuccess) return false;
    // A kernel JIT-compiled from sm_80 PTX has no griddepcontrol: overlapping it would be a race.
    return attr.binaryVersion >= 90 && attr.ptxVersion >= 90;
  }();
  return enabled;
}

}  // namespace moekit::cuda::moe
