// Predictor training: one layer's bias-free rank-D map hidden -> D -> units,
// trained on calibration samples with class-weighted binary cross-entropy
// (positives weight 1, negatives the batch's positive rate + 0.005, as
// DejaVu's trainer), AdamW, shuffled mini-batches, and early stopping on
// validation recall at the evaluation K (the last `val_fraction` of the
// tokens are held out). Inputs are scaled to unit RMS per row: a bias-free
// predictor's top-K does not change with the input's scale, so the raw
// residual can be fed at run time.
//
// The loop is train_loop.h's; this file's trainer does the math with Eigen
// on the CPU, kernels/cuda/predictor_trainer.h's with cuBLAS on a GPU, and
// train_device.h picks one by TrainOptions::device.
#ifndef DYNSPARSE_METHODS_DEJAVU_TRAINER_H_
#define DYNSPARSE_METHODS_DEJAVU_TRAINER_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "methods/dejavu/calibration.h"
#include "methods/dejavu/predictor_set.h"
#include "methods/dejavu/recall_curve.h"

namespace dynsparse {

struct TrainOptions {
  int64_t rank = 0;
  int64_t epochs = 20;
  int64_t batch = 1024;
  double lr = 1e-3;
  double weight_decay = 0.01;
  int64_t patience = 5;        // Epochs without a better validation recall.
  double val_fraction = 0.05;  // Last tokens held out for validation.
  double eval_keep =
      0.25;  // Early stopping: recall of the top K = keep * units.
  double stop_recall =
      0.999;  // ... or stop once validation recall reaches this.
  std::vector<double> report_keeps = {0.5, 0.25, 0.1};
  uint64_t seed = 0;
  // "cpu" (Eigen) or "cuda" (cuBLAS, GPU 0): read by TrainPredictor
  // (train_device.h); the device-specific trainers ignore it.
  std::string device = "cpu";
};

struct TrainResult {
  PredictorWeights weights;  // Host f32: w1 [rank, hidden], w2 [units, rank].
  int64_t epochs_run = 0;
  int64_t best_epoch = 0;
  double best_recall = 0.0;
  // Validation: recall/precision at report_keeps and at the eval keep, the
  // label density, the K for 95% / 99% recall; the device and the seconds
  // spent in steps and in validation.
  nlohmann::json metrics;
};

using TrainLog = std::function<void(const std::string&)>;

// Trains on the CPU (Eigen; OpenMP threads in the GEMMs).
absl::StatusOr<TrainResult> TrainPredictorCpu(const LayerSamples& samples,
                                              const TrainOptions& options,
                                              const TrainLog& log = nullptr);

// Validation metrics of `weights` on rows [begin, end) of `samples`.
nlohmann::json EvaluatePredictor(const PredictorWeights& weights,
                                 const LayerSamples& samples, int64_t begin,
                                 int64_t end, const std::vector<double>& keeps);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_TRAINER_H_
