// The CPU's ceilings, measured in the run that uses them (the floor of the CPU backend).
#pragma once

#include <cstddef>

namespace moekit::bench {

// Bytes per second of a streaming read (sum) of `bytes` of host memory on all OpenMP threads;
// best of `reps`. `bytes` should be far larger than the last-level cache.
double cpu_read_bandwidth(size_t bytes, int reps);

// Floating-point operations per second of independent multiply-add chains on all OpenMP threads, as
// this build compiles them (the CPU backend computes in float64: its dense peak). Best of `reps`.
double cpu_flop_rate_f64(int reps);
double cpu_flop_rate_f32(int reps);

// A read size for cpu_read_bandwidth: 4x the last-level cache, at least 256 MiB.
size_t cpu_bandwidth_bytes();

}  // namespace moekit::bench
