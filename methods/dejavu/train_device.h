// Which device trains the predictors (`dynsparse calibrate --train-device`,
// a dejavu job's `train_device` under `dynsparse run`): "cpu" runs trainer.h's
// Eigen trainer, "cuda" kernels/cuda/predictor_trainer.h's cuBLAS trainer on
// GPU 0. The CUDA trainer exists only in builds configured with nvcc
// (DYNSPARSE_CUDA); without it, or without a usable GPU, asking for it is an
// error, not a fallback.
#ifndef DYNSPARSE_METHODS_DEJAVU_TRAIN_DEVICE_H_
#define DYNSPARSE_METHODS_DEJAVU_TRAIN_DEVICE_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "methods/dejavu/trainer.h"

namespace dynsparse {

// True when this binary has the CUDA trainer.
bool CudaTrainingBuiltIn();

// OK for "cpu", and for "cuda" when the CUDA trainer is built in and a GPU
// is usable; else InvalidArgument (unknown name, naming the valid ones) or
// FailedPrecondition (no CUDA in this build, or no device: the CUDA
// runtime's reason). Messages name --train-device.
absl::Status CheckTrainDevice(const std::string& device);

// A training device opened once for many predictors: on "cuda" it holds
// the stream and cuBLAS handle that every layer's training reuses
// (TrainAllPredictors trains 2 x layers predictors).
class TrainDevice {
 public:
  // CheckTrainDevice's errors, or the CUDA runtime's when the context
  // cannot be made.
  static absl::StatusOr<std::unique_ptr<TrainDevice>> Open(
      const std::string& device);
  ~TrainDevice();
  TrainDevice(const TrainDevice&) = delete;
  TrainDevice& operator=(const TrainDevice&) = delete;

  const std::string& name() const { return name_; }

  // Trains one predictor here; options.device must name this device.
  absl::StatusOr<TrainResult> Train(const LayerSamples& samples,
                                    const TrainOptions& options,
                                    const TrainLog& log = nullptr);

 private:
  struct Cuda;  // The CUDA context, in builds that have one.
  explicit TrainDevice(std::string name);

  std::string name_;
  std::unique_ptr<Cuda> cuda_;
};

// Trains on options.device (CheckTrainDevice's errors first), opening the
// device for this one predictor.
absl::StatusOr<TrainResult> TrainPredictor(const LayerSamples& samples,
                                           const TrainOptions& options,
                                           const TrainLog& log = nullptr);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_TRAIN_DEVICE_H_
