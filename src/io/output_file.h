// A file written under a temporary name and renamed into place by commit(): a failed or abandoned
// write leaves nothing at the destination. Internal to moekit_io.
#pragma once

#include <cstddef>
#include <cstdio>
#include <filesystem>

#include "moekit/status.h"

namespace moekit::io {

class OutputFile {
 public:
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();  // removes the temporary file unless committed

  Status open(const std::filesystem::path& path);
  Status write(const void* data, size_t bytes);
  // Flushes, closes and renames the temporary file to the destination.
  Status commit();

 private:
  std::filesystem::path path_;
  std::filesystem::path temp_;
  std::FILE* file_ = nullptr;
};

}  // namespace moekit::io
