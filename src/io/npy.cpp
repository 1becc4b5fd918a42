// NumPy .npy reader and writer.
#include "moekit/npy.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/output_file.h"
#include "moekit/float_formats.h"

namespace moekit {
namespace {

static_assert(std::endian::native == std::endian::little, "the .npy reader assumes a little-endian host");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kAlign = 64;  // numpy aligns the start of the data to 64 bytes

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string file) : s_(text), file_(std::move(file)) {}

  Result<NpyHeader> parse() {
    NpyHeader h;
    bool has_descr = false, has_order = false, has_shape = false;
    skip_ws();
    if (!consume('{')) return fail("does not start with '{'");
    while (true) {
      skip_ws();
      if (consume('}')) break;
      auto key = parse_string();
      if (!key.ok()) return key.status();
      skip_ws();
      if (!consume(':')) return fail(fmt::format("expected ':' after key '{}'", *key));
      skip_ws();
      if (*key == "descr") {
        if (peek() == '[') return fail("descr is a list: structured dtypes are not supported");
        auto d = parse_string();
        if (!d.ok()) return d.status();
        h.descr = *d;
        has_descr = true;
      } else if (*key == "fortran_order") {
        if (s_.substr(i_).starts_with("True")) h.fortran_order = true, i_ += 4;
        else if (s_.substr(i_).starts_with("False")) h.fortran_order = false, i_ += 5;
        else return fail("fortran_order must be True or False");
        has_order = true;
      } else if (*key == "shape") {
        auto shape = parse_tuple();
        if (!shape.ok()) return shape.status();
        h.shape = *shape;
        has_shape = true;
      } else {
        return fail(fmt::format("unexpected key '{}' (an .npy header has exactly descr, fortran_order and shape)", *key));
      }
      skip_ws();
      if (consume('}')) break;
      if (!consume(',')) return fail(fmt::format("expected ',' or '}}' at byte {}", i_));
    }
    skip_ws();
    if (i_ != s_.size()) return fail(fmt::format("unexpected text after the dict at byte {}", i_));
    if (!has_descr || !has_order || !has_shape) return fail("must give descr, fortran_order and shape");
    return h;
  }

 private:
  Status fail(std::string_view what) const { return Status::InvalidArgument(fmt::format("{}: .npy header: {}", file_, what)); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool consume(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }

  Result<std::string> parse_string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') return fail(fmt::format("expected a quoted string at byte {}", i_));
    const size_t end = s_.find(quote, i_ + 1);
    if (end == std::string_view::npos) return fail("unterminated string");
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    if (out.find('\\') != std::string::npos) return fail(fmt::format("escapes in strings are not supported ('{}')", out));
    i_ = end + 1;
    return out;
  }

  Result<std::vector<int64_t>> parse_tuple() {
    if (!consume('(')) return fail("shape must be a tuple");
    std::vector<int64_t> dims;
    while (true) {
      skip_ws();
      if (consume(')')) break;
      if (peek() < '0' || peek() > '9') return fail(fmt::format("shape entry at byte {} is not a non-negative integer", i_));
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(v, int64_t{10}, &v) || __builtin_add_overflow(v, int64_t{peek() - '0'}, &v))
          return fail("shape entry overflows 64 bits");
        ++i_;
      }
      consume('L');  // Python 2 longs
      dims.push_back(v);
      skip_ws();
      if (consume(')')) break;
      if (!consume(',')) return fail(fmt::format("expected ',' or ')' in shape at byte {}", i_));
    }
    return dims;
  }

  std::string_view s_;
  std::string file_;
  size_t i_ = 0;
};

// How an .npy dtype is read: its element size in the file and the moekit dtype it becomes.
struct NpyType {
  std::string_view code;  // kind + size: "f4"
  DType dtype;
  int file_bytes;
};
constexpr std::array<NpyType, 9> kReadable{{
    {"f2", DType::kF16, 2},
    {"f4", DType::kF32, 4},
    {"f8", DType::kF64, 8},
    {"i1", DType::kI8, 1},
    {"i2", DType::kI32, 2},  // widened
    {"i4", DType::kI32, 4},
    {"i8", DType::kI64, 8},
    {"u1", DType::kU8, 1},
    {"b1", DType::kU8, 1},  // bool as 0/1 bytes
}};

