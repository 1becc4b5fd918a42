// Helpers for the file I/O tests: a temporary directory, raw file bytes, and small host tensors.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "moekit/float_formats.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit::testing {

// A fresh directory under the system temp dir, removed with everything in it at the end of scope.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "moekit-io-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }
  // Files in the directory (to check that failed writes leave nothing behind).
  size_t file_count() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::recursive_directory_iterator(path_)) ++n;
    return n;
  }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}

// A safetensors image: 8-byte length, the header text as given (no padding), then `data`.
inline std::string safetensors_bytes(std::string_view header, std::string_view data) {
  return le64(header.size()) + std::string(header) + std::string(data);
}

inline Tensor make_tensor(DType dtype, std::vector<int64_t> shape) {
  auto r = Tensor::empty(dtype, std::span<const int64_t>(shape.data(), shape.size()));
  if (!r.ok()) throw Error(r.status());
  return std::move(r).value();
}

// Fills every byte with a pattern that differs per tensor (`seed`) and per position.
inline void fill_bytes(const Tensor& t, uint32_t seed) {
  auto* p = static_cast<uint8_t*>(t.data());
  uint32_t x = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.storage_bytes(); ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = static_cast<uint8_t>(x >> 24);
  }
}

// Stores value_of(i) at every logical index (rounding as store_element does).
template <typename F>
void fill_values(const Tensor& t, F&& value_of) {
  for (int64_t i = 0; i < t.numel(); ++i) store_element(t.data(), t.dtype(), i, value_of(i));
}

inline bool same_bytes(const TensorView& a, const TensorView& b) {
  return a.storage_bytes() == b.storage_bytes() &&
         (a.storage_bytes() == 0 || std::memcmp(a.data(), b.data(), static_cast<size_t>(a.storage_bytes())) == 0);
}

inline std::vector<int64_t> shape_of(const TensorView& v) { return {v.shape().begin(), v.shape().end()}; }

}  // namespace moekit::testing

// Asserts that a Status/Result failed with `code` and a message containing every given substring.
#define MOEKIT_EXPECT_ERROR(status_expr, expected_code, ...)                                           \
  do {                                                                                                 \
    const ::moekit::Status moekit_s_ = (status_expr);                                                  \
    EXPECT_EQ(moekit_s_.code(), (expected_code)) << moekit_s_.to_string();                             \
    for (std::string_view moekit_part_ : std::initializer_list<std::string_view>{__VA_ARGS__})                                                \
      EXPECT_NE(moekit_s_.message().find(moekit_part_), std::string::npos)                            \
          << "message '" << moekit_s_.message() << "' lacks '" << moekit_part_ << "'";                 \
  } while (0)
