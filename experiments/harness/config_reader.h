// Typed, path-aware reading of one mapping of an experiment config: the
// shared vocabulary of config.cc's error messages ("PATH: expected an
// integer, got the string 'x'", "PATH: unknown key 'k' (valid: ...)").
#ifndef DYNSPARSE_EXPERIMENTS_HARNESS_CONFIG_READER_H_
#define DYNSPARSE_EXPERIMENTS_HARNESS_CONFIG_READER_H_

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "experiments/harness/yaml_json.h"
#include "nlohmann/json.hpp"

namespace dynsparse::config_internal {

using nlohmann::json;

inline absl::Status Bad(const std::string& path, const std::string& message) {
  return absl::InvalidArgumentError(
      absl::StrCat(path.empty() ? "(top level)" : path, ": ", message));
}

inline std::string ValidList(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return absl::StrCat("(valid: ", absl::StrJoin(names, ", "), ")");
}

// Typed access to one mapping of the config; absent and null keys are
// treated alike so `--set key=null` restores a default.
class MapReader {
 public:
  MapReader(const json& node, std::string path)
      : node_(node), path_(std::move(path)) {}

  static absl::StatusOr<MapReader> Make(const json& node,
                                        const std::string& path) {
    if (!node.is_object()) {
      return Bad(path,
                 absl::StrCat("expected a mapping, got ", JsonTypeName(node)));
    }
    return MapReader(node, path);
  }

  absl::Status CheckKeys(const std::vector<std::string>& valid) const {
    for (const auto& [key, value] : node_.items()) {
      if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
        return Bad(Path(key),
                   absl::StrCat("unknown key '", key, "' ", ValidList(valid)));
      }
    }
    return absl::OkStatus();
  }

  bool Has(const std::string& key) const {
    return node_.contains(key) && !node_.at(key).is_null();
  }
  const json& At(const std::string& key) const { return node_.at(key); }
  std::string Path(const std::string& key) const {
    return JoinYamlPath(path_, key);
  }

  absl::Status Required(const std::string& key) const {
    if (!Has(key)) return Bad(Path(key), "required key is missing");
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> String(const std::string& key,
                                     const std::string& fallback) const {
    if (!Has(key)) return fallback;
    if (!At(key).is_string()) {
      return Bad(Path(key), absl::StrCat("expected a string, got ",
                                         JsonTypeName(At(key))));
    }
    return At(key).get<std::string>();
  }

  absl::StatusOr<std::string> Choice(
      const std::string& key, const std::string& fallback,
      const std::vector<std::string>& valid) const {
    ASSIGN_OR_RETURN(std::string value, String(key, fallback));
    if (std::find(valid.begin(), valid.end(), value) == valid.end()) {
      return Bad(Path(key), absl::StrCat("unknown value '", value, "' ",
                                         ValidList(valid)));
    }
    return value;
  }

  absl::StatusOr<int64_t> Int(const std::string& key, int64_t fallback,
                              int64_t min) const {
    if (!Has(key)) return fallback;
    if (!At(key).is_number_integer()) {
      return Bad(Path(key), absl::StrCat("expected an integer, got ",
                                         JsonTypeName(At(key))));
    }
    const int64_t value = At(key).get<int64_t>();
    if (value < min) {
      return Bad(Path(key), absl::StrCat("must be >= ", min, ", got ", value));
    }
    return value;
  }

  // A string or a list of strings, each one of `valid` when given.
  absl::StatusOr<std::vector<std::string>> StringList(
      const std::string& key, const std::vector<std::string>& fallback) const {
    if (!Has(key)) return fallback;
    json list = At(key);
    if (list.is_string()) list = json::array({list});
    if (!list.is_array()) {
      return Bad(Path(key), absl::StrCat("expected a list of strings, got ",
                                         JsonTypeName(list)));
    }
    std::vector<std::string> out;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) {
        return Bad(
            IndexYamlPath(Path(key), i),
            absl::StrCat("expected a string, got ", JsonTypeName(list[i])));
      }
      out.push_back(list[i].get<std::string>());
    }
    return out;
  }

 private:
  const json& node_;
  std::string path_;
};

}  // namespace dynsparse::config_internal

#endif  // DYNSPARSE_EXPERIMENTS_HARNESS_CONFIG_READER_H_
