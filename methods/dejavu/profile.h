// `dynsparse profile`: per layer, how sparse the model naturally is and how
// well trained predictors find the active units, measured on a corpus with a
// dense run (the predictors read the same lookahead inputs as at run time):
//   - MLP: fraction of exact zeros, units needed to keep 95% / 99% of the
//     |activation| mass per token, the label density (calibration's label
//     rule), predictor recall at fixed keeps, and K for 95% / 99% recall;
//   - heads: the same for the head labels (top fraction by output norm).
#ifndef DYNSPARSE_METHODS_DEJAVU_PROFILE_H_
#define DYNSPARSE_METHODS_DEJAVU_PROFILE_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/backend.h"
#include "core/model_weights.h"
#include "methods/dejavu/calibration.h"
#include "methods/dejavu/predictor_set.h"

namespace dynsparse {

struct ProfileOptions {
  int64_t context = 512;
  int32_t bos_id = -1;
  CalibrationOptions labels;  // Label rules (as calibration).
  std::vector<double> mlp_keeps = {0.5, 0.25, 0.1};
  std::vector<double> head_keeps = {0.75, 0.5, 0.25};
};

// Runs on the CPU backend given; returns {"layers": [...]} (docs/dejavu.md).
absl::StatusOr<nlohmann::json> ProfilePredictors(
    const ModelConfig& config, const ModelWeights& weights, Backend& backend,
    const PredictorSet& predictors, const std::vector<int32_t>& ids,
    const ProfileOptions& options,
    const std::function<void(int64_t, int64_t)>& progress = nullptr);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_PROFILE_H_
