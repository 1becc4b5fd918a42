// The safetensors reader: header validation and zero-copy views into the mapped file.
#include "moekit/safetensors.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "io/json_file.h"
#include "io/mapped_file.h"
#include "io/safetensors_dtypes.h"

namespace moekit {
namespace {

using json = nlohmann::json;

// The reference implementation (huggingface/safetensors) refuses larger headers.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// A non-negative JSON integer that fits int64_t, or nullopt.
std::optional<int64_t> as_index(const json& j) {
  if (!j.is_number_unsigned()) return std::nullopt;
  const uint64_t v = j.get<uint64_t>();
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(v);
}

class HeaderParser {
 public:
  HeaderParser(std::string file, int64_t data_size) : file_(std::move(file)), data_size_(data_size) {}

  Status fail(std::string_view what) const { return Status::InvalidArgument(fmt::format("{}: {}", file_, what)); }
  Status fail_tensor(std::string_view name, std::string_view what) const {
    return Status::InvalidArgument(fmt::format("{}: tensor '{}': {}", file_, name, what));
  }

  Status parse_metadata(const json& value, std::map<std::string, std::string>& metadata) const {
    if (!value.is_object())
      return fail(fmt::format("__metadata__ must be an object mapping strings to strings, got {}", io::json_kind(value)));
    for (const auto& [k, v] : value.items()) {
      if (!v.is_string())
        return fail(fmt::format("__metadata__['{}'] must be a string, got {} ({})", k, io::json_kind(v), v.dump()));
      metadata[k] = v.get<std::string>();
    }
    return Status::Ok();
  }

  Status parse_tensor(const std::string& name, const json& value, SafetensorsTensorInfo& info) const {
    info.name = name;
    if (!value.is_object()) return fail_tensor(name, fmt::format("entry must be an object, got {}", io::json_kind(value)));
    const auto dtype_it = value.find("dtype");
    if (dtype_it == value.end()) return fail_tensor(name, "missing \"dtype\"");
    if (!dtype_it->is_string()) return fail_tensor(name, fmt::format("\"dtype\" must be a string, got {}", dtype_it->dump()));
    info.dtype_name = dtype_it->get<std::string>();
    const io::SafetensorsDtype* dt = io::find_safetensors_dtype(info.dtype_name);
    if (dt == nullptr)
      return fail_tensor(name, fmt::format("unknown dtype '{}' (known: {})", info.dtype_name, fmt::join(io::safetensors_dtype_names(), ", ")));
    info.dtype = dt->dtype;

    const auto shape_it = value.find("shape");
    if (shape_it == value.end()) return fail_tensor(name, "missing \"shape\"");
    if (!shape_it->is_array()) return fail_tensor(name, fmt::format("\"shape\" must be an array, got {}", shape_it->dump()));
    int64_t numel = 1;
    bool overflow = false;
    for (size_t d = 0; d < shape_it->size(); ++d) {
      const auto extent = as_index((*shape_it)[d]);
      if (!extent)
        return fail_tensor(name, fmt::format("shape {}: shape[{}]={} is not a non-negative integer", shape_it->dump(), d, (*shape_it)[d].dump()));
      info.shape.push_back(*extent);
      overflow |= __builtin_mul_overflow(numel, *extent, &numel);
    }
    int64_t bits = 0;
    if (overflow || __builtin_mul_overflow(numel, static_cast<int64_t>(dt->bits), &bits))
      return fail_tensor(name, fmt::format("shape {} overflows 64-bit sizes", shape_it->dump()));
    if (bits % 8 != 0)
      return fail_tensor(name, fmt::format("{} {} is {} bits, not a whole number of bytes", info.dtype_name, shape_it->dump(), bits));

    const auto off_it = value.find("data_offsets");
    if (off_it == value.end()) return fail_tensor(name, "missing \"data_offsets\"");
    const auto begin = off_it->is_array() && off_it->size() == 2 ? as_index((*off_it)[0]) : std::nullopt;
    const auto end = off_it->is_array() && off_it->size() == 2 ? as_index((*off_it)[1]) : std::nullopt;
    if (!begin || !end)
      return fail_tensor(name, fmt::format("\"data_offsets\" must be two non-negative integers [begin, end], got {}", off_it->dump()));
    info.data_begin = *begin;
    info.data_end = *end;
    if (*end < *begin) return fail_tensor(name, fmt::format("data_offsets [{}, {}]: end is before begin", *begin, *end));
    if (*end > data_size_)
      return fail_tensor(name, fmt::format("data_offsets [{}, {}] extend past the end of the data section ({} bytes)", *begin, *end, data_size_));
    if (*end - *begin != bits / 8)
      return fail_tensor(name, fmt::format("data_offsets [{}, {}] hold {} bytes but {} {} needs {}", *begin, *end, *end - *begin,
                                           info.dtype_name, shape_it->dump(), bits / 8));
    return Status::Ok();
  }

