// model.safetensors.index.json: which shard file holds each tensor of a
// checkpoint split across several .safetensors files.
#ifndef DYNSPARSE_CORE_IO_SHARDED_INDEX_H_
#define DYNSPARSE_CORE_IO_SHARDED_INDEX_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dynsparse {

inline constexpr absl::string_view kShardedIndexName =
    "model.safetensors.index.json";

struct ShardedIndex {
  std::map<std::string, std::string, std::less<>> weight_map;  // tensor->shard
  std::vector<std::string> shards;  // Distinct shard names, sorted.
};

// Parses {"weight_map": {tensor: shard}, "metadata": {...}}; `label` (the
// index path) prefixes errors. Every shard name must pass ValidateShardName.
absl::StatusOr<ShardedIndex> ParseShardedIndex(absl::string_view json_text,
                                               absl::string_view label);

// A shard must be a plain file name in the index's folder: no separators and
// no "." / "..", so an index cannot point the loader anywhere else.
absl::Status ValidateShardName(absl::string_view shard, absl::string_view label,
                               absl::string_view tensor);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_SHARDED_INDEX_H_
