#include "kernels/backend_factory.h"

#include "absl/strings/str_cat.h"
#include "core/random_weights.h"
#include "kernels/cpu/cpu_backend.h"
#if DYNSPARSE_WITH_CUDA
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device_weights.h"
#endif

namespace dynsparse {

bool CudaBackendBuiltIn() { return DYNSPARSE_WITH_CUDA != 0; }

absl::Status CheckDeviceName(const std::string& device) {
  if (device == "cpu") return absl::OkStatus();
  if (device == "cuda") {
    if (!CudaBackendBuiltIn()) {
      return absl::FailedPreconditionError(
          "--device cuda: this build has no CUDA backend (nvcc was not found "
          "at configure time); use --device cpu");
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--device '", device, "' (valid: cpu, cuda)"));
}

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(
    const BackendRequest& request, ModelWeights* weights) {
  if (absl::Status s = CheckDeviceName(request.device); !s.ok()) return s;
  if (request.device == "cpu") {
    return std::unique_ptr<Backend>(
        std::make_unique<CpuBackend>(request.threads));
  }
#if DYNSPARSE_WITH_CUDA
  cuda::CudaBackendOptions options;
  options.device = request.cuda_device;
  options.cuda_graphs = request.cuda_graphs;
  absl::StatusOr<std::unique_ptr<cuda::CudaBackend>> backend =
      cuda::CudaBackend::Create(options);
  if (!backend.ok()) {
    return absl::Status(
        backend.status().code(),
        absl::StrCat("--device cuda: ", backend.status().message()));
  }
  std::unique_ptr<Backend> created = std::move(*backend);
  if (weights != nullptr) {
    if (absl::Status s = MoveWeightsToBackend(*created, weights); !s.ok()) {
      return s;
    }
  }
  return created;
#else
  return absl::FailedPreconditionError("no CUDA backend in this build");
#endif
}

absl::Status MoveWeightsToBackend(Backend& backend, ModelWeights* weights) {
#if DYNSPARSE_WITH_CUDA
  if (auto* cuda = dynamic_cast<cuda::CudaBackend*>(&backend)) {
    absl::StatusOr<ModelWeights> device = cuda->UploadWeights(*weights);
    if (!device.ok()) return device.status();
    *weights = std::move(*device);
  }
#endif
  return absl::OkStatus();
}

absl::StatusOr<ModelWeights> RandomWeightsFor(Backend& backend,
                                              const ModelConfig& config,
                                              uint64_t seed, DType dtype) {
#if DYNSPARSE_WITH_CUDA
  if (auto* cuda = dynamic_cast<cuda::CudaBackend*>(&backend)) {
    return cuda::DeviceRandomWeights(cuda->context(), config, seed, dtype);
  }
#endif
  return RandomWeights(config, seed, dtype);
}

}  // namespace dynsparse
