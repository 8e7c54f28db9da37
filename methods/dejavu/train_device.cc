#include "methods/dejavu/train_device.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
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

struct TrainDevice::Cuda {
#if DYNSPARSE_WITH_CUDA
  std::unique_ptr<cuda::DeviceContext> ctx;
#endif
};

TrainDevice::TrainDevice(std::string name)
    : name_(std::move(name)), cuda_(std::make_unique<Cuda>()) {}

TrainDevice::~TrainDevice() = default;

absl::StatusOr<std::unique_ptr<TrainDevice>> TrainDevice::Open(
    const std::string& device) {
  if (absl::Status s = CheckTrainDevice(device); !s.ok()) return s;
  std::unique_ptr<TrainDevice> opened(new TrainDevice(device));
#if DYNSPARSE_WITH_CUDA
  if (device == "cuda") {
    absl::StatusOr<std::unique_ptr<cuda::DeviceContext>> ctx =
        cuda::DeviceContext::Create(/*device=*/0, /*workspace_bytes=*/0);
    if (!ctx.ok()) return FlagError(ctx.status());
    opened->cuda_->ctx = *std::move(ctx);
  }
#endif
  return opened;
}

absl::StatusOr<TrainResult> TrainDevice::Train(const LayerSamples& samples,
                                               const TrainOptions& options,
                                               const TrainLog& log) {
  if (options.device != name_) {
    return absl::InvalidArgumentError(
        absl::StrCat("--train-device ", options.device,
                     ": this trainer was opened on ", name_));
  }
  if (name_ == "cpu") return TrainPredictorCpu(samples, options, log);
#if DYNSPARSE_WITH_CUDA
  return cuda::TrainPredictorCuda(*cuda_->ctx, samples, options, {}, log);
#else
  return absl::FailedPreconditionError("no CUDA trainer in this build");
#endif
}

absl::StatusOr<TrainResult> TrainPredictor(const LayerSamples& samples,
                                           const TrainOptions& options,
                                           const TrainLog& log) {
  ASSIGN_OR_RETURN(std::unique_ptr<TrainDevice> device,
                   TrainDevice::Open(options.device));
  return device->Train(samples, options, log);
}

}  // namespace dynsparse
