// Loading a model from disk: a Hugging Face folder (config.json +
// model.safetensors or a sharded index) or a llama2.c checkpoint (.bin).
//
// Every failure is an absl::Status whose message names the file and the field
// or tensor at fault; nothing here aborts on bad input.
#ifndef DYNSPARSE_CORE_IO_MODEL_LOADER_H_
#define DYNSPARSE_CORE_IO_MODEL_LOADER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model_config.h"
#include "core/model_weights.h"

namespace dynsparse {

struct LoadOptions {
  // Weights are converted to this dtype at load (f32, f16 or bf16).
  DType dtype = DType::kF32;
  // random: models only: build the configuration and leave the weights empty
  // (inspect). File checkpoints are mmap'd, so loading them stays cheap.
  bool config_only = false;
  // Seed of random:NAME weights.
  uint64_t random_seed = 0;
};

struct LoadedModel {
  ModelConfig config;
  ModelWeights weights;
  std::string source;            // The path given.
  int64_t checkpoint_bytes = 0;  // Bytes of tensor data in the files read.
};

// Model paths that start with this prefix name random-weight models.
inline constexpr absl::string_view kRandomModelPrefix = "random:";

// Dispatches on the path: a directory is a HF model folder, a regular file
// ending in .bin is a llama2.c checkpoint, and "random:NAME" (a preset of
// core/model_presets.h) or "random:PATH/config.json" is that architecture
// with random weights (core/random_weights.h).
absl::StatusOr<LoadedModel> LoadModel(const std::string& path,
                                      const LoadOptions& options);

// Individual loaders, exposed for tests and tools.
absl::StatusOr<LoadedModel> LoadHfModel(const std::string& dir,
                                        const LoadOptions& options);
absl::StatusOr<LoadedModel> LoadLlama2cModel(const std::string& path,
                                             const LoadOptions& options);
absl::StatusOr<LoadedModel> LoadRandomModel(absl::string_view spec,
                                            const LoadOptions& options);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_MODEL_LOADER_H_
