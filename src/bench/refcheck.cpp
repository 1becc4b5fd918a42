#include "bench/refcheck.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "moekit/cpu_reference.h"
#include "moekit/float_formats.h"

namespace moekit::bench {
namespace {
// The first n rows of a [T, ...] host tensor; an undefined view stays undefined.
TensorView first_rows(const TensorView& t, int64_t n) {
  if (!t.defined()) return t;
  std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  shape[0] = n;
  return TensorView::create(t.data(), t.dtype(), shape, {}, t.device()).value();
}
}  // namespace

double relative_l2_error(const TensorView& got, const TensorView& ref) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double g = load_element(got.data(), got.dtype(), i), r = load_element(ref.data(), ref.dtype(), i);
    if (std::isnan(g)) return std::nan("");
    num += (g - r) * (g - r);
    den += r * r;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

double refcheck_limit(DType t) { return t == DType::kF32 ? 1e-5 : t == DType::kF16 ? 2e-3 : 1e-2; }

Result<double> refcheck_first_tokens(const MoeProblem& p, const MoeWeights& weights, const MoeInputs& in, const TensorView& out,
                                     int64_t tokens) {
  const int64_t n = std::min(tokens, in.hidden.size(0));
  if (n == 0) return 0.0;
  MoeInputs part = in;
  part.hidden = first_rows(in.hidden, n);
  part.router_logits = first_rows(in.router_logits, n);
  part.topk_ids = first_rows(in.topk_ids, n);
  part.topk_weights = first_rows(in.topk_weights, n);
  auto ref = Tensor::empty(out.dtype(), {n, out.size(1)});
  if (!ref.ok()) return ref.status();
  MoeOutputs ro;
  ro.out = ref->view();
  MOEKIT_RETURN_IF_ERROR(cpu::run_reference(p, weights, part, ro).with_context("reference"));
  return relative_l2_error(first_rows(out, n), ref->view());
}

}  // namespace moekit::bench
