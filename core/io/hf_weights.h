// Hugging Face tensor names -> ModelWeights. Every tensor the config implies
// must exist with exactly the implied shape; extra tensors (rotary inv_freq
// buffers, a tied lm_head) are ignored.
#ifndef DYNSPARSE_CORE_IO_HF_WEIGHTS_H_
#define DYNSPARSE_CORE_IO_HF_WEIGHTS_H_

#include "absl/status/statusor.h"
#include "core/io/tensor_source.h"
#include "core/model_config.h"
#include "core/model_weights.h"

namespace dynsparse {

// Dispatches on config.family; weights are converted to `dtype`.
absl::StatusOr<ModelWeights> LoadHfWeights(const ModelConfig& config,
                                           const TensorSource& source,
                                           DType dtype);

// model.decoder.* names (or decoder.* in some OPT exports).
absl::StatusOr<ModelWeights> LoadOptWeights(const ModelConfig& config,
                                            const TensorSource& source,
                                            DType dtype);
// model.* names of Llama, Mistral and Qwen2.
absl::StatusOr<ModelWeights> LoadLlamaWeights(const ModelConfig& config,
                                              const TensorSource& source,
                                              DType dtype);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_HF_WEIGHTS_H_
