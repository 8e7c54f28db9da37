// One place that turns "--device cpu|cuda" into a Backend and puts the
// model's weights where that backend reads them.
#ifndef DYNSPARSE_KERNELS_BACKEND_FACTORY_H_
#define DYNSPARSE_KERNELS_BACKEND_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/graph/backend.h"
#include "core/model_config.h"
#include "core/model_weights.h"

namespace dynsparse {

struct BackendRequest {
  std::string device = "cpu";  // "cpu" | "cuda"
  int threads = 0;             // CPU threads (0: all cores)
  int cuda_device = 0;
  bool cuda_graphs = true;  // Replay decode steps as CUDA graphs.
};

// True when this binary was built with the CUDA backend.
bool CudaBackendBuiltIn();

// Validates the device name (InvalidArgument naming the valid ones; a
// FailedPrecondition when CUDA is not built in or no GPU is usable).
absl::Status CheckDeviceName(const std::string& device);

// Creates the backend. When `weights` is non-null its tensors are moved to
// the backend's device (CUDA: uploaded once, host copies released), so a
// Session built from them runs there.
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(
    const BackendRequest& request, ModelWeights* weights);

// Moves `weights` to where `backend` reads them (CUDA: uploads once, keeping
// dtypes and tied tensors; CPU: nothing to do). For callers that create the
// backend before loading the model.
absl::Status MoveWeightsToBackend(Backend& backend, ModelWeights* weights);

// Random weights of `config` (core/random_weights.h distributions) where
// `backend` reads them: generated directly in device memory on CUDA (no host
// staging, so 66B-parameter shapes fit a machine with less host memory), on
// the host for the CPU. Fails with ResourceExhausted naming the sizes when
// the memory is short.
absl::StatusOr<ModelWeights> RandomWeightsFor(Backend& backend,
                                              const ModelConfig& config,
                                              uint64_t seed, DType dtype);

}  // namespace dynsparse

#endif  // DYNSPARSE_KERNELS_BACKEND_FACTORY_H_
