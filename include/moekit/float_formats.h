// Host conversions between double/float and every narrow format moekit stores, exact to each
// format's definition. Encoding rounds to nearest, ties to even, from the exact input value (a
// float argument converts to double exactly, so encode_x(float) is the correctly rounded float).
//
// Overflow and special values (these match the CUDA 13 cuda_fp8.h / cuda_fp4.h conversions, which
// the tests use as an independent oracle):
//   bf16, f16   IEEE: overflow -> +-inf; NaN -> canonical quiet NaN (0x7FC0 / 0x7E00).
//   e4m3 (fn)   no infinity. kSaturate: |x| > 448 and +-inf -> +-448 (0x7E/0xFE).
//               kNoSaturate: rounds to a value above 448 (|x| > 464) or +-inf -> NaN with the
//               input's sign (0x7F/0xFF). NaN -> 0x7F.
//   e5m2        kSaturate: overflow and +-inf -> +-57344. kNoSaturate: -> +-inf. NaN -> 0x7F.
//   e2m1 (fp4)  always saturating to +-6; NaN -> +6 (0x7), as CUDA does; no NaN code exists.
//   ue4m3       e4m3fn magnitudes without a sign: negative inputs (and -0) -> 0; > 448 -> 448;
//               NaN -> 0x7F. Codes with bit 7 set are not ue4m3 values and decode to NaN.
//   e8m0        2^(code-127); only powers of two. |x| is rounded to a power of two in the given
//               direction; results below 2^-127 become 2^-127 (code 0); above 2^127 -> 2^127
//               (kSaturate) or NaN 0xFF (kNoSaturate); NaN -> 0xFF; the sign is ignored.
//   integers    round half to even, saturate to the type's range, NaN -> 0.
#pragma once

#include <cstdint>

#include "moekit/dtype.h"

namespace moekit {

enum class Overflow : uint8_t { kSaturate, kNoSaturate };
enum class ScaleRounding : uint8_t { kTowardZero, kUp };

double decode_bf16(uint16_t bits);
double decode_f16(uint16_t bits);
double decode_e4m3(uint8_t code);
double decode_e5m2(uint8_t code);
double decode_e2m1(uint8_t nibble);  // low 4 bits
double decode_ue4m3(uint8_t code);
double decode_e8m0(uint8_t code);

uint16_t encode_bf16(double x);
uint16_t encode_f16(double x);
uint8_t encode_e4m3(double x, Overflow overflow = Overflow::kSaturate);
uint8_t encode_e5m2(double x, Overflow overflow = Overflow::kSaturate);
uint8_t encode_e2m1(double x);  // returns a 4-bit code in the low nibble
uint8_t encode_ue4m3(double x);
uint8_t encode_e8m0(double x, ScaleRounding rounding, Overflow overflow = Overflow::kSaturate);

int8_t encode_i8(double x);
uint8_t encode_u8(double x);
int8_t encode_i4(double x);  // in [-8, 7]

// Largest finite value of a floating dtype (bf16, f16, e4m3, e5m2, e2m1, ue4m3, e8m0, f32, f64).
double dtype_max_finite(DType t);

// Element access by logical index into contiguous storage of any dtype (packed types included).
// Stores round as the encode_* functions do, with Overflow::kSaturate for fp8 and e8m0 rounding up.
// These are for reference code and tests, not for hot loops.
double load_element(const void* base, DType t, int64_t index);
void store_element(void* base, DType t, int64_t index, double value);

// Elements [first, first + n) of contiguous storage as doubles: the same values as load_element,
// with table or bit-level fast paths for the types the reference backend streams (f32, bf16, e4m3,
// e2m1, i8, i4). For bulk reads in the reference backend's inner loops.
void load_elements(const void* base, DType t, int64_t first, int64_t n, double* dst);

}  // namespace moekit
