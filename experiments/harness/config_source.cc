#include "experiments/harness/config_source.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "experiments/harness/yaml_json.h"

namespace dynsparse {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

absl::StatusOr<json> ReadWithIncludes(const fs::path& path,
                                      std::vector<std::string>& chain) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  const std::string key = ec ? path.string() : canonical.string();
  for (const std::string& open : chain) {
    if (open == key) {
      std::vector<std::string> names = chain;
      names.push_back(key);
      return absl::InvalidArgumentError(absl::StrCat(
          path.string(),
          ": include cycle: ", absl::StrJoin(names, " includes ")));
    }
  }
  ASSIGN_OR_RETURN(json tree, ReadYamlFile(path.string()));
  if (tree.is_null()) tree = json::object();
  if (!tree.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": the top level must be a mapping, got ",
                     JsonTypeName(tree)));
  }
  if (!tree.contains("include")) return tree;

  json includes = tree["include"];
  tree.erase("include");
  if (includes.is_string()) includes = json::array({includes});
  if (!includes.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(),
                     ": include: expected a file name or a list of them, got ",
                     JsonTypeName(includes)));
  }
  chain.push_back(key);
  json merged = json::object();
  for (size_t i = 0; i < includes.size(); ++i) {
    if (!includes[i].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path.string(), ": include[", i, "]: expected a file name, got ",
          JsonTypeName(includes[i])));
    }
    const fs::path base = path.parent_path() / includes[i].get<std::string>();
    ASSIGN_OR_RETURN(json base_tree, ReadWithIncludes(base, chain));
    MergeConfigTree(base_tree, merged);
  }
  chain.pop_back();
  MergeConfigTree(tree, merged);
  return merged;
}

// One step of an override path: a mapping key or a list index.
struct PathStep {
  std::string key;
  long index = -1;
};

absl::StatusOr<std::vector<PathStep>> ParseOverridePath(
    const std::string& path, const std::string& assignment) {
  std::vector<PathStep> steps;
  size_t i = 0;
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", assignment, ": ", why));
  };
  while (i < path.size()) {
    if (path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string::npos || close == i + 1) {
        return bad("unclosed or empty [index]");
      }
      const std::string digits = path.substr(i + 1, close - i - 1);
      if (digits.find_first_not_of("0123456789") != std::string::npos ||
          digits.size() > 6) {
        return bad(absl::StrCat("'", digits, "' is not a list index"));
      }
      steps.push_back({"", std::stol(digits)});
      i = close + 1;
      if (i < path.size() && path[i] == '.') ++i;
      continue;
    }
    const size_t end = path.find_first_of(".[", i);
    const std::string key =
        path.substr(i, end == std::string::npos ? std::string::npos : end - i);
    if (key.empty()) return bad("empty key in the path");
    steps.push_back({key, -1});
    if (end == std::string::npos) break;
    i = path[end] == '.' ? end + 1 : end;
    if (path[end] == '.' && i == path.size()) return bad("path ends with '.'");
  }
  if (steps.empty()) return bad("empty key path");
  return steps;
}

}  // namespace

void MergeConfigTree(const nlohmann::json& top, nlohmann::json& base) {
  if (!top.is_object() || !base.is_object()) {
    base = top;
    return;
  }
  for (const auto& [key, value] : top.items()) {
    if (value.is_null()) {
      base.erase(key);
    } else if (value.is_object() && base.contains(key) &&
               base[key].is_object()) {
      MergeConfigTree(value, base[key]);
    } else {
      base[key] = value;
    }
  }
}

absl::StatusOr<nlohmann::json> ReadConfigTree(const std::string& path) {
  std::vector<std::string> chain;
  return ReadWithIncludes(fs::path(path), chain);
}

absl::Status ApplySetOverride(const std::string& assignment,
                              nlohmann::json& tree) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", assignment, ": expected key.path=value"));
  }
  ASSIGN_OR_RETURN(const std::vector<PathStep> steps,
                   ParseOverridePath(assignment.substr(0, eq), assignment));
  ASSIGN_OR_RETURN(json value, ParseYaml(assignment.substr(eq + 1),
                                         absl::StrCat("--set ", assignment)));
  json* node = &tree;
  std::string where;
  for (const PathStep& step : steps) {
    if (step.index >= 0) {
      if (!node->is_array()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--set ", assignment, ": ", where.empty() ? "(top level)" : where,
            " is not a list"));
      }
      if (static_cast<size_t>(step.index) >= node->size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--set ", assignment, ": ", where, " has ",
                         node->size(), " entries"));
      }
      where = IndexYamlPath(where, step.index);
      node = &(*node)[step.index];
    } else {
      if (node->is_null()) *node = json::object();
      if (!node->is_object()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--set ", assignment, ": ", where, " is not a mapping (it is ",
            JsonTypeName(*node), ")"));
      }
      where = JoinYamlPath(where, step.key);
      node = &(*node)[step.key];
    }
  }
  *node = std::move(value);
  return absl::OkStatus();
}

}  // namespace dynsparse
