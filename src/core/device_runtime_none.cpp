// CPU-only build: every device service answers that CUDA is not part of this build.
#include "device_runtime.h"

namespace moekit::detail {
namespace {
Status not_built() {
  return Status::Unsupported("this moekit was built without CUDA (MOEKIT_CUDA=OFF or no nvcc at configure time)");
}
}  // namespace

Status device_malloc(void**, size_t, int) { return not_built(); }
void device_free(void*, int) noexcept {}
Status memcpy_sync(void*, Device, const void*, Device, size_t) { return not_built(); }
Status memcpy3d_sync(const PitchedSide&, const PitchedSide&, size_t, size_t, size_t) { return not_built(); }
Status device_sync(int) { return not_built(); }

}  // namespace moekit::detail
