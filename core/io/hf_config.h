// Hugging Face config.json -> ModelConfig, for OPT and the Llama family
// (Llama, Mistral, Qwen2), in both transformers 4.x layout (rope_theta,
// rope_scaling, torch_dtype) and 5.x layout (rope_parameters, dtype).
#ifndef DYNSPARSE_CORE_IO_HF_CONFIG_H_
#define DYNSPARSE_CORE_IO_HF_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model_config.h"

namespace dynsparse {

// "LlamaForCausalLM, MistralForCausalLM, OPTForCausalLM, Qwen2ForCausalLM".
std::string SupportedArchitectures();

// `label` (the file path) prefixes every error, which also names the field.
absl::StatusOr<ModelConfig> ParseHfConfig(absl::string_view json_text,
                                          absl::string_view label);
absl::StatusOr<ModelConfig> LoadHfConfig(const std::string& path);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_HF_CONFIG_H_
