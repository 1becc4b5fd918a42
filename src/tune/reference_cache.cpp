// The reference cache's files:
//
//   fixed part (48 bytes): magic "MOEKREF\0", u32 version, u32 ndim, u64 key bytes, u64 dtype-name
//                          bytes, u64 payload bytes, u64 FNV-1a 64 of the payload
//   i64 shape[ndim], the key string, the dtype name ("bf16"), then the payload (the output's bytes)
//
// The dtype goes by name, not by enum value, so a renumbering of DType cannot make a file lie.
#include "tune/reference_cache.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "moekit/tuning.h"

namespace moekit::tune {
namespace {

namespace fs = std::filesystem;

constexpr std::array<char, 8> kMagic = {'M', 'O', 'E', 'K', 'R', 'E', 'F', '\0'};
constexpr uint64_t kMaxKeyBytes = 1 << 16;  // a problem key is a few hundred bytes
constexpr uint64_t kMaxDtypeBytes = 16;

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 0xCBF29CE484222325ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

struct Fixed {
  std::array<char, 8> magic;
  uint32_t version;
  uint32_t ndim;
  uint64_t key_bytes;
  uint64_t dtype_bytes;
  uint64_t payload_bytes;
  uint64_t checksum;
};
static_assert(sizeof(Fixed) == 48, "the file's fixed part is 48 bytes with no padding");

struct Header {
  Fixed fixed{};
  std::vector<int64_t> shape;
  std::string key, dtype;
  uint64_t header_bytes() const { return sizeof(Fixed) + 8 * shape.size() + key.size() + dtype.size(); }
};

// The header at the start of `in`, or why it is not one (a miss, not an error).
Result<Header> read_header(std::ifstream& in) {
  Header h;
  if (!in.read(reinterpret_cast<char*>(&h.fixed), sizeof(Fixed))) return Status::NotFound("shorter than a header");
  const Fixed& f = h.fixed;
  if (f.magic != kMagic) return Status::NotFound("not a reference file (magic)");
  if (f.version != kReferenceCacheVersion)
    return Status::NotFound(fmt::format("version {} (this build reads {})", f.version, kReferenceCacheVersion));
  if (f.ndim > kMaxTensorDims || f.key_bytes > kMaxKeyBytes || f.dtype_bytes > kMaxDtypeBytes)
    return Status::NotFound(fmt::format("header out of range (ndim={}, key bytes={}, dtype bytes={})", f.ndim, f.key_bytes, f.dtype_bytes));
  h.shape.resize(f.ndim);
  h.key.resize(f.key_bytes);
  h.dtype.resize(f.dtype_bytes);
  if (!in.read(reinterpret_cast<char*>(h.shape.data()), static_cast<std::streamsize>(8 * f.ndim)) ||
      !in.read(h.key.data(), static_cast<std::streamsize>(f.key_bytes)) || !in.read(h.dtype.data(), static_cast<std::streamsize>(f.dtype_bytes)))
    return Status::NotFound("shorter than its header says");
  return h;
}

// Opens `path` and reads its header, checking that the file size is exactly header + payload and
// that the header names `key`. A miss says why.
Result<Header> open_matching(const std::string& path, const ReferenceKey& key, std::ifstream& in) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::NotFound("no file");
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return Status::NotFound(fmt::format("cannot read its size: {}", ec.message()));
  in.open(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open it");
  auto h = read_header(in);
  if (!h.ok()) return h.status();
  const uint64_t want_size = h->header_bytes() + h->fixed.payload_bytes;
  if (size != want_size) return Status::NotFound(fmt::format("{} bytes, its header says {} (cut short or appended to)", size, want_size));
  if (h->key != key.to_string()) return Status::NotFound(fmt::format("written for another key: '{}'", h->key));
  return h;
}

std::string hex64(uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace

std::string ReferenceKey::to_string() const {
  return fmt::format("moekit-reference v{}|{}|T={}|seed={}|biases={}", kReferenceCacheVersion, problem, tokens, seed, biases ? 1 : 0);
}

std::string ReferenceKey::file_name() const {
  const std::string s = to_string();
  return hex64(fnv1a(s.data(), s.size())) + ".bin";
}

ReferenceKey reference_key(const MoeProblem& problem, const RandomLayerOptions& layer) {
  return {.problem = problem_key(problem), .tokens = layer.num_tokens, .seed = layer.seed, .biases = layer.biases};
}

std::string ReferenceCache::path_of(const ReferenceKey& key) const { return (fs::path(dir_) / key.file_name()).string(); }

bool ReferenceCache::has(const ReferenceKey& key) const {
  std::ifstream in;
  return open_matching(path_of(key), key, in).ok();
}

Result<CacheLookup> ReferenceCache::load(const ReferenceKey& key, const TensorView& out) const {
  if (!out.device().is_cpu() || !out.is_contiguous())
    return Status::InvalidArgument(fmt::format("reference cache: the output {} must be a contiguous host tensor", out.describe()));
  CacheLookup r{.hit = false, .path = path_of(key), .why = ""};
  std::ifstream in;
  auto h = open_matching(r.path, key, in);
  if (!h.ok()) {
    r.why = h.status().message();
    return r;
  }
  const std::vector<int64_t> want_shape(out.shape().begin(), out.shape().end());
  const uint64_t want_bytes = static_cast<uint64_t>(out.storage_bytes());
  if (h->dtype != dtype_name(out.dtype())) {
    r.why = fmt::format("dtype {} (want {})", h->dtype, dtype_name(out.dtype()));
  } else if (h->shape != want_shape) {
    r.why = fmt::format("shape [{}] (want [{}])", fmt::join(h->shape, ", "), fmt::join(want_shape, ", "));
  } else if (h->fixed.payload_bytes != want_bytes) {
    r.why = fmt::format("{} payload bytes (want {})", h->fixed.payload_bytes, want_bytes);
  }
  if (!r.why.empty()) return r;
  // Read aside and check before anything reaches `out`: a miss leaves it as it was.
  std::vector<char> payload(want_bytes);
  if (!in.read(payload.data(), static_cast<std::streamsize>(want_bytes))) {
    r.why = "payload cut short while reading";
    return r;
  }
  if (fnv1a(payload.data(), payload.size()) != h->fixed.checksum) {
    r.why = "payload checksum does not match its header (corrupted)";
    return r;
  }
  std::memcpy(out.data(), payload.data(), payload.size());
  r.hit = true;
  return r;
}

Result<std::string> ReferenceCache::store(const ReferenceKey& key, const TensorView& ref) const {
  if (!ref.device().is_cpu() || !ref.is_contiguous())
    return Status::InvalidArgument(fmt::format("reference cache: the reference {} must be a contiguous host tensor", ref.describe()));
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Status::IoError(fmt::format("reference cache: cannot create directory {}: {}", dir_, ec.message()));
  Header h;
  h.key = key.to_string();
  h.dtype = std::string(dtype_name(ref.dtype()));
  h.shape.assign(ref.shape().begin(), ref.shape().end());
  const auto bytes = static_cast<uint64_t>(ref.storage_bytes());
  h.fixed = Fixed{.magic = kMagic, .version = kReferenceCacheVersion, .ndim = static_cast<uint32_t>(h.shape.size()),
                  .key_bytes = h.key.size(), .dtype_bytes = h.dtype.size(), .payload_bytes = bytes,
                  .checksum = fnv1a(ref.data(), static_cast<size_t>(bytes))};
  // Unique per process (pid) and per call within it (counter): concurrent writers never share a
  // temporary file, and the rename makes the last complete one the file.
  static std::atomic<uint64_t> counter{0};
  const std::string path = path_of(key);
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&h.fixed), sizeof(Fixed));
    out.write(reinterpret_cast<const char*>(h.shape.data()), static_cast<std::streamsize>(8 * h.shape.size()));
    out.write(h.key.data(), static_cast<std::streamsize>(h.key.size()));
    out.write(h.dtype.data(), static_cast<std::streamsize>(h.dtype.size()));
    out.write(static_cast<const char*>(ref.data()), static_cast<std::streamsize>(bytes));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return Status::IoError(fmt::format("reference cache: cannot write {}", tmp));
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    return Status::IoError(fmt::format("reference cache: cannot rename {} to {}: {}", tmp, path, why));
  }
  return path;
}

}  // namespace moekit::tune
