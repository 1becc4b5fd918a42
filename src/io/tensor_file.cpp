#include "moekit/tensor_file.h"

#include <string>

#include <fmt/format.h>

#include "moekit/npy.h"
#include "moekit/safetensors.h"

namespace moekit {
namespace {

enum class FileKind { kNpy, kSafetensors, kUnknown };

FileKind kind_of(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".npy") return FileKind::kNpy;
  if (ext == ".safetensors") return FileKind::kSafetensors;
  return FileKind::kUnknown;
}

Status unknown_extension(const std::filesystem::path& path) {
  return Status::InvalidArgument(fmt::format("{}: unknown tensor file type '{}' (expected .npy or .safetensors)", path.string(),
                                             path.extension().string()));
}

}  // namespace

Result<Tensor> read_tensor_file(const std::filesystem::path& path, std::string_view name) {
  switch (kind_of(path)) {
    case FileKind::kNpy:
      if (!name.empty())
        return Status::InvalidArgument(fmt::format("{}: an .npy file holds one unnamed array; cannot select '{}'", path.string(), name));
      return read_npy(path);
    case FileKind::kSafetensors: {
      auto file = SafetensorsFile::open(path);
      if (!file.ok()) return file.status();
      std::string chosen(name);
      if (chosen.empty()) {
        if (file->tensors().size() != 1)
          return Status::InvalidArgument(fmt::format("{}: holds {} tensors; name the one to read", path.string(), file->tensors().size()));
        chosen = file->tensors().front().name;
      }
      auto view = file->view(chosen);
      if (!view.ok()) return view.status();
      auto tensor = Tensor::empty(view->dtype(), view->shape());
      if (!tensor.ok()) return tensor.status().with_context(path.string());
      MOEKIT_RETURN_IF_ERROR(copy_tensor(*tensor, *view));
      return tensor;
    }
    case FileKind::kUnknown: break;
  }
  return unknown_extension(path);
}

Status write_tensor_file(const std::filesystem::path& path, const TensorView& tensor, std::string_view name) {
  switch (kind_of(path)) {
    case FileKind::kNpy: return write_npy(path, tensor);
    case FileKind::kSafetensors: {
      const NamedTensor t{std::string(name), tensor};
      return write_safetensors(path, std::span<const NamedTensor>(&t, 1));
    }
    case FileKind::kUnknown: break;
  }
  return unknown_extension(path);
}

}  // namespace moekit
