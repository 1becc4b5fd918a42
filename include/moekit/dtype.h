// Element types moekit understands, and their storage facts.
//
// Sub-byte types (int4, fp4 e2m1) are packed two per byte: logical element 2*i lives in the low
// nibble of byte i and element 2*i+1 in the high nibble (the convention of torch.float4_e2m1fn_x2
// and CUDA's __nv_fp4x2). Shapes and strides always count logical elements.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace moekit {

enum class DType : uint8_t {
  kF64,
  kF32,
  kF16,
  kBF16,
  kE4M3,   // fp8 e4m3fn: bias 7, max 448, no infinity, NaN = S.1111.111
  kE5M2,   // fp8 e5m2: IEEE-like, bias 15, max 57344, infinities and NaNs
  kI64,
  kI32,
  kI8,
  kU8,
  kI4,     // two's complement [-8, 7], two per byte
  kE2M1,   // fp4: values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives, two per byte
  kE8M0,   // MX block scale: 2^(code-127), code 0xFF = NaN, no sign, no zero
  kUE4M3,  // NVFP4 block scale: e4m3fn without a sign bit (codes 0x00..0x7F; 0x7F = NaN)
};

// Every dtype, in enum order (for tests and listings).
std::span<const DType> all_dtypes();

std::string_view dtype_name(DType t);          // "bf16", "e4m3", ...
std::optional<DType> parse_dtype(std::string_view name);  // accepts dtype_name() and common aliases
int dtype_bits(DType t);                       // storage bits per element: 4, 8, 16, 32 or 64
bool dtype_is_packed(DType t);                 // two elements per byte
bool dtype_is_floating(DType t);               // has a floating-point value set (all but integers)

// Bytes needed to store `numel` contiguous elements (packed types round up to whole bytes).
int64_t dtype_storage_bytes(DType t, int64_t numel);

}  // namespace moekit
