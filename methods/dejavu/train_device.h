// Which device trains the predictors (`dynsparse calibrate --train-device`):
// "cpu" runs trainer.h's Eigen trainer, "cuda" kernels/cuda/
// predictor_trainer.h's cuBLAS trainer on GPU 0. The CUDA trainer exists
// only in builds configured with nvcc (DYNSPARSE_CUDA); without it, or
// without a usable GPU, asking for it is an error, not a fallback.
#ifndef DYNSPARSE_METHODS_DEJAVU_TRAIN_DEVICE_H_
#define DYNSPARSE_METHODS_DEJAVU_TRAIN_DEVICE_H_

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

// Trains on options.device (CheckTrainDevice's errors first).
absl::StatusOr<TrainResult> TrainPredictor(const LayerSamples& samples,
                                           const TrainOptions& options,
                                           const TrainLog& log = nullptr);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_TRAIN_DEVICE_H_
