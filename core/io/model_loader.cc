// LoadModel dispatch and the Hugging Face folder loader.
#include "core/io/model_loader.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/io/file_util.h"
#include "core/io/hf_config.h"
#include "core/io/hf_weights.h"
#include "core/io/tensor_source.h"
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
  LoadedModel model;
  model.config = std::move(config);
  model.weights = std::move(weights);
  model.source = dir;
  model.checkpoint_bytes = static_cast<int64_t>(source.tensor_bytes());
  return model;
}

absl::StatusOr<LoadedModel> LoadModel(const std::string& path,
                                      const LoadOptions& options) {
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
