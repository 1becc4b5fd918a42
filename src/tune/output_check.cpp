#include "tune/output_check.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "moekit/float_formats.h"

namespace moekit::tune {

OutputError compare_outputs(const TensorView& got, const TensorView& want) {
  OutputError e;
  const int64_t bytes = got.storage_bytes();
  e.bitwise = std::equal(static_cast<const uint8_t*>(got.data()), static_cast<const uint8_t*>(got.data()) + bytes,
                         static_cast<const uint8_t*>(want.data()));
  double dot = 0, gg = 0, ww = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = load_element(got.data(), got.dtype(), i), w = load_element(want.data(), want.dtype(), i);
    if (std::isnan(g) && std::isnan(w)) continue;
    if (!std::isfinite(g)) {
      ++e.non_finite;
      continue;
    }
    e.max_ref = std::max(e.max_ref, std::abs(w));
    const double d = std::abs(g - w);
    if (d > 0) ++e.mismatched;
    e.max_abs = std::max(e.max_abs, d);
    dot += g * w;
    gg += g * g;
    ww += w * w;
  }
  e.normalized = e.max_ref > 0 ? e.max_abs / e.max_ref : e.max_abs;
  e.cosine = gg > 0 && ww > 0 ? dot / std::sqrt(gg * ww) : (gg == ww ? 1.0 : 0.0);
  return e;
}

double refcheck_tolerance(DType t) { return t == DType::kF32 ? 1e-5 : t == DType::kF16 ? 4 * 0x1p-11 : 4 * 0x1p-8; }

namespace {

bool low_precision_activations(QuantScheme q) {
  switch (q) {
    case QuantScheme::kFp8PerTensor:
    case QuantScheme::kFp8PerToken:
    case QuantScheme::kFp8Block:
    case QuantScheme::kInt8PerToken:
    case QuantScheme::kMxfp4Mxfp8:
    case QuantScheme::kNvfp4:
    case QuantScheme::kW4A8: return true;
    default: return false;
  }
}

}  // namespace

Acceptance accept_output(const MoeProblem& p, const OutputError& e) {
  Acceptance a;
  if (low_precision_activations(p.quant)) {
    a.metric = "cosine", a.value = 1.0 - e.cosine, a.limit = 1e-3;
  } else {
    a.metric = "rel_err", a.value = e.normalized, a.limit = refcheck_tolerance(p.activation_dtype);
  }
  a.passed = e.non_finite == 0 && a.value <= a.limit;
  if (e.non_finite > 0) a.why = fmt::format("{} non-finite output elements (unwritten, or NaN)", e.non_finite);
  else if (!a.passed) a.why = fmt::format("{} = {:.3e} exceeds {:.1e}", a.metric, a.value, a.limit);
  return a;
}

void poison_nan(const TensorView& t) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t i = 0; i < t.numel(); ++i) store_element(t.data(), t.dtype(), i, nan);
}

}  // namespace moekit::tune
