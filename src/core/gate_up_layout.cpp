#include "moekit/gate_up_layout.h"

#include <cstring>

#include <fmt/format.h>

#include "device_runtime.h"

namespace moekit {

Result<Tensor> interleave_gate_up(const TensorView& w13) {
  if (!w13.defined() || w13.ndim() < 2)
    return Status::InvalidArgument(fmt::format("interleave_gate_up: w13 must be [E, 2I, ...], got {}", w13.describe()));
  if (!w13.is_contiguous())
    return Status::Unsupported(fmt::format("interleave_gate_up: w13 {} must be contiguous", w13.describe()));
  const int64_t experts = w13.shape()[0], rows = w13.shape()[1];
  if (rows % 2 != 0)
    return Status::InvalidArgument(fmt::format("interleave_gate_up: w13's dimension 1 (2I) must be even, got {} in {}", rows, w13.describe()));
  int64_t per_row = 1;
  for (int d = 2; d < w13.ndim(); ++d) per_row *= w13.shape()[d];
  const int64_t row_bytes = dtype_storage_bytes(w13.dtype(), per_row);
  if (experts * rows > 0 && row_bytes * experts * rows != w13.storage_bytes())
    return Status::Unsupported(fmt::format("interleave_gate_up: the rows of {} do not start on whole bytes", w13.describe()));
  auto out = Tensor::empty(w13.dtype(), w13.shape(), w13.device());
  if (!out.ok()) return out.status();
  const int64_t inter = rows / 2;
  if (experts == 0 || inter == 0 || row_bytes == 0) return out;
  const auto* src = static_cast<const char*>(w13.data());
  auto* dst = static_cast<char*>(out->data());
  // Gate rows (the first I of each expert) to the even rows, up rows to the odd ones.
  for (int half = 0; half < 2; ++half) {
    const char* from = src + half * inter * row_bytes;
    char* into = dst + half * row_bytes;
    if (w13.device().is_cpu()) {
      for (int64_t e = 0; e < experts; ++e)
        for (int64_t r = 0; r < inter; ++r)
          std::memcpy(into + (e * rows + 2 * r) * row_bytes, from + (e * rows + r) * row_bytes, static_cast<size_t>(row_bytes));
    } else {
      // One strided copy a half: rows row_bytes apart in the source (2I to an expert), 2 * row_bytes
      // apart in the destination (I to an expert), the expert as the third dimension.
      const detail::PitchedSide to{into, static_cast<size_t>(2 * row_bytes), static_cast<size_t>(inter), w13.device()};
      const detail::PitchedSide from_side{const_cast<char*>(from), static_cast<size_t>(row_bytes), static_cast<size_t>(rows),
                                          w13.device()};
      MOEKIT_RETURN_IF_ERROR(detail::memcpy3d_sync(to, from_side, static_cast<size_t>(row_bytes), static_cast<size_t>(inter),
                                                   static_cast<size_t>(experts)));
    }
  }
  return out;
}

}  // namespace moekit
