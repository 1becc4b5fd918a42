// The safetensors dtype table, shared by the reader and the writer. Internal to moekit_io.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "moekit/dtype.h"

namespace moekit::io {

struct SafetensorsDtype {
  std::string_view name;       // as written in a header
  int bits;                    // storage bits per element
  std::optional<DType> dtype;  // moekit's dtype, if it has one
};

// nullptr for a name safetensors does not define.
const SafetensorsDtype* find_safetensors_dtype(std::string_view name);
// Every name safetensors defines (for messages).
std::span<const std::string_view> safetensors_dtype_names();

}  // namespace moekit::io
