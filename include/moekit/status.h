// Status and errors. The core API returns Status (or Result<T>); messages name the field and the
// value that was wrong, e.g. "top_k=9 exceeds num_experts=8". The thin C++ convenience layer turns a
// failed Status into moekit::Error. Library code never calls exit() or abort().
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace moekit {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,  // the caller passed something wrong: shape, dtype, value, combination
  kUnsupported,      // valid, but not available in this build or on this device
  kOutOfMemory,
  kNotFound,         // a file, tensor name or table row that does not exist
  kIoError,
  kCudaError,        // the CUDA runtime reported an error
  kInternal,         // a bug in moekit
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status OutOfMemory(std::string m) { return {StatusCode::kOutOfMemory, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status CudaError(std::string m) { return {StatusCode::kCudaError, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: top_k=9 exceeds num_experts=8"
  std::string to_string() const;

  // Adds context in front of the message: "loading layer 3: " + message.
  Status with_context(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// The exception thrown by the convenience layer (and by Result<T>::value() on error).
class Error : public std::runtime_error {
 public:
  explicit Error(Status status) : std::runtime_error(status.to_string()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

inline void throw_if_error(const Status& s) {
  if (!s.ok()) throw Error(s);
}

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) v_ = Status::Internal("Result constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & {
    if (!ok()) throw Error(std::get<Status>(v_));
    return std::get<T>(v_);
  }
  const T& value() const& {
    if (!ok()) throw Error(std::get<Status>(v_));
    return std::get<T>(v_);
  }
  T&& value() && {
    if (!ok()) throw Error(std::get<Status>(v_));
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace moekit

// Returns the Status of `expr` from the enclosing function if it is not OK.
#define MOEKIT_RETURN_IF_ERROR(expr)                    \
  do {                                                  \
    ::moekit::Status moekit_status_ = (expr);           \
    if (!moekit_status_.ok()) return moekit_status_;    \
  } while (0)
