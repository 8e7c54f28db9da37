// Trains every layer's MLP and head predictors from DIR/calibration and
// writes DIR/predictors.{safetensors,json} (predictor_set.h), with the
// per-layer validation recall/precision in the JSON.
#ifndef DYNSPARSE_METHODS_DEJAVU_TRAIN_PREDICTORS_H_
#define DYNSPARSE_METHODS_DEJAVU_TRAIN_PREDICTORS_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "core/model_config.h"
#include "methods/dejavu/train_device.h"

namespace dynsparse {

// Each part's TrainOptions::device picks its trainer (train_device.h); the
// device is recorded in predictors.json's "training" section.
struct TrainAllOptions {
  TrainOptions mlp;    // rank 0 = DefaultMlpRank; eval_keep 0.25.
  TrainOptions heads;  // rank 0 = DefaultHeadRank; eval_keep 0.5.
  TrainAllOptions();
};

// Returns the predictors.json written.
absl::StatusOr<nlohmann::json> TrainAllPredictors(
    const std::string& dir, const ModelConfig& config,
    const TrainAllOptions& options,
    const std::function<void(const std::string&)>& log = nullptr);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_TRAIN_PREDICTORS_H_
