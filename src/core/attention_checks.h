// Tensor checks shared by the attention entry points (src/core/attention.cpp) and the cache
// (src/attention/): one wording for every shape, dtype and layout error.
#pragma once

#include <span>
#include <string_view>

#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit::detail {

// `t` is given, has `dtype`, expected.size() dims with the given extents (-1: any) and is
// contiguous. `dims` names the dimensions ("[B, Hq, Lq, D]"), `dtype_source` where the dtype comes
// from ("params.dtype"). Messages: "q: shape [3, 4, 1, 32] does not match [B, Hq, Lq, D] = [2, 4, 1, 32]".
Status check_attention_tensor(std::string_view name, const TensorView& t, DType dtype, std::string_view dims,
                              std::span<const int64_t> expected, std::string_view dtype_source);

}  // namespace moekit::detail
