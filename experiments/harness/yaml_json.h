// YAML <-> JSON for experiment configs. Configs are parsed by yaml-cpp and
// immediately turned into a JSON tree (typed scalars, ordered maps), so the
// merge, --set and validation code works on one plain value type and no
// yaml-cpp exception ever leaves this file.
#ifndef DYNSPARSE_EXPERIMENTS_HARNESS_YAML_JSON_H_
#define DYNSPARSE_EXPERIMENTS_HARNESS_YAML_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace dynsparse {

// Parses YAML text. Plain scalars are typed by the YAML 1.2 core schema
// (null, true/false, integers, floats); quoted scalars are always strings.
// Errors name `source` (a file name or "--set x") with line and column;
// a duplicate mapping key is an error.
absl::StatusOr<nlohmann::json> ParseYaml(const std::string& text,
                                         const std::string& source);

// Reads and parses a YAML file.
absl::StatusOr<nlohmann::json> ReadYamlFile(const std::string& path);

// Block-style YAML of a JSON tree that ParseYaml reads back to the same tree
// (strings that would resolve to another type are quoted).
std::string ToYaml(const nlohmann::json& value);

// How a YAML path is spelt in error messages: "methods[1].mlp_keep".
std::string JoinYamlPath(const std::string& parent, const std::string& key);
std::string IndexYamlPath(const std::string& parent, size_t index);

// "an integer", "a string", ... for "expected X, got Y" messages.
std::string JsonTypeName(const nlohmann::json& value);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_HARNESS_YAML_JSON_H_
