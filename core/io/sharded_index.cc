#include "core/io/sharded_index.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "core/io/json_util.h"
#include "core/status_macros.h"

namespace dynsparse {

absl::Status ValidateShardName(absl::string_view shard, absl::string_view label,
                               absl::string_view tensor) {
  const bool bad = shard.empty() || shard == "." || shard == ".." ||
                   shard.find_first_of(absl::string_view("/\\\0", 3)) !=
                       absl::string_view::npos;
  if (!bad) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      label, ": weight_map['", tensor, "']: shard name '", shard,
      "' is not a file name in the model folder (path traversal refused)"));
}

absl::StatusOr<ShardedIndex> ParseShardedIndex(absl::string_view json_text,
                                               absl::string_view label) {
  ASSIGN_OR_RETURN(const nlohmann::json root, ParseJson(json_text, label));
  if (!root.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": must be a JSON object, got ", root.type_name()));
  }
  auto it = root.find("weight_map");
  if (it == root.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": field 'weight_map': missing"));
  }
  if (!it->is_object() || it->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": field 'weight_map': must be a non-empty object, got ",
        it->is_object() ? "an empty object" : it->type_name()));
  }
  ShardedIndex index;
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : it->items()) {
    if (!shard.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, ": weight_map['", tensor,
                       "']: must be a string, got ", shard.type_name()));
    }
    const std::string& name = shard.get_ref<const std::string&>();
    RETURN_IF_ERROR(ValidateShardName(name, label, tensor));
    index.weight_map.emplace(tensor, name);
    shards.insert(name);
  }
  index.shards.assign(shards.begin(), shards.end());
  return index;
}

}  // namespace dynsparse
