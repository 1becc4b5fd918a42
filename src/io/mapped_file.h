// A whole file mapped read-only into memory (POSIX mmap). Internal to moekit_io.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include "moekit/status.h"

namespace moekit::io {

class MappedFile {
 public:
  // Maps `path` read-only (PROT_READ, MAP_PRIVATE): the pages come from the page cache and count
  // against no memory commit, however large the file. An empty file maps to an empty span.
  static Result<MappedFile> map(const std::filesystem::path& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<std::byte> bytes() const { return {data_, size_}; }

 private:
  void reset();
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// "No such file or directory" for errno `err`.
std::string errno_message(int err);

}  // namespace moekit::io
