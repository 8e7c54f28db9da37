#include "kernels/backend_factory.h"

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_backend.h"
#if DYNSPARSE_WITH_CUDA
#include "kernels/cuda/cuda_backend.h"
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
  if (weights != nullptr) {
    absl::StatusOr<ModelWeights> device = (*backend)->UploadWeights(*weights);
    if (!device.ok()) return device.status();
    *weights = std::move(*device);
  }
  return std::unique_ptr<Backend>(std::move(*backend));
#else
  return absl::FailedPreconditionError("no CUDA backend in this build");
#endif
}

}  // namespace dynsparse
