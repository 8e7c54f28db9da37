#include "methods/dejavu/train_predictors.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "methods/dejavu/calibration.h"
#include "methods/dejavu/predictor_set.h"
#include "methods/dejavu/train_device.h"

namespace dynsparse {
namespace {

nlohmann::json OptionsJson(const TrainOptions& o) {
  return {{"rank", o.rank},
          {"max_epochs", o.epochs},
          {"batch", o.batch},
          {"lr", o.lr},
          {"weight_decay", o.weight_decay},
          {"patience", o.patience},
          {"val_fraction", o.val_fraction},
          {"eval_keep", o.eval_keep},
          {"stop_recall", o.stop_recall},
          {"seed", o.seed},
          {"device", o.device},
          {"loss",
           "class-weighted BCE: positives 1, negatives batch positive rate "
           "+ 0.005"},
          {"optimizer", "AdamW"},
          {"inputs", "scaled to unit RMS per row (top-K is scale-free)"}};
}

}  // namespace

TrainAllOptions::TrainAllOptions() {
  mlp.eval_keep = 0.25;
  mlp.lr = 1e-3;
  heads.eval_keep = 0.5;
  heads.lr = 1e-3;
  heads.report_keeps = {0.75, 0.5, 0.25};
}

absl::StatusOr<nlohmann::json> TrainAllPredictors(
    const std::string& dir, const ModelConfig& config,
    const TrainAllOptions& given,
    const std::function<void(const std::string&)>& log) {
  // A missing GPU fails here, not after the first layer's samples are read;
  // each device is opened once for every layer.
  ASSIGN_OR_RETURN(std::unique_ptr<TrainDevice> mlp_device,
                   TrainDevice::Open(given.mlp.device));
  std::unique_ptr<TrainDevice> heads_device;
  if (given.heads.device != given.mlp.device) {
    ASSIGN_OR_RETURN(heads_device, TrainDevice::Open(given.heads.device));
  }
  TrainDevice& heads_trainer = heads_device ? *heads_device : *mlp_device;
  ASSIGN_OR_RETURN(const CalibrationData data, OpenCalibration(dir, config));
  TrainAllOptions options = given;
  if (options.mlp.rank <= 0) options.mlp.rank = DefaultMlpRank(config);
  if (options.heads.rank <= 0) options.heads.rank = DefaultHeadRank(config);

  PredictorSet set;
  set.mlp_rank = options.mlp.rank;
  set.head_rank = options.heads.rank;
  nlohmann::json layers = nlohmann::json::array();
  for (int64_t l = 0; l < config.num_layers; ++l) {
    nlohmann::json entry = {{"layer", l}};
    for (bool heads : {false, true}) {
      const char* part = heads ? "heads" : "mlp";
      ASSIGN_OR_RETURN(const LayerSamples samples,
                       ReadLayerSamples(data, config, l, heads));
      auto layer_log = [&](const std::string& line) {
        if (log) log(absl::StrCat("layer ", l, " ", part, ": ", line));
      };
      ASSIGN_OR_RETURN(
          TrainResult trained,
          (heads ? heads_trainer : *mlp_device)
              .Train(samples, heads ? options.heads : options.mlp, layer_log));
      entry[part] = trained.metrics;
      (heads ? set.heads : set.mlp).push_back(std::move(trained.weights));
    }
    layers.push_back(entry);
  }
  set.metadata = {
      {"model", data.meta.value("model", "")},
      {"calibration",
       {{"corpus", data.meta.value("corpus", "")},
        {"tokens", data.tokens},
        {"context", data.meta.value("context", 0)}}},
      {"mlp_label", data.meta.value("mlp_label", "")},
      {"head_label", data.meta.value("head_label", "")},
      {"training",
       {{"mlp", OptionsJson(options.mlp)},
        {"heads", OptionsJson(options.heads)}}},
      {"validation", "last val_fraction of the calibration tokens"},
      {"layers", layers},
  };
  RETURN_IF_ERROR(SavePredictors(dir, config, set));
  return set.metadata;
}

}  // namespace dynsparse
