// Architecture presets of published models (dimensions from their HF
// config.json files), for random-weight models of real shapes: timing and
// memory planning without the checkpoints (`--model random:llama-2-7b`).
#ifndef DYNSPARSE_CORE_MODEL_PRESETS_H_
#define DYNSPARSE_CORE_MODEL_PRESETS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model_config.h"

namespace dynsparse {

struct ModelPreset {
  std::string name;  // e.g. "opt-6.7b", "llama-2-7b"
  ModelConfig config;
};

const std::vector<ModelPreset>& ModelPresets();

// The preset's config; unknown names list the valid ones.
absl::StatusOr<ModelConfig> FindModelPreset(absl::string_view name);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_MODEL_PRESETS_H_
