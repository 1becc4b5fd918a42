// One tensor in or out of a file, chosen by the file's extension: what `moekit run` uses for its
// inputs and output.
//   .npy          moekit/npy.h (bf16 is written widened to f32)
//   .safetensors  moekit/safetensors.h
#pragma once

#include <filesystem>
#include <string_view>

#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit {

// Reads a .npy file, or the tensor called `name` from a .safetensors file (with an empty `name`, the
// file's only tensor; a file with several needs a name). Either way the result is an ordinary,
// writable host tensor (a safetensors tensor is copied out of the read-only mapping).
Result<Tensor> read_tensor_file(const std::filesystem::path& path, std::string_view name = {});

// Writes `tensor` (host, contiguous) to a .npy file, or to a .safetensors file as the one tensor
// called `name`.
Status write_tensor_file(const std::filesystem::path& path, const TensorView& tensor, std::string_view name = "output");

}  // namespace moekit
