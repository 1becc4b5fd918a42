// A build without CUDA: the GPU side of `moekit bench` answers kUnsupported.
#include "bench/layer_bench.h"

namespace moekit::bench {
namespace {
Status no_cuda(const char* what) { return Status::Unsupported(std::string(what) + ": moekit was built without CUDA"); }
}  // namespace

Result<std::vector<Ceiling>> measure_cuda_ceilings() { return no_cuda("measure_cuda_ceilings"); }
Result<std::unique_ptr<LayerBench>> make_cuda_layer_bench(const MoeRunner&, const MoeWeights&, const CudaBenchConfig&) {
  return no_cuda("make_cuda_layer_bench");
}

}  // namespace moekit::bench
