#include "methods/dejavu/train_device.h"

#include <memory>

#include "absl/strings/str_cat.h"
#if DYNSPARSE_WITH_CUDA
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/predictor_trainer.h"
#endif

namespace dynsparse {
#if DYNSPARSE_WITH_CUDA
namespace {

// The CUDA error, prefixed with the flag that asked for the device.
absl::Status FlagError(const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat("--train-device cuda: ", status.message()));
}

}  // namespace
#endif

bool CudaTrainingBuiltIn() { return DYNSPARSE_WITH_CUDA != 0; }

absl::Status CheckTrainDevice(const std::string& device) {
  if (device == "cpu") return absl::OkStatus();
  if (device != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--train-device '", device, "' (valid: cpu, cuda)"));
  }
#if DYNSPARSE_WITH_CUDA
  if (absl::StatusOr<int> count = cuda::CudaDeviceCount(); !count.ok()) {
    return FlagError(count.status());
  }
  return absl::OkStatus();
#else
  return absl::FailedPreconditionError(
      "--train-device cuda: this build has no CUDA trainer (configured "
      "without CUDA: DYNSPARSE_CUDA=OFF or no nvcc); use --train-device cpu");
#endif
}

absl::StatusOr<TrainResult> TrainPredictor(const LayerSamples& samples,
                                           const TrainOptions& options,
                                           const TrainLog& log) {
  if (absl::Status s = CheckTrainDevice(options.device); !s.ok()) return s;
  if (options.device == "cpu") {
    return TrainPredictorCpu(samples, options, log);
  }
#if DYNSPARSE_WITH_CUDA
  absl::StatusOr<std::unique_ptr<cuda::DeviceContext>> ctx =
      cuda::DeviceContext::Create(/*device=*/0, /*workspace_bytes=*/0);
  if (!ctx.ok()) return FlagError(ctx.status());
  return cuda::TrainPredictorCuda(**ctx, samples, options, {}, log);
#else
  return absl::FailedPreconditionError("no CUDA trainer in this build");
#endif
}

}  // namespace dynsparse
