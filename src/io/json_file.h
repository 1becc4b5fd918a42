// Reading a whole JSON file into nlohmann::json with a Status. Internal to moekit_io.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "moekit/status.h"

namespace moekit::io {

// kNotFound for a missing file, kIoError when it cannot be read, kInvalidArgument for bad JSON or a
// top level that is not an object. Messages start with the path.
Result<nlohmann::json> read_json_object(const std::filesystem::path& path);

// "an array", "a number", "null", ...: the JSON type of `j` for messages.
std::string json_kind(const nlohmann::json& j);

}  // namespace moekit::io