Result<NpyType> parse_descr(std::string_view descr, const std::string& file) {
  const char order = descr.empty() ? '\0' : descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=')
    return Status::InvalidArgument(fmt::format("{}: descr '{}' does not start with a byte order (<, >, |, =)", file, descr));
  const std::string_view code = descr.substr(1);
  for (const auto& t : kReadable) {
    if (t.code != code) continue;
    if (order == '>' && t.file_bytes > 1)
      return Status::Unsupported(fmt::format("{}: descr '{}' is big-endian; only little-endian .npy files are supported", file, descr));
    return t;
  }
  std::vector<std::string_view> known;
  for (const auto& t : kReadable) known.push_back(t.code);
  return Status::Unsupported(fmt::format("{}: descr '{}' has no moekit dtype (readable: {})", file, descr, fmt::join(known, " ")));
}

Status read_exact(std::ifstream& in, void* dst, size_t bytes, const std::string& file) {
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
  if (static_cast<size_t>(in.gcount()) != bytes) return Status::IoError(fmt::format("{}: short read of {} bytes", file, bytes));
  return Status::Ok();
}

}  // namespace

Result<Tensor> read_npy(const std::filesystem::path& path) {
  const std::string file = path.string();
  std::error_code ec;
  const auto file_size = std::filesystem::file_size(path, ec);
  if (ec) {
    std::string msg = fmt::format("{}: cannot open: {}", file, ec.message());
    return ec == std::errc::no_such_file_or_directory ? Status::NotFound(std::move(msg)) : Status::IoError(std::move(msg));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(fmt::format("{}: cannot open", file));

  unsigned char prefix[10] = {};
  if (file_size < 10) return Status::InvalidArgument(fmt::format("{}: {} bytes is too short for an .npy file", file, file_size));
  MOEKIT_RETURN_IF_ERROR(read_exact(in, prefix, 8, file));
  if (std::memcmp(prefix, kMagic.data(), kMagic.size()) != 0)
    return Status::InvalidArgument(fmt::format("{}: not an .npy file (no \\x93NUMPY magic)", file));
  const int major = prefix[6], minor = prefix[7];
  uint64_t header_len = 0;
  size_t prefix_len = 0;
  if (major == 1) {
    MOEKIT_RETURN_IF_ERROR(read_exact(in, prefix + 8, 2, file));
    header_len = prefix[8] | (prefix[9] << 8);
    prefix_len = 10;
  } else if (major == 2 || major == 3) {
    unsigned char len[4];
    if (file_size < 12) return Status::InvalidArgument(fmt::format("{}: {} bytes is too short for an .npy {}.{} file", file, file_size, major, minor));
    MOEKIT_RETURN_IF_ERROR(read_exact(in, len, 4, file));
    header_len = len[0] | (len[1] << 8) | (len[2] << 16) | (static_cast<uint64_t>(len[3]) << 24);
    prefix_len = 12;
  } else {
    return Status::Unsupported(fmt::format("{}: .npy format version {}.{} is not supported (1.0, 2.0 and 3.0 are)", file, major, minor));
  }
  if (prefix_len + header_len > file_size)
    return Status::InvalidArgument(fmt::format("{}: header length {} exceeds the file size {}", file, header_len, file_size));
  std::string header_text(header_len, '\0');
  MOEKIT_RETURN_IF_ERROR(read_exact(in, header_text.data(), header_len, file));

  auto header = HeaderParser(header_text, file).parse();
  if (!header.ok()) return header.status();
  auto type = parse_descr(header->descr, file);
  if (!type.ok()) return type.status();
  if (header->fortran_order)
    return Status::Unsupported(fmt::format("{}: fortran_order=True (column-major) is not supported; save a C-ordered array", file));

  int64_t numel = 1;
  for (int64_t d : header->shape)
    if (__builtin_mul_overflow(numel, d, &numel)) return Status::InvalidArgument(fmt::format("{}: shape overflows 64 bits", file));
  const uint64_t data_bytes = file_size - prefix_len - header_len;
  const uint64_t need = static_cast<uint64_t>(numel) * static_cast<uint64_t>(type->file_bytes);
  if (data_bytes != need)
    return Status::InvalidArgument(fmt::format("{}: data is {} bytes but '{}' ({}) needs {}", file, data_bytes, header->descr,
                                               fmt::join(header->shape, ", "), need));

  auto tensor = Tensor::empty(type->dtype, header->shape);
  if (!tensor.ok()) return tensor.status().with_context(file);
  if (type->code == "i2") {
    std::vector<int16_t> raw(static_cast<size_t>(numel));
    MOEKIT_RETURN_IF_ERROR(read_exact(in, raw.data(), need, file));
    std::copy(raw.begin(), raw.end(), tensor->data_as<int32_t>());
  } else {
    MOEKIT_RETURN_IF_ERROR(read_exact(in, tensor->data(), need, file));
  }
  return tensor;
}

Status write_npy(const std::filesystem::path& path, const TensorView& tensor) {
  const std::string file = path.string();
  if (!tensor.defined()) return Status::InvalidArgument(fmt::format("write_npy {}: the tensor is an empty (default) view", file));
  if (!tensor.device().is_cpu()) return Status::InvalidArgument(fmt::format("write_npy {}: {} is not a host tensor", file, tensor.describe()));
  if (!tensor.is_contiguous()) return Status::InvalidArgument(fmt::format("write_npy {}: {} is not contiguous", file, tensor.describe()));
  std::string_view descr;
  switch (tensor.dtype()) {
    case DType::kF64: descr = "<f8"; break;
    case DType::kF32:
    case DType::kBF16: descr = "<f4"; break;
    case DType::kF16: descr = "<f2"; break;
    case DType::kI64: descr = "<i8"; break;
    case DType::kI32: descr = "<i4"; break;
    case DType::kI8: descr = "|i1"; break;
    case DType::kU8: descr = "|u1"; break;
    default:
      return Status::InvalidArgument(fmt::format("write_npy {}: dtype {} has no numpy equivalent; write it to a .safetensors file instead",
                                                 file, dtype_name(tensor.dtype())));
  }
  std::string shape = tensor.ndim() == 1 ? fmt::format("({},)", tensor.size(0)) : fmt::format("({})", fmt::join(tensor.shape(), ", "));
  // Pad with spaces so that the data starts at a multiple of 64; the header ends with '\n'.
  const std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  auto padded = [&](size_t prefix_len) {
    std::string h = dict;
    h.append((kAlign - (prefix_len + h.size() + 1) % kAlign) % kAlign, ' ');
    return h + '\n';
  };
  std::string header = padded(10);
  const bool v2 = header.size() > 65535;  // format 1.0 stores the length in 2 bytes
  const size_t prefix_len = v2 ? 12 : 10;
  if (v2) header = padded(prefix_len);

  std::string prefix(kMagic);
  prefix += static_cast<char>(v2 ? 2 : 1);
  prefix += '\0';
  for (size_t i = 0; i < prefix_len - 8; ++i) prefix += static_cast<char>((header.size() >> (8 * i)) & 0xFF);

  io::OutputFile out;
  MOEKIT_RETURN_IF_ERROR(out.open(path));
  MOEKIT_RETURN_IF_ERROR(out.write(prefix.data(), prefix.size()));
  MOEKIT_RETURN_IF_ERROR(out.write(header.data(), header.size()));
  if (tensor.dtype() == DType::kBF16) {
    // Widen in chunks: every bf16 value is exactly a float.
    constexpr int64_t kChunk = 1 << 16;
    std::vector<float> buf;
    const auto* src = tensor.data_as<const uint16_t>();
    for (int64_t i = 0; i < tensor.numel(); i += kChunk) {
      const int64_t n = std::min(kChunk, tensor.numel() - i);
      buf.resize(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) buf[static_cast<size_t>(j)] = static_cast<float>(decode_bf16(src[i + j]));
      MOEKIT_RETURN_IF_ERROR(out.write(buf.data(), buf.size() * sizeof(float)));
    }
  } else {
    MOEKIT_RETURN_IF_ERROR(out.write(tensor.data(), static_cast<size_t>(tensor.storage_bytes())));
  }
  return out.commit();
}

}  // namespace moekit
