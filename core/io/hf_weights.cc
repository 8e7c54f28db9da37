#include "core/io/hf_weights.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dynsparse {

absl::StatusOr<ModelWeights> LoadHfWeights(const ModelConfig& config,
                                           const TensorSource& source,
                                           DType dtype) {
  if (dtype == DType::kI32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weights must load as f32, f16 or bf16, not ", DTypeName(dtype)));
  }
  switch (config.family) {
    case ModelFamily::kOpt:
      return LoadOptWeights(config, source, dtype);
    case ModelFamily::kLlama:
      return LoadLlamaWeights(config, source, dtype);
  }
  return absl::InternalError("unknown model family");
}

}  // namespace dynsparse
