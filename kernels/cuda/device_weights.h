// Model weights resident on the GPU: uploads of loaded checkpoints, and
// random weights of real architectures generated on the device itself.
#ifndef DYNSPARSE_KERNELS_CUDA_DEVICE_WEIGHTS_H_
#define DYNSPARSE_KERNELS_CUDA_DEVICE_WEIGHTS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/model_config.h"
#include "core/model_weights.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

// Device copies of every tensor of `host` (same dtypes; empty stays empty;
// tensors that alias each other, such as a tied lm_head, stay aliased).
// Checks free device memory first and names the shortfall.
absl::StatusOr<ModelWeights> UploadWeights(const DeviceContext& ctx,
                                           const ModelWeights& host);

// Random weights with the distributions of core/random_weights.h (linear
// N(0, 1/fan_in), norm weights 1 + N(0, 0.1^2), biases N(0, 0.05^2)), drawn
// by a counter-based hash on the device so a 66B-parameter model needs no
// host staging. Deterministic in `seed`, but not the same values as the host
// generator. ResourceExhausted, with the sizes, when the device is too small.
absl::StatusOr<ModelWeights> DeviceRandomWeights(const DeviceContext& ctx,
                                                 const ModelConfig& config,
                                                 uint64_t seed, DType dtype);

// Bytes of all distinct tensors of `w` (a tied lm_head counts once).
int64_t WeightBytes(const ModelWeights& w);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_DEVICE_WEIGHTS_H_
