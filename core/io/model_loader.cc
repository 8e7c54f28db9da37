// LoadModel dispatch and the Hugging Face folder loader.
#include "core/io/model_loader.h"

#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/io/file_util.h"
#include "core/io/hf_config.h"
#include "core/io/hf_weights.h"
#include "core/io/tensor_source.h"
#include "core/io/weights_id.h"
#include "core/model_presets.h"
#include "core/random_weights.h"
#include "core/status_macros.h"

namespace dynsparse {

absl::StatusOr<LoadedModel> LoadHfModel(const std::string& dir,
                                        const LoadOptions& options) {
  if (options.dtype == DType::kI32) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": weights must load as f32, f16 or bf16"));
  }
  ASSIGN_OR_RETURN(ModelConfig config,
                   LoadHfConfig(JoinPath(dir, "config.json")));
  ASSIGN_OR_RETURN(const TensorSource source, TensorSource::FromHfFolder(dir));
  ASSIGN_OR_RETURN(ModelWeights weights,
                   LoadHfWeights(config, source, options.dtype));
  config.weights_id = WeightsIdOfTensors(source);
  LoadedModel model;
  model.config = std::move(config);
  model.weights = std::move(weights);
  model.source = dir;
  model.checkpoint_bytes = static_cast<int64_t>(source.tensor_bytes());
  return model;
}

namespace {

// Host memory the process may still take, from the kernel's count of
// available pages (free plus reclaimable).
int64_t AvailableHostBytes() {
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? int64_t{pages} * page_size : -1;
}

}  // namespace

absl::StatusOr<LoadedModel> LoadRandomModel(absl::string_view spec,
                                            const LoadOptions& options) {
  ModelConfig config;
  if (absl::EndsWith(spec, ".json")) {
    ASSIGN_OR_RETURN(config, LoadHfConfig(std::string(spec)));
  } else {
    ASSIGN_OR_RETURN(config, FindModelPreset(spec));
  }
  config.weights_id = WeightsIdOfRandom(spec, options.random_seed);
  LoadedModel model;
  model.source = absl::StrCat(kRandomModelPrefix, spec);
  if (!options.config_only) {
    // Check before allocating: a 7B model in f32 does not fit every machine.
    const int64_t needed = config.ParameterCount() *
                           static_cast<int64_t>(DTypeSize(options.dtype));
    const int64_t available = AvailableHostBytes();
    if (available >= 0 && needed > available) {
      return absl::ResourceExhaustedError(absl::StrCat(
          model.source, ": random weights need ", needed / (1 << 20),
          " MiB in ", DTypeName(options.dtype), " but only ",
          available / (1 << 20), " MiB of host memory is available"));
    }
    model.weights = RandomWeights(config, options.random_seed, options.dtype);
  }
  model.config = std::move(config);
  return model;
}

absl::StatusOr<LoadedModel> LoadModel(const std::string& path,
                                      const LoadOptions& options) {
  if (absl::StartsWith(path, kRandomModelPrefix)) {
    return LoadRandomModel(
        absl::string_view(path).substr(kRandomModelPrefix.size()), options);
  }
  if (IsDirectory(path)) return LoadHfModel(path, options);
  if (IsRegularFile(path)) {
    if (absl::EndsWith(path, ".bin")) return LoadLlama2cModel(path, options);
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     ": not a model: expected a Hugging Face model folder or a "
                     "llama2.c .bin checkpoint"));
  }
  return absl::NotFoundError(absl::StrCat(path, ": no such file or folder"));
}

}  // namespace dynsparse
