// The safetensors writer.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "io/mapped_file.h"
#include "io/output_file.h"
#include "moekit/safetensors.h"

namespace moekit {
namespace {

using json = nlohmann::json;

Status check_tensor(const NamedTensor& t, std::set<std::string_view>& seen) {
  if (t.name.empty()) return Status::InvalidArgument("write_safetensors: a tensor name is empty");
  if (t.name == "__metadata__") return Status::InvalidArgument("write_safetensors: '__metadata__' is reserved and cannot name a tensor");
  if (!seen.insert(t.name).second) return Status::InvalidArgument(fmt::format("write_safetensors: tensor name '{}' is given twice", t.name));
  const TensorView& v = t.tensor;
  if (!v.defined()) return Status::InvalidArgument(fmt::format("write_safetensors: tensor '{}' is an empty (default) view", t.name));
  if (!v.device().is_cpu())
    return Status::InvalidArgument(fmt::format("write_safetensors: tensor '{}' ({}) is not a host tensor", t.name, v.describe()));
  if (!v.is_contiguous())
    return Status::InvalidArgument(fmt::format("write_safetensors: tensor '{}' ({}) is not contiguous", t.name, v.describe()));
  if (!safetensors_dtype_name(v.dtype()))
    return Status::InvalidArgument(fmt::format("write_safetensors: tensor '{}' has dtype {}, which safetensors cannot express", t.name,
                                               dtype_name(v.dtype())));
  return Status::Ok();
}

}  // namespace

Status write_safetensors(const std::filesystem::path& path, std::span<const NamedTensor> tensors,
                         const std::map<std::string, std::string>& metadata) {
  std::set<std::string_view> seen;
  for (const auto& t : tensors) MOEKIT_RETURN_IF_ERROR(check_tensor(t, seen));

  // Larger elements first, then by name: every tensor starts at a multiple of its element size.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int ba = dtype_bits(tensors[a].tensor.dtype()), bb = dtype_bits(tensors[b].tensor.dtype());
    return ba != bb ? ba > bb : tensors[a].name < tensors[b].name;
  });

  std::string header = "{";
  try {
    if (!metadata.empty()) header += "\"__metadata__\":" + json(metadata).dump();
    int64_t offset = 0;
    for (size_t i : order) {
      const TensorView& v = tensors[i].tensor;
      const int64_t bytes = v.storage_bytes();
      if (header.size() > 1) header += ',';
      header += fmt::format("{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", json(tensors[i].name).dump(),
                            *safetensors_dtype_name(v.dtype()), fmt::join(v.shape(), ","), offset, offset + bytes);
      offset += bytes;
    }
  } catch (const json::exception& e) {
    return Status::InvalidArgument(fmt::format("write_safetensors: a tensor name or metadata string is not valid UTF-8: {}", e.what()));
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');

  io::OutputFile out;
  MOEKIT_RETURN_IF_ERROR(out.open(path));
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  MOEKIT_RETURN_IF_ERROR(out.write(len, sizeof len));
  MOEKIT_RETURN_IF_ERROR(out.write(header.data(), header.size()));
  for (size_t i : order) MOEKIT_RETURN_IF_ERROR(out.write(tensors[i].tensor.data(), static_cast<size_t>(tensors[i].tensor.storage_bytes())));
  return out.commit();
}

}  // namespace moekit
