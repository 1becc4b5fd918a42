#include "io/output_file.h"

#include <unistd.h>

#include <cerrno>
#include <string>

#include <fmt/format.h>

#include "io/mapped_file.h"

namespace moekit::io {

OutputFile::~OutputFile() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
  }
}

Status OutputFile::open(const std::filesystem::path& path) {
  path_ = path;
  temp_ = path;
  temp_ += fmt::format(".partial-{}", ::getpid());
  file_ = std::fopen(temp_.c_str(), "wb");
  if (file_ == nullptr) return Status::IoError(fmt::format("{}: cannot create: {}", temp_.string(), errno_message(errno)));
  return Status::Ok();
}

Status OutputFile::write(const void* data, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  if (std::fwrite(data, 1, bytes, file_) != bytes)
    return Status::IoError(fmt::format("{}: write of {} bytes failed: {}", temp_.string(), bytes, errno_message(errno)));
  return Status::Ok();
}

Status OutputFile::commit() {
  std::FILE* f = file_;
  file_ = nullptr;
  const bool flushed = std::fflush(f) == 0;
  const int flush_err = errno;
  const bool closed = std::fclose(f) == 0;
  std::error_code ec;
  if (!flushed || !closed) {
    std::filesystem::remove(temp_, ec);
    return Status::IoError(fmt::format("{}: cannot finish writing: {}", temp_.string(), errno_message(flushed ? errno : flush_err)));
  }
  std::filesystem::rename(temp_, path_, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(temp_, ec);
    return Status::IoError(fmt::format("{}: cannot rename {} into place: {}", path_.string(), temp_.string(), why));
  }
  return Status::Ok();
}

}  // namespace moekit::io
