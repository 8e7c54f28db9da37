// Where a config's JSON tree comes from before validation: the YAML file, the
// base files it `include:`s, and the command line's --set overrides.
//
// Merge rules: a file's includes are merged first, in list order, then the
// file itself on top. Mappings merge key by key, recursively; a list or
// scalar replaces the inherited value whole; `key: null` deletes an inherited
// key. Include paths are relative to the including file. A cycle is an error
// that lists the chain.
#ifndef DYNSPARSE_EXPERIMENTS_HARNESS_CONFIG_SOURCE_H_
#define DYNSPARSE_EXPERIMENTS_HARNESS_CONFIG_SOURCE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace dynsparse {

// Reads `path` with its includes resolved; the result has no `include` key.
absl::StatusOr<nlohmann::json> ReadConfigTree(const std::string& path);

// Merges `top` onto `base` by the rules above.
void MergeConfigTree(const nlohmann::json& top, nlohmann::json& base);

// Applies one "key.path=value" override: the path uses '.' between keys and
// [i] for list items (methods[1].mlp_keep); the value is YAML
// ("[0.5, 0.25]", "true", "'0.5'" for a string). Missing mapping keys are
// created; a list index must exist.
absl::Status ApplySetOverride(const std::string& assignment,
                              nlohmann::json& tree);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_HARNESS_CONFIG_SOURCE_H_
