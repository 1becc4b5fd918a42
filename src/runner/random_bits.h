// The counter-based generator behind random layers (moekit/random_layer.h): splitmix64, so element
// i's value depends only on (seed, stream, i). One definition for the host (src/runner/random_layer.cpp)
// and the device (src/cuda/random_fill.cu), so that weights generated on the GPU are the host's bytes:
// only integer arithmetic and one exact scaling (an integer below 2^53 times 2^-52) before the
// caller's rounding, which each side then does with the same IEEE rule.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define MOEKIT_RANDOM_HD __host__ __device__
#else
#define MOEKIT_RANDOM_HD
#endif

namespace moekit::random_bits {

MOEKIT_RANDOM_HD inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The part of bits_at that does not depend on the element: computed once per tensor on the device.
MOEKIT_RANDOM_HD inline uint64_t stream_base(uint64_t seed, uint64_t stream) { return mix(seed ^ (stream * 0xD1B54A32D192ED03ull)); }

MOEKIT_RANDOM_HD inline uint64_t bits_at(uint64_t seed, uint64_t stream, uint64_t i) { return mix(stream_base(seed, stream) + i); }

// [-1, 1): the top 53 bits as an integer (exact in double), times 2^-52 (exact), minus 1 (one
// rounding, and none in fact: the result is a multiple of 2^-52 in [-1, 1)). A fused multiply-add
// gives the same value, so the device compiler's contraction cannot change it.
MOEKIT_RANDOM_HD inline double uniform_from_bits(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0; }

MOEKIT_RANDOM_HD inline double uniform_at(uint64_t seed, uint64_t stream, uint64_t i) { return uniform_from_bits(bits_at(seed, stream, i)); }

}  // namespace moekit::random_bits
