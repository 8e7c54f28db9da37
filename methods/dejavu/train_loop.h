// The training loop both predictor trainers run (trainer.h: Eigen on the CPU;
// kernels/cuda/predictor_trainer.h: cuBLAS on a GPU): input checks, the
// validation split, the initial weights and every epoch's row order from one
// std::mt19937_64, each batch's negative-label weight and AdamW constants,
// early stopping and the metrics. A device supplies only the math
// (PredictorMath), so two trainers given one seed start from the same
// weights, see the same batches in the same order and differ only in float
// summation order.
#ifndef DYNSPARSE_METHODS_DEJAVU_TRAIN_LOOP_H_
#define DYNSPARSE_METHODS_DEJAVU_TRAIN_LOOP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "methods/dejavu/adamw.h"
#include "methods/dejavu/trainer.h"

namespace dynsparse {

// Rows [0, train) train, [train, train + val) validate.
struct TrainSplit {
  int64_t train = 0;
  int64_t val = 0;
};

// InvalidArgument for bad options (rank, batch, epochs <= 0), samples whose
// buffers do not match their shape, or too few rows to train on.
absl::StatusOr<TrainSplit> CheckTrainInputs(const LayerSamples& samples,
                                            const TrainOptions& options);

// Loss weight of a negative label in a batch holding `positives` of
// `elements` labels: min(1, positive rate + 0.005).
float NegativeWeight(int64_t positives, int64_t elements);

// One mini-batch: rows order[start, start + n) of the epoch's order.
struct BatchStep {
  int64_t start = 0;
  int64_t n = 0;
  float neg_weight = 0.0f;    // NegativeWeight of the batch's labels.
  float inv_elements = 0.0f;  // 1 / (n * units): the loss is a mean.
  AdamWScalars adam{};
};

enum class WhichWeights { kCurrent, kBest };

// The math of one device. Weights are f32 a = w1 [rank, hidden] and
// b = w2 [units, rank], row-major; a step is, for the batch's inputs x
// (each row scaled to unit RMS) and labels y:
//   h = x a^T, z = h b^T,
//   g = (sigmoid(z) - y) * (y + neg_weight * (1 - y)) * inv_elements,
//   grad_b = g^T h, grad_a = (g b)^T x, then AdamW on b and on a.
class PredictorMath {
 public:
  virtual ~PredictorMath() = default;
  virtual std::string device() const = 0;  // metrics["device"]
  // current = best = (a, b); optimiser moments zero.
  virtual absl::Status Start(const std::vector<float>& a,
                             const std::vector<float>& b) = 0;
  // The epoch's permutation of the training rows (outlives its steps).
  virtual absl::Status BeginEpoch(const std::vector<int64_t>& order) = 0;
  virtual absl::Status Step(const BatchStep& step) = 0;
  // Waits until queued steps have run (for timing; CPU: nothing to wait for).
  virtual absl::Status Synchronize() { return absl::OkStatus(); }
  // Adds the ranking, by the logits of `which`, of sample rows [begin, end).
  virtual absl::Status AddToCurve(WhichWeights which, int64_t begin,
                                  int64_t end, RecallCurve* curve) = 0;
  virtual absl::Status KeepBest() = 0;                         // best = current
  virtual absl::StatusOr<PredictorWeights> BestWeights() = 0;  // Host f32.
};

absl::StatusOr<TrainResult> RunTraining(const LayerSamples& samples,
                                        const TrainOptions& options,
                                        PredictorMath& math,
                                        const TrainLog& log);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_TRAIN_LOOP_H_
