#include "expert_gemm.h"

#include <algorithm>
#include <vector>

#include "moekit/float_formats.h"
#include "parallel.h"

namespace moekit::cpu {
namespace {

// Weight rows decoded together: each thread keeps kRowBlock rows transposed ([k][j]) and advances
// kRowBlock dot products at once, vectorized across the rows, never along k. Every dot product runs
// over k in order whatever kRowBlock is, so the block size changes the speed, never a bit of y.
template <int64_t kRowBlock>
void expert_gemm_blocked(const MoeProblem& p, const MoeWeights& w, Gemm g, int e, int64_t begin, int64_t end, const double* x, double* y) {
  const int64_t N = g == Gemm::k1 ? p.gemm1_rows() : p.hidden;
  const int64_t K = g == Gemm::k1 ? p.hidden : p.intermediate;
  const TensorView& bias = g == Gemm::k1 ? w.w13_bias : w.w2_bias;
  std::vector<double> b(static_cast<size_t>(N), 0.0);
  if (bias.data()) load_elements(bias.data(), bias.dtype(), e * N, N, b.data());
  const int64_t blocks = (N + kRowBlock - 1) / kRowBlock;
#pragma omp parallel if (worth_parallel(N * K * (end - begin + 1)))
  {
    std::vector<double> wt(static_cast<size_t>(K * kRowBlock), 0.0);  // wt[k * kRowBlock + j] = W[n0 + j, k]
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t n0 = blk * kRowBlock, nb = std::min(kRowBlock, N - n0);
      for (int64_t j = 0; j < nb; ++j) dequantize_weight_row(p, w, g, e, n0 + j, wt.data() + j, kRowBlock);
      for (int64_t r = begin; r < end; ++r) {
        const double* xr = x + r * K;
        double acc[kRowBlock] = {};
        for (int64_t k = 0; k < K; ++k) {
          const double xk = xr[k];
          const double* wk = wt.data() + k * kRowBlock;
#pragma omp simd
          for (int64_t j = 0; j < kRowBlock; ++j) acc[j] += xk * wk[j];
        }
        for (int64_t j = 0; j < nb; ++j) y[r * N + n0 + j] = acc[j] + b[n0 + j];
      }
    }
  }
}

}  // namespace

void expert_gemm(const MoeProblem& p, const MoeWeights& w, Gemm g, int e, int64_t begin, int64_t end, const double* x, double* y,
                 int row_block) {
  if (begin == end) return;
  switch (row_block) {
    case 4: return expert_gemm_blocked<4>(p, w, g, e, begin, end, x, y);
    case 16: return expert_gemm_blocked<16>(p, w, g, e, begin, end, x, y);
    default: return expert_gemm_blocked<kDefaultRowBlock>(p, w, g, e, begin, end, x, y);
  }
}

}  // namespace moekit::cpu
