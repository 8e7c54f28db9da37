// Random weights of a given architecture: for tests, and for timing models of
// real shapes without their checkpoints.
#ifndef DYNSPARSE_CORE_RANDOM_WEIGHTS_H_
#define DYNSPARSE_CORE_RANDOM_WEIGHTS_H_

#include <cstdint>

#include "core/model_config.h"
#include "core/model_weights.h"

namespace dynsparse {

// Linear and embedding weights ~ N(0, scale^2) with scale = 1/sqrt(fan_in)
// (so activations keep unit scale), norm weights ~ 1 + N(0, 0.1^2), biases
// ~ N(0, 0.05^2). Deterministic in `seed`.
ModelWeights RandomWeights(const ModelConfig& config, uint64_t seed,
                           DType dtype = DType::kF32);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_RANDOM_WEIGHTS_H_
