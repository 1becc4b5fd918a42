// A build without CUDA: the moekit_cuda entry point the runner layer calls answers kUnsupported.
// (Device tensors cannot be allocated in such a build, so make_random_layer fails before it gets
// here; the message is for direct callers.)
#include "cuda/random_fill.h"

namespace moekit::cuda {

Status fill_uniform_device(const TensorView&, double, uint64_t, uint64_t) {
  return Status::Unsupported("fill_uniform_device: moekit was built without CUDA");
}

}  // namespace moekit::cuda
