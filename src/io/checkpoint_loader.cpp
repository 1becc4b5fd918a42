// LayerLoader: checked access to one layer's tensors, stacking per-expert tensors, transposing.
#include "io/checkpoint_loader.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "moekit/float_formats.h"

namespace moekit::io {
namespace {

std::string format_shape(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t d : shape) parts.push_back(d == kAny ? "*" : std::to_string(d));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string dtype_list(std::initializer_list<DType> dtypes) {
  std::vector<std::string_view> names;
  for (DType d : dtypes) names.push_back(safetensors_dtype_name(d).value_or(dtype_name(d)));
  return fmt::format("{}", fmt::join(names, " or "));
}

// dst [E, B, A] = src [E, A, B] transposed per expert, in 32x32 tiles.
template <typename T>
void transpose_tiles(const T* src, T* dst, int64_t E, int64_t A, int64_t B) {
  constexpr int64_t kTile = 32;
  for (int64_t e = 0; e < E; ++e) {
    const T* s = src + e * A * B;
    T* d = dst + e * A * B;
    for (int64_t a0 = 0; a0 < A; a0 += kTile)
      for (int64_t b0 = 0; b0 < B; b0 += kTile)
        for (int64_t a = a0; a < std::min(A, a0 + kTile); ++a)
          for (int64_t b = b0; b < std::min(B, b0 + kTile); ++b) d[b * A + a] = s[a * B + b];
  }
}

}  // namespace

std::string LayerLoader::layer_name(std::string_view suffix) const { return fmt::format("model.layers.{}.{}", layer_, suffix); }

Status LayerLoader::missing(const std::string& name) const {
  return Status::NotFound(fmt::format("layer {} ({}): missing tensor '{}'", layer_, model_family_name(cfg_.family), name));
}

Result<TensorView> LayerLoader::require(const std::string& name, std::initializer_list<DType> dtypes, std::vector<int64_t> shape,
                                        std::string_view dims) {
  if (!ckpt_.contains(name)) return missing(name);
  auto info = ckpt_.info(name);
  if (!info.ok()) return info.status();
  if (!info->dtype || std::find(dtypes.begin(), dtypes.end(), *info->dtype) == dtypes.end())
    return Status::InvalidArgument(fmt::format("tensor '{}': dtype {} is not the expected {}", name, info->dtype_name, dtype_list(dtypes)));
  bool match = info->shape.size() == shape.size();
  for (size_t d = 0; match && d < shape.size(); ++d) match = shape[d] == kAny || shape[d] == info->shape[d];
  if (!match)
    return Status::InvalidArgument(
        fmt::format("tensor '{}': shape [{}] does not match {} = {}", name, fmt::join(info->shape, ", "), dims, format_shape(shape)));
  return ckpt_.view(name);
}

Result<TensorView> LayerLoader::stack_experts(int64_t num_experts, const std::function<std::vector<std::string>(int64_t)>& parts,
                                              DType src_dtype, DType dst_dtype, std::vector<int64_t> part_shape, std::string_view dims,
                                              bool interleave_rows) {
  const int64_t nparts = static_cast<int64_t>(parts(0).size());
  const int64_t rows = part_shape[0], cols = part_shape[1];
  const int64_t part_numel = rows * cols;
  auto t = Tensor::empty(dst_dtype, {num_experts, nparts * rows, cols});
  if (!t.ok()) return t.status();
  auto* dst = static_cast<std::byte*>(t->data());
  // Element `i` of part p of expert e lands at this flat index of the stacked tensor.
  auto dst_index = [&](int64_t e, int64_t p, int64_t i) {
    const int64_t expert_first = e * nparts * part_numel;
    if (!interleave_rows) return expert_first + p * part_numel + i;
    return expert_first + ((i / cols) * nparts + p) * cols + i % cols;
  };
  for (int64_t e = 0; e < num_experts; ++e) {
    const std::vector<std::string> names = parts(e);
    for (int64_t p = 0; p < nparts; ++p) {
      auto src = require(names[static_cast<size_t>(p)], {src_dtype}, part_shape, dims);
      if (!src.ok()) return src.status();
      if (src_dtype == dst_dtype) {
        // Whole parts, or one row at a time when the rows interleave (rows of whole bytes: 8-bit or wider).
        const int64_t run = interleave_rows ? cols : part_numel;
        const auto* from = static_cast<const std::byte*>(src->data());
        for (int64_t i = 0; i < part_numel; i += run)
          std::memcpy(dst + dtype_storage_bytes(dst_dtype, dst_index(e, p, i)), from + dtype_storage_bytes(src_dtype, i),
                      static_cast<size_t>(dtype_storage_bytes(src_dtype, run)));
      } else {
        for (int64_t i = 0; i < part_numel; ++i) store_element(dst, dst_dtype, dst_index(e, p, i), load_element(src->data(), src_dtype, i));
      }
    }
  }
  owned_.push_back(std::move(t).value());
  return owned_.back().view();
}

Result<TensorView> LayerLoader::transpose_experts(const TensorView& src) {
  const int64_t E = src.size(0), A = src.size(1), B = src.size(2);
  auto t = Tensor::empty(src.dtype(), {E, B, A});
  if (!t.ok()) return t.status();
  switch (dtype_bits(src.dtype())) {
    case 8: transpose_tiles(src.data_as<const uint8_t>(), t->data_as<uint8_t>(), E, A, B); break;
    case 16: transpose_tiles(src.data_as<const uint16_t>(), t->data_as<uint16_t>(), E, A, B); break;
    case 32: transpose_tiles(src.data_as<const uint32_t>(), t->data_as<uint32_t>(), E, A, B); break;
    case 64: transpose_tiles(src.data_as<const uint64_t>(), t->data_as<uint64_t>(), E, A, B); break;
    default: return Status::Internal(fmt::format("transpose_experts: packed dtype {}", dtype_name(src.dtype())));
  }
  owned_.push_back(std::move(t).value());
  return owned_.back().view();
}

int64_t LayerLoader::owned_bytes() const {
  int64_t n = 0;
  for (const auto& t : owned_) n += t.storage_bytes();
  return n;
}

}  // namespace moekit::io
