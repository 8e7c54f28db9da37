#include "kernels/cuda/cuda_switches.h"

#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace dynsparse::cuda {
namespace {

constexpr absl::string_view kPrefix = "DYNSPARSE_CUDA_";

using Options = CudaBackendOptions;

// "0" turns a fusion or kernel off; "1" leaves the option as it was given,
// except for the options that are off by default, which "1" turns on.
struct OnOff {
  absl::string_view name;
  bool Options::*field;  // nullptr: read where it applies.
  bool one_turns_on = false;
};
constexpr OnOff kOnOff[] = {
    {"FUSE", &Options::fused_ops},
    {"FUSE_ATTENTION", &Options::fused_decode_attention},
    {"FUSE_NORM", &Options::fuse_norm},
    {"GATED_PAIRS", &Options::gated_pairs},
    {"SPLIT_ATTENTION", &Options::split_prefill_attention},
    {"PIPELINED_SPLITS", &Options::pipelined_split_attention},
    {"FLASH_PREFILL", &Options::flash_prefill_attention},
    {"ROUNDED_NORM", &Options::rounded_norm_output},
    {"SIDE_WORK", &Options::side_work},
    {"LAZY_MMA", &Options::lazy_kv_tensor_cores},
    {"STAGE_ONCE", &Options::stage_once},
    {"TOPK_CLUSTER", &Options::topk_cluster},
    {"DECODE_STACK", &Options::decode_stack, /*one_turns_on=*/true},
    {"EARLY_READS", &Options::early_reads},
    {"TOP_COUNT", &Options::top_count},
    {"TOP_COUNT_BINS", &Options::top_count_bins},
    {"KV_F16", &Options::f16_kv_cache},
    {"ATTENTION_CLUSTER", &Options::cluster_decode_attention},
    {"EARLY_KV", &Options::early_kv_loads},
    {"EARLY_MLP", &Options::early_mlp_copies},
    {"MLP_SUM_IN_KERNEL", &Options::fused_mlp_sum_in_kernel,
     /*one_turns_on=*/true},
    {"ROW_GROUPS", &Options::fused_row_groups},
    {"MLP_ONE_BLOCK", &Options::fused_mlp_one_block_an_sm},
    {"PDL", nullptr},
    {"EARLY_LOADS", nullptr},
    {"STORE_PREFETCH", nullptr},
    {"GEMV_BOUNDS", nullptr},
    {"DEEP_MMA", nullptr},
    {"WEIGHTS_EVICT_FIRST", nullptr},
};

// A whole number, at least `min`, or one of `choices` when given.
struct Number {
  absl::string_view name;
  int64_t Options::*field;
  int64_t min;
  absl::string_view choices;  // '|'-separated; empty: any value >= min.
};
constexpr Number kNumbers[] = {
    {"FUSE_ATTENTION_MAX_KEYS", &Options::fused_decode_attention_max_keys, 0,
     ""},
    {"TC_ATTENTION_ROWS", &Options::tensor_core_attention_rows, 1, ""},
    {"TC_KEYED_ATTENTION_ROWS", &Options::tensor_core_keyed_attention_rows, 1,
     ""},
    {"TC_DECODE_KEYS", &Options::tensor_core_decode_attention_keys, 0, ""},
    // The decode kernel has 16-, 32- and 64-key chunk variants.
    {"DECODE_CHUNK", &Options::decode_chunk_keys, 16, "16|32|64"},
    // The o-projection's blocks that load before the PDL wait: every Nth.
    {"ACCUMULATE_EARLY_EVERY", &Options::accumulate_early_every, 0,
     "0|1|2|3|4|8"},
    // The lazy K/V kernel has 2- and 4-row variants (0: automatic).
    {"SPARSE_ROWS", &Options::sparse_rows_per_warp, 0, "0|2|4"},
    // The tensor-core lazy K/V kernel's two occupancy builds.
    {"LAZY_MMA_BLOCKS", &Options::lazy_kv_mma_blocks_per_sm, 0, "0|2|3"},
    // The one-launch sparse MLP: never, where measured faster, everywhere.
    {"FUSED_MLP", &Options::fused_sparse_mlp, 0, "0|1|2"},
    // Its cluster size (0: the first of an order whose one wave holds the
    // units).
    {"MLP_CLUSTER", &Options::fused_sparse_mlp_cluster, 0, "0|4|8|12|16"},
};

// Flash prefill block shapes (warps x blocks per SM) the kernel is built
// for (flash_prefill.cu).
struct FlashShape {
  absl::string_view name;
  FlashPrefillConfig config;
};
constexpr FlashShape kFlashShapes[] = {
    {"4x2", {4, 2}}, {"4x3", {4, 3}}, {"8x1", {8, 1}}};

// Build settings that share the prefix (tools/build.sh); no backend reads
// them.
constexpr absl::string_view kBuildOnly[] = {"ARCHS"};

bool IsChoice(absl::string_view choices, absl::string_view value) {
  for (absl::string_view c : absl::StrSplit(choices, '|')) {
    if (c == value) return true;
  }
  return false;
}

absl::Status BadValue(absl::string_view name, absl::string_view value,
                      absl::string_view accepted) {
  return absl::InvalidArgumentError(
      absl::StrCat("environment variable ", kPrefix, name, "='", value,
                   "': expected ", accepted, " (docs/cuda.md)"));
}

std::string KnownNames() {
  std::vector<absl::string_view> names;
  for (const OnOff& s : kOnOff) names.push_back(s.name);
  for (const Number& s : kNumbers) names.push_back(s.name);
  names.push_back("FLASH_CONFIG");
  return absl::StrJoin(names, ", ");
}

absl::Status ApplyOne(absl::string_view name, absl::string_view value,
                      Options* options) {
  for (const OnOff& s : kOnOff) {
    if (s.name != name) continue;
    if (value != "0" && value != "1") return BadValue(name, value, "0 or 1");
    if (s.field != nullptr && (value == "0" || s.one_turns_on)) {
      options->*s.field = value == "1";
    }
    return absl::OkStatus();
  }
  for (const Number& s : kNumbers) {
    if (s.name != name) continue;
    int64_t n = 0;
    const bool ok =
        absl::SimpleAtoi(value, &n) &&
        (s.choices.empty() ? n >= s.min : IsChoice(s.choices, value));
    if (!ok) {
      return BadValue(name, value,
                      s.choices.empty()
                          ? absl::StrCat("a whole number >= ", s.min)
                          : absl::StrCat("one of ", s.choices));
    }
    options->*s.field = n;
    return absl::OkStatus();
  }
  if (name == "FLASH_CONFIG") {
    for (const FlashShape& shape : kFlashShapes) {
      if (shape.name != value) continue;
      options->flash_prefill_config = shape.config;
      return absl::OkStatus();
    }
    return BadValue(
        name, value,
        absl::StrCat("one of ",
                     absl::StrJoin(kFlashShapes, "|",
                                   [](std::string* out, const FlashShape& s) {
                                     absl::StrAppend(out, s.name);
                                   })));
  }
  for (absl::string_view build : kBuildOnly) {
    if (name == build) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown environment variable ", kPrefix, name,
                   " (the CUDA backend reads ", kPrefix, "{", KnownNames(),
                   "}; docs/cuda.md)"));
}

}  // namespace

absl::Status ApplyCudaSwitches(absl::Span<const absl::string_view> environment,
                               CudaBackendOptions* options) {
  for (absl::string_view entry : environment) {
    if (!absl::StartsWith(entry, kPrefix)) continue;
    const size_t eq = entry.find('=');
    if (eq == absl::string_view::npos) continue;
    const absl::string_view name =
        entry.substr(kPrefix.size(), eq - kPrefix.size());
    if (absl::Status s = ApplyOne(name, entry.substr(eq + 1), options);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

std::string OptionToggle::Assignment() const {
  return absl::StrCat(kPrefix, name, "=", value);
}

std::vector<OptionToggle> OptionToggles() {
  std::vector<OptionToggle> toggles;
  for (const OnOff& s : kOnOff) {
    if (s.field != nullptr) {
      toggles.push_back({s.name, s.one_turns_on ? "1" : "0"});
    }
  }
  return toggles;
}

std::vector<absl::string_view> ProcessEnvironment() {
  std::vector<absl::string_view> entries;
  for (char** env = environ; env != nullptr && *env != nullptr; ++env) {
    entries.emplace_back(*env);
  }
  return entries;
}

}  // namespace dynsparse::cuda