  // The tensors must tile the data section exactly: no overlap, no gap, nothing after the last one
  // (the reference reader's rule).
  Status check_layout(std::vector<SafetensorsTensorInfo>& tensors) const {
    std::stable_sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) {
      return std::pair(a.data_begin, a.data_end) < std::pair(b.data_begin, b.data_end);
    });
    int64_t pos = 0;
    const SafetensorsTensorInfo* prev = nullptr;
    for (const auto& t : tensors) {
      if (t.data_begin < pos)
        return fail(fmt::format("tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", prev->name, prev->data_begin, prev->data_end, t.name,
                                t.data_begin, t.data_end));
      if (t.data_begin > pos)
        return fail(fmt::format("bytes [{}, {}) of the data section belong to no tensor (before '{}')", pos, t.data_begin, t.name));
      pos = t.data_end;
      prev = &t;
    }
    if (pos != data_size_)
      return fail(fmt::format("the data section has {} bytes but the tensors cover only [0, {})", data_size_, pos));
    return Status::Ok();
  }

 private:
  std::string file_;
  int64_t data_size_;
};

}  // namespace

int64_t SafetensorsTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

struct SafetensorsFile::Impl {
  std::filesystem::path path;
  io::MappedFile map;
  int64_t data_start = 0;
  std::vector<SafetensorsTensorInfo> tensors;
  std::map<std::string, size_t, std::less<>> index;
  std::map<std::string, std::string> metadata;
};

SafetensorsFile::SafetensorsFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

Result<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  auto mapped = io::MappedFile::map(path);
  if (!mapped.ok()) return mapped.status();
  impl->map = std::move(mapped).value();
  const std::span<const std::byte> bytes = impl->map.bytes();
  const std::string file = path.string();

  if (bytes.size() < 8)
    return Status::InvalidArgument(fmt::format("{}: file is {} bytes, too small for the 8-byte header length", file, bytes.size()));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  if (header_len > kMaxHeaderBytes)
    return Status::InvalidArgument(fmt::format("{}: header length {} exceeds the {}-byte limit", file, header_len, kMaxHeaderBytes));
  if (header_len > bytes.size() - 8)
    return Status::InvalidArgument(
        fmt::format("{}: header length {} exceeds the file size ({} bytes, so at most {})", file, header_len, bytes.size(), bytes.size() - 8));
  impl->data_start = static_cast<int64_t>(8 + header_len);
  const int64_t data_size = static_cast<int64_t>(bytes.size()) - impl->data_start;

  // Parse, noting duplicate top-level keys (the JSON parser would silently keep the last one).
  const char* text = reinterpret_cast<const char*>(bytes.data()) + 8;
  std::set<std::string> seen;
  std::string duplicate;
  json header;
  try {
    header = json::parse(text, text + header_len, [&](int depth, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::key && depth == 1 && !seen.insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
      return true;
    });
  } catch (const json::exception& e) {
    return Status::InvalidArgument(fmt::format("{}: header is not valid JSON: {}", file, e.what()));
  }
  if (!header.is_object()) return Status::InvalidArgument(fmt::format("{}: header must be a JSON object, got {}", file, io::json_kind(header)));
  if (!duplicate.empty()) return Status::InvalidArgument(fmt::format("{}: header names '{}' more than once", file, duplicate));

  HeaderParser parser(file, data_size);
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      MOEKIT_RETURN_IF_ERROR(parser.parse_metadata(value, impl->metadata));
      continue;
    }
    SafetensorsTensorInfo info;
    MOEKIT_RETURN_IF_ERROR(parser.parse_tensor(key, value, info));
    impl->tensors.push_back(std::move(info));
  }
  MOEKIT_RETURN_IF_ERROR(parser.check_layout(impl->tensors));
  for (size_t i = 0; i < impl->tensors.size(); ++i) impl->index.emplace(impl->tensors[i].name, i);
  return SafetensorsFile(std::move(impl));
}

const std::filesystem::path& SafetensorsFile::path() const { return impl_->path; }
const std::vector<SafetensorsTensorInfo>& SafetensorsFile::tensors() const { return impl_->tensors; }
const std::map<std::string, std::string>& SafetensorsFile::metadata() const { return impl_->metadata; }
std::span<const std::byte> SafetensorsFile::mapping() const { return impl_->map.bytes(); }

const SafetensorsTensorInfo* SafetensorsFile::find(std::string_view name) const {
  const auto it = impl_->index.find(name);
  return it == impl_->index.end() ? nullptr : &impl_->tensors[it->second];
}

Result<std::span<const std::byte>> SafetensorsFile::bytes(std::string_view name) const {
  const SafetensorsTensorInfo* info = find(name);
  if (info == nullptr) return Status::NotFound(fmt::format("{}: no tensor '{}'", impl_->path.string(), name));
  return std::span<const std::byte>(impl_->map.bytes()).subspan(static_cast<size_t>(impl_->data_start + info->data_begin),
                                    static_cast<size_t>(info->data_end - info->data_begin));
}

Result<TensorView> SafetensorsFile::view(std::string_view name) const {
  const SafetensorsTensorInfo* info = find(name);
  if (info == nullptr) return Status::NotFound(fmt::format("{}: no tensor '{}'", impl_->path.string(), name));
  if (!info->dtype)
    return Status::Unsupported(fmt::format("{}: tensor '{}' has dtype {}, which moekit has no dtype for", impl_->path.string(), name,
                                           info->dtype_name));
  std::byte* data = impl_->map.bytes().data() + impl_->data_start + info->data_begin;
  auto view = TensorView::create(data, *info->dtype, info->shape);
  if (!view.ok()) return view.status().with_context(fmt::format("{}: tensor '{}'", impl_->path.string(), name));
  return view;
}

}  // namespace moekit
