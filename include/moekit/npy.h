// NumPy .npy files (format versions 1.0, 2.0 and 3.0): read into an owning host tensor, write from a
// host view. docs/io-formats.md has the details.
//
// Reading accepts little-endian (or byte-order-free) C-ordered arrays of
//   f2 f4 f8 -> f16 f32 f64,  i1 i4 i8 -> i8 i32 i64,  u1 -> u8,
//   i2 -> i32 (widened, exact: moekit has no int16),  b1 -> u8 (0 or 1: moekit has no bool).
// Big-endian data, fortran_order=True, structured and other dtypes are rejected with a message.
//
// Writing: f64 f32 f16 i64 i32 i8 u8 as themselves; bf16 is widened to f32 (exact; numpy has no
// bfloat16). fp8, fp4, e8m0, ue4m3 and i4 have no numpy dtype and are rejected: write them to a
// .safetensors file instead.
#pragma once

#include <filesystem>

#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit {

Result<Tensor> read_npy(const std::filesystem::path& path);

// `tensor` must be a contiguous host tensor. Writes format 1.0 (2.0 when the header needs it); on
// error nothing is left at `path`.
Status write_npy(const std::filesystem::path& path, const TensorView& tensor);

}  // namespace moekit
