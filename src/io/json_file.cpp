#include "io/json_file.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace moekit::io {

Result<nlohmann::json> read_json_object(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    return std::filesystem::exists(path, ec) ? Status::IoError(fmt::format("{}: cannot open", path.string()))
                                             : Status::NotFound(fmt::format("{}: no such file", path.string()));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IoError(fmt::format("{}: read failed", path.string()));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(fmt::format("{}: not valid JSON: {}", path.string(), e.what()));
  }
  if (!j.is_object()) return Status::InvalidArgument(fmt::format("{}: must be a JSON object, got {}", path.string(), json_kind(j)));
  return j;
}

std::string json_kind(const nlohmann::json& j) {
  if (j.is_null()) return "null";
  const std::string type = j.type_name();
  return (type[0] == 'a' || type[0] == 'o' ? "an " : "a ") + type;
}

}  // namespace moekit::io
