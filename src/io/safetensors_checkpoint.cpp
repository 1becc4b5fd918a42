// Sharded safetensors checkpoints: model.safetensors.index.json and shards opened on demand.
#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/json_file.h"
#include "moekit/safetensors.h"

namespace moekit {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr std::string_view kIndexName = "model.safetensors.index.json";
constexpr std::string_view kSingleName = "model.safetensors";

// A shard name from an index must stay inside the checkpoint directory.
bool is_safe_relative(const fs::path& p) {
  if (p.empty() || p.is_absolute() || p.has_root_name()) return false;
  for (const auto& part : p)
    if (part == "..") return false;
  return true;
}

}  // namespace

struct SafetensorsCheckpoint::Impl {
  fs::path path;
  fs::path dir;  // shard names are relative to it
  bool sharded = false;
  std::vector<std::string> names;
  std::map<std::string, std::string, std::less<>> weight_map;            // sharded: tensor -> shard
  std::map<std::string, std::shared_ptr<SafetensorsFile>, std::less<>> files;  // opened, by shard name

  Status open_single(const fs::path& file) {
    auto f = SafetensorsFile::open(file);
    if (!f.ok()) return f.status();
    auto shared = std::make_shared<SafetensorsFile>(std::move(f).value());
    for (const auto& t : shared->tensors()) names.push_back(t.name);
    std::sort(names.begin(), names.end());
    files.emplace(file.filename().string(), std::move(shared));
    return Status::Ok();
  }

  Status open_index(const fs::path& index) {
    sharded = true;
    dir = index.parent_path();
    auto parsed = io::read_json_object(index);
    if (!parsed.ok()) return parsed.status();
    const json& j = *parsed;
    const auto wm = j.find("weight_map");
    if (wm == j.end() || !wm->is_object())
      return Status::InvalidArgument(fmt::format("{}: must have a \"weight_map\" object", index.string()));
    for (const auto& [name, shard] : wm->items()) {
      if (!shard.is_string())
        return Status::InvalidArgument(fmt::format("{}: weight_map['{}'] must be a file name string, got {}", index.string(), name, shard.dump()));
      const std::string s = shard.get<std::string>();
      if (!is_safe_relative(s))
        return Status::InvalidArgument(
            fmt::format("{}: weight_map['{}']='{}' is not a relative path inside the checkpoint directory", index.string(), name, s));
      weight_map.emplace(name, s);
      names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return Status::Ok();
  }
};

SafetensorsCheckpoint::SafetensorsCheckpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SafetensorsCheckpoint::SafetensorsCheckpoint(SafetensorsCheckpoint&&) noexcept = default;
SafetensorsCheckpoint& SafetensorsCheckpoint::operator=(SafetensorsCheckpoint&&) noexcept = default;
SafetensorsCheckpoint::~SafetensorsCheckpoint() = default;

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::open(const fs::path& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->dir = path.parent_path();
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    impl->dir = path;
    if (fs::exists(path / kIndexName, ec)) {
      MOEKIT_RETURN_IF_ERROR(impl->open_index(path / kIndexName));
    } else if (fs::exists(path / kSingleName, ec)) {
      MOEKIT_RETURN_IF_ERROR(impl->open_single(path / kSingleName));
    } else {
      int count = 0;
      for (const auto& entry : fs::directory_iterator(path, ec))
        count += entry.path().extension() == ".safetensors" ? 1 : 0;
      return Status::NotFound(fmt::format("{}: holds neither {} nor {} ({} other .safetensors files)", path.string(), kIndexName,
                                          kSingleName, count));
    }
  } else if (path.filename().string().ends_with(".index.json")) {
    MOEKIT_RETURN_IF_ERROR(impl->open_index(path));
  } else {
    MOEKIT_RETURN_IF_ERROR(impl->open_single(path));
  }
  return SafetensorsCheckpoint(std::move(impl));
}

const fs::path& SafetensorsCheckpoint::path() const { return impl_->path; }
bool SafetensorsCheckpoint::is_sharded() const { return impl_->sharded; }
const std::vector<std::string>& SafetensorsCheckpoint::names() const { return impl_->names; }

bool SafetensorsCheckpoint::contains(std::string_view name) const {
  return std::binary_search(impl_->names.begin(), impl_->names.end(), name);
}

Result<std::shared_ptr<const SafetensorsFile>> SafetensorsCheckpoint::file_for(std::string_view name) {
  if (!impl_->sharded) {
    const auto& file = impl_->files.begin()->second;
    if (!file->contains(name)) return Status::NotFound(fmt::format("{}: no tensor '{}'", file->path().string(), name));
    return std::shared_ptr<const SafetensorsFile>(file);
  }
  const auto it = impl_->weight_map.find(name);
  if (it == impl_->weight_map.end()) return Status::NotFound(fmt::format("{}: no tensor '{}' in the weight_map", impl_->path.string(), name));
  auto open_it = impl_->files.find(it->second);
  if (open_it == impl_->files.end()) {
    auto f = SafetensorsFile::open(impl_->dir / it->second);
    if (!f.ok()) return f.status().with_context(fmt::format("shard for '{}'", name));
    open_it = impl_->files.emplace(it->second, std::make_shared<SafetensorsFile>(std::move(f).value())).first;
  }
  if (!open_it->second->contains(name))
    return Status::NotFound(fmt::format("{}: the index maps '{}' to shard '{}', which does not hold it", impl_->path.string(), name, it->second));
  return std::shared_ptr<const SafetensorsFile>(open_it->second);
}

Result<SafetensorsTensorInfo> SafetensorsCheckpoint::info(std::string_view name) {
  auto file = file_for(name);
  if (!file.ok()) return file.status();
  return *(*file)->find(name);
}

Result<TensorView> SafetensorsCheckpoint::view(std::string_view name) {
  auto file = file_for(name);
  if (!file.ok()) return file.status();
  return (*file)->view(name);
}

std::vector<std::shared_ptr<const SafetensorsFile>> SafetensorsCheckpoint::opened_files() const {
  std::vector<std::shared_ptr<const SafetensorsFile>> out;
  for (const auto& [name, file] : impl_->files) out.push_back(file);
  return out;
}

}  // namespace moekit
