// The routing kernel: a warp per token (routing_device.cuh), a few warps per block.
#include <algorithm>

#include <string>

#include "cuda/moe/launch_utils.cuh"
#include "cuda/moe/moe_launch.h"
#include "cuda/moe/pdl.cuh"
#include "cuda/moe/routing_device.cuh"

namespace moekit::cuda::moe {
namespace {

constexpr int kMaxRouteWarps = 4;
constexpr size_t kDefaultSmem = 48 * 1024;

__global__ void route_kernel(RouteArgs a, int warps, size_t per_warp) {
  extern __shared__ __align__(16) unsigned char smem[];
  pdl_enter();
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * warps + warp;
  if (t >= a.tokens) return;
  route_token_warp(a, t, smem + warp * per_warp, lane);
}

}  // namespace

size_t route_warp_smem_bytes(int experts, int n_group) { return route_smem_per_warp(experts, n_group); }

Status check_route_fits(int experts, int n_group, int64_t smem_per_block) {
  const size_t need = route_smem_per_warp(experts, n_group);
  if (smem_per_block > 0 && need > static_cast<size_t>(smem_per_block))
    return Status::Unsupported("num_experts=" + std::to_string(experts) + ": the CUDA router keeps " + std::to_string(need) +
                               " bytes of scores per token in shared memory, more than this GPU's " + std::to_string(smem_per_block) +
                               " per block");
  return Status::Ok();
}

Status launch_route(const RouteArgs& a, void* stream) {
  if (a.tokens == 0) return Status::Ok();
  MOEKIT_RETURN_IF_ERROR(check_route_fits(a.experts, a.n_group, max_smem_optin()));
  const size_t per_warp = route_smem_per_warp(a.experts, a.n_group);
  const int warps = per_warp > kDefaultSmem ? 1 : static_cast<int>(std::min<size_t>(kMaxRouteWarps, kDefaultSmem / per_warp));
  const size_t smem = per_warp * warps;
  MOEKIT_RETURN_IF_ERROR(allow_dynamic_smem(route_kernel, smem));
  const int64_t blocks = ceil_div(a.tokens, warps);
  return launch_kernel("route_kernel", route_kernel, {dim3(static_cast<unsigned>(blocks)), dim3(32 * warps), smem}, stream, a, warps, per_warp);
}

}  // namespace moekit::cuda::moe
