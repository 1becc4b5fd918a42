// A directory of reference outputs for `moekit tune`'s workers. Every candidate of a shape is checked
// against the same float64 CPU reference (cpu::run_reference on the same random layer), which on large
// presets costs far more than the candidate (DeepSeek-V3 at T=1024: about 0.7 TFLOP in double), so the
// first worker of a shape computes it and stores it here, and the others read it. docs/tune.md.
//
// A file is trusted only when everything in its header matches what the reader expects (magic,
// version, the whole key string, dtype, shape, byte count), its size is exactly header plus payload
// and the payload's checksum matches; anything else is a miss, and the worker recomputes and rewrites
// it. Files are written under a temporary name and renamed into place, so concurrent workers (one per
// GPU) see the old file, no file, or the complete new one, never a partial one. The files are in the
// host's byte order: a cache belongs to one machine.
#pragma once

#include <cstdint>
#include <string>

#include "moekit/moe_problem.h"
#include "moekit/random_layer.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit::tune {

// Bump when make_random_layer's values, cpu::run_reference's output or the file layout change: files
// written by another version then never match (and are rewritten).
inline constexpr uint32_t kReferenceCacheVersion = 1;

// What a reference output depends on: the random layer (the problem, the token count, the seed,
// biases: what make_random_layer reads) and the reference run on it, whose version is
// kReferenceCacheVersion. The problem is its problem_key, from which the worker parses its problem,
// so the string determines the problem.
struct ReferenceKey {
  std::string problem;
  int64_t tokens = 1;
  uint64_t seed = 1;
  bool biases = false;

  // "moekit-reference v1|<problem>|T=<tokens>|seed=<seed>|biases=<0|1>": stored whole in the file.
  std::string to_string() const;
  // "<16 hex digits>.bin": a 64-bit FNV-1a hash of to_string(). Two keys with one hash would take
  // turns rewriting one file (each reader checks the whole key string), never read each other's.
  std::string file_name() const;
};
ReferenceKey reference_key(const MoeProblem& problem, const RandomLayerOptions& layer);

struct CacheLookup {
  bool hit = false;
  std::string path;  // the file for the key
  std::string why;   // on a miss: "no file", or why the file is not trusted
};

class ReferenceCache {
 public:
  explicit ReferenceCache(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }
  std::string path_of(const ReferenceKey& key) const;

  // Reads the key's file into `out` (host, contiguous) when it matches the key and out's dtype and
  // shape exactly; `out` is not touched on a miss. Fails only for an `out` that is not a host
  // tensor (a caller's mistake); a missing, short or foreign file is a miss that says why.
  Result<CacheLookup> load(const ReferenceKey& key, const TensorView& out) const;

  // Whether the key's file looks complete (its header names this key and its size matches the
  // header): the tuner's cheap test of which shapes still need a reference, without reading it.
  bool has(const ReferenceKey& key) const;

  // Writes `ref` (host, contiguous) as the key's file, creating the directory: first under a name
  // unique to this process and call, then renamed over the key's file. Returns the file's path.
  Result<std::string> store(const ReferenceKey& key, const TensorView& ref) const;

 private:
  std::string dir_;
};

}  // namespace moekit::tune
