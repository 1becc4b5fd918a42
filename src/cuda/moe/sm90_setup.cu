// The sm_90a grouped GEMM's per-group setup kernel (Sm90SetupJob): one launch for one GEMM, or for
// both GEMMs of an overlapped pair, whose setups then cost the layer one kernel instead of two
// (docs/perf-notes.md step 28). Plain CUDA: the CUTLASS side (sm90_grouped_gemm_kernel.cuh) fills
// the jobs with its scratch layout and order word, and checks that its stride and shape types are
// the plain integers written here.
#include <algorithm>
#include <string>

#include "cuda/moe/pdl.cuh"
#include "cuda/moe/sm90_grouped_gemm.h"

namespace moekit::cuda::moe {
namespace {

constexpr int kSetupThreads = 128;

// Job blockIdx.y, one thread a group.
__global__ void sm90_setup_kernel(Sm90SetupJob first, Sm90SetupJob second) {
  // Launched with PDL: wait for the kernel before, whose GEMM may still read this scratch; without
  // PDL both calls do nothing.
  pdl_enter();
  const Sm90SetupJob& j = blockIdx.y == 0 ? first : second;
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e == 0) {
    j.words[0] = 0;
    j.words[1] = j.order;
    j.words[2] = 0;
    j.words[3] = j.split;
  }
  if (j.split != 0) {  // the tail split's flags (a CTA's partial is ready when its flag is not 0)
    int* flags = reinterpret_cast<int*>(j.split & kSm90SplitAddressMask);
    for (int i = e; i < kSm90SplitFlags; i += gridDim.x * blockDim.x) flags[i] = 0;
  }
  if (e >= j.experts) return;
  // Clamp to [0, max_rows] so that a bad offset array cannot send the kernel past A or D.
  int64_t begin = min(max(j.offsets[e], int64_t{0}), j.max_rows);
  int64_t end = min(max(j.offsets[e + 1], begin), j.max_rows);
  // A part of the rows (Sm90RowPart): the head ends where the tall tail begins.
  if (j.part != Sm90RowPart::kAll) {
    const int64_t tail_begin = end - sm90_tall_tail_rows(end - begin);
    if (j.part == Sm90RowPart::kHead)
      end = tail_begin;
    else
      begin = tail_begin;
  }
  j.shapes[3 * e] = static_cast<int>(end - begin);
  j.shapes[3 * e + 1] = j.n;
  j.shapes[3 * e + 2] = j.k;
  j.ptr_a[e] = j.a + begin * j.k * j.ab_bytes;
  j.ptr_b[e] = j.b + static_cast<int64_t>(e) * j.n * j.k * j.ab_bytes;
  j.ptr_d[e] = j.d + begin * j.n_out * j.d_bytes;
  j.stride_a[e] = j.k;  // (M, K, L): row stride K
  j.stride_b[e] = j.k;  // (N, K, L): row stride K
  j.stride_d[e] = j.n_out;
}

}  // namespace

Status launch_sm90_setups(const Sm90SetupJob* jobs, int count, bool pdl, void* stream) {
  if (count < 1 || count > 2) return Status::InvalidArgument("sm90 setup: " + std::to_string(count) + " jobs (1 or 2)");
  if (jobs == nullptr) return Status::InvalidArgument("sm90 setup: null jobs");
  int experts = 0;
  for (int i = 0; i < count; ++i) {
    const Sm90SetupJob& j = jobs[i];
    // The message's prefix, built only on the error paths (every sm_90a launch passes here).
    auto which = [i] { return "sm90 setup: job " + std::to_string(i) + ": "; };
    if (j.experts <= 0) return Status::InvalidArgument(which() + "experts=" + std::to_string(j.experts) + " (must be positive)");
    if (j.n <= 0 || j.k <= 0 || j.n_out <= 0 || j.max_rows < 0)
      return Status::InvalidArgument(which() + "n=" + std::to_string(j.n) + ", k=" + std::to_string(j.k) + ", n_out=" +
                                     std::to_string(j.n_out) + ", max_rows=" + std::to_string(j.max_rows) +
                                     " (n, k, n_out must be positive, max_rows not negative)");
    if (j.offsets == nullptr || j.shapes == nullptr || j.words == nullptr || j.ptr_a == nullptr || j.ptr_b == nullptr ||
        j.ptr_d == nullptr || j.stride_a == nullptr || j.stride_b == nullptr || j.stride_d == nullptr)
      return Status::InvalidArgument(which() + "null offsets or scratch array");
    if (j.part != Sm90RowPart::kAll && j.part != Sm90RowPart::kHead && j.part != Sm90RowPart::kTail)
      return Status::InvalidArgument(which() + "part=" + std::to_string(static_cast<int>(j.part)) + " (0 all, 1 head, 2 tail)");
    if ((j.split & ~(kSm90SplitAddressMask | kSm90SplitAlways)) != 0)
      return Status::InvalidArgument(which() + "split=" + std::to_string(j.split) + " (the tail split's area must be 16-byte aligned)");
    experts = std::max(experts, j.experts);
  }
  const dim3 grid((experts + kSetupThreads - 1) / kSetupThreads, count);
  return launch_kernel_pdl("sm90 setup kernel", pdl, sm90_setup_kernel, {grid, dim3(kSetupThreads)}, stream, jobs[0],
                           jobs[count - 1]);
}

}  // namespace moekit::cuda::moe
