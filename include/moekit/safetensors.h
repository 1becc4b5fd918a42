// Hugging Face safetensors files: a strict reader that maps the file and hands out zero-copy host
// views, a sharded-checkpoint index (model.safetensors.index.json) that opens shards on demand, and a
// writer. Format: an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ..., "__metadata__": {..}},
// then the data section; offsets are relative to the start of the data section. docs/io-formats.md
// lists every check the reader makes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "moekit/dtype.h"
#include "moekit/status.h"
#include "moekit/tensor.h"

namespace moekit {

// Safetensors dtype string <-> moekit dtype. F8_E4M3 is e4m3fn, F8_E8M0 is e8m0, F4 is packed e2m1
// (shape counts fp4 elements, two per byte, element 2i in the low nibble). BOOL, I16, U16, U32, U64,
// C64, F6_E2M3, F6_E3M2, F8_E4M3FNUZ and F8_E5M2FNUZ are valid safetensors dtypes without a moekit
// dtype: files holding them open, but view() of those tensors fails. moekit's i4 and ue4m3 have no
// safetensors dtype.
std::optional<DType> dtype_from_safetensors(std::string_view name);
std::optional<std::string_view> safetensors_dtype_name(DType t);

// One entry of a safetensors header.
struct SafetensorsTensorInfo {
  std::string name;
  std::string dtype_name;      // as written in the file: "BF16", "F8_E4M3", "U8", ...
  std::optional<DType> dtype;  // moekit's dtype for it, if there is one
  std::vector<int64_t> shape;
  int64_t data_begin = 0;      // [data_begin, data_end): bytes within the data section
  int64_t data_end = 0;

  int64_t numel() const;
};

// A safetensors file opened read-only and mapped into memory (POSIX mmap, PROT_READ). Views point
// into the mapping and are read-only: writing through one is a memory fault. Copy a tensor
// (copy_tensor) to modify it. The mapping lives as long as the object; move-only.
class SafetensorsFile {
 public:
  // Opens, maps and validates the whole header. Errors name the file, the tensor and the value.
  static Result<SafetensorsFile> open(const std::filesystem::path& path);

  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::filesystem::path& path() const;
  // Every tensor, in data-offset order.
  const std::vector<SafetensorsTensorInfo>& tensors() const;
  // nullptr when absent.
  const SafetensorsTensorInfo* find(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  // The "__metadata__" string map (empty when the header has none).
  const std::map<std::string, std::string>& metadata() const;

  // A contiguous host view of the tensor inside the mapping (no copy). kNotFound for an absent
  // name; kUnsupported for a dtype moekit lacks (raw bytes are still available through bytes()).
  Result<TensorView> view(std::string_view name) const;
  // The tensor's bytes inside the mapping, for any dtype.
  Result<std::span<const std::byte>> bytes(std::string_view name) const;
  // The whole mapped file (to tell whether a view points into it).
  std::span<const std::byte> mapping() const;

 private:
  struct Impl;
  explicit SafetensorsFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A checkpoint of one or more safetensors files. open() accepts
//   - a directory holding model.safetensors.index.json (sharded) or model.safetensors,
//   - a model.safetensors.index.json file ({"weight_map": {tensor name: shard file name}}), or
//   - a single .safetensors file.
// Shards are opened (mapped and validated) the first time one of their tensors is asked for. Not
// thread-safe: lookups that open a shard modify the object.
class SafetensorsCheckpoint {
 public:
  static Result<SafetensorsCheckpoint> open(const std::filesystem::path& path);

  SafetensorsCheckpoint(SafetensorsCheckpoint&&) noexcept;
  SafetensorsCheckpoint& operator=(SafetensorsCheckpoint&&) noexcept;
  SafetensorsCheckpoint(const SafetensorsCheckpoint&) = delete;
  SafetensorsCheckpoint& operator=(const SafetensorsCheckpoint&) = delete;
  ~SafetensorsCheckpoint();

  // The path given to open().
  const std::filesystem::path& path() const;
  bool is_sharded() const;
  // Every tensor name (from the index, or the single file), sorted.
  const std::vector<std::string>& names() const;
  bool contains(std::string_view name) const;

  // The file holding `name`, opened on first use. kNotFound for an unknown name, and for a shard
  // that does not actually hold a tensor the index assigns to it.
  Result<std::shared_ptr<const SafetensorsFile>> file_for(std::string_view name);
  Result<SafetensorsTensorInfo> info(std::string_view name);
  Result<TensorView> view(std::string_view name);
  // The files opened so far (what views into this checkpoint need alive).
  std::vector<std::shared_ptr<const SafetensorsFile>> opened_files() const;

 private:
  struct Impl;
  explicit SafetensorsCheckpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct NamedTensor {
  std::string name;
  TensorView tensor;  // host, contiguous
};

// Writes a safetensors file: tensors laid out by decreasing element size, then name, so each one is
// aligned to its element size (the header is padded with spaces to a multiple of 8, as the reference
// writer does). Names must be unique, non-empty and not "__metadata__"; dtypes without a safetensors
// name (i4, ue4m3) are rejected. On error nothing is left at `path`.
Status write_safetensors(const std::filesystem::path& path, std::span<const NamedTensor> tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace moekit
