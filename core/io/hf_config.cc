#include "core/io/hf_config.h"

#include <array>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/io/file_util.h"
#include "core/io/hf_config_internal.h"
#include "core/io/json_util.h"
#include "core/status_macros.h"

namespace dynsparse {
namespace hf_config_internal {

absl::StatusOr<int64_t> PositiveInt(const JsonFields& fields,
                                    absl::string_view field, int64_t max) {
  ASSIGN_OR_RETURN(const int64_t value, fields.Int(field));
  if (value < 1 || value > max) {
    return fields.Error(field,
                        absl::StrCat("must be in [1, ", max, "], got ", value));
  }
  return value;
}

absl::StatusOr<int64_t> PositiveIntOr(const JsonFields& fields,
                                      absl::string_view field, int64_t fallback,
                                      int64_t max) {
  if (!fields.Has(field)) return fallback;
  return PositiveInt(fields, field, max);
}

absl::StatusOr<Activation> ParseActivation(const JsonFields& fields,
                                           absl::string_view field,
                                           absl::string_view fallback) {
  ASSIGN_OR_RETURN(const std::string name,
                   fields.StringOr(field, std::string(fallback)));
  if (name == "relu") return Activation::kRelu;
  if (name == "silu" || name == "swish") return Activation::kSilu;
  if (name == "gelu") return Activation::kGelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") {
    return Activation::kGeluTanh;
  }
  return absl::UnimplementedError(absl::StrCat(
      fields.label(), ": field '", fields.FieldPath(field),
      "': unsupported activation '", name,
      "' (supported: relu, silu, gelu, gelu_new, gelu_pytorch_tanh)"));
}

}  // namespace hf_config_internal

namespace {

using hf_config_internal::kMaxVocab;
using hf_config_internal::PositiveInt;

// Configs are a few KB; anything past this is not a config.
constexpr int64_t kMaxConfigBytes = 16 << 20;

struct Architecture {
  absl::string_view name;
  absl::string_view model_type;
  ModelFamily family;
  // transformers' defaults for the special token ids (-1: none).
  int64_t bos;
  int64_t eos;
  int64_t pad;
};

constexpr std::array<Architecture, 4> kArchitectures = {{
    {"LlamaForCausalLM", "llama", ModelFamily::kLlama, 1, 2, -1},
    {"MistralForCausalLM", "mistral", ModelFamily::kLlama, 1, 2, -1},
    {"OPTForCausalLM", "opt", ModelFamily::kOpt, 2, 2, 1},
    {"Qwen2ForCausalLM", "qwen2", ModelFamily::kLlama, -1, -1, -1},
}};

// architectures[0], or model_type for configs written without architectures.
absl::StatusOr<const Architecture*> FindArchitecture(const JsonFields& fields) {
  const nlohmann::json& root = fields.object();
  if (fields.Has("architectures")) {
    const nlohmann::json& list = *root.find("architectures");
    if (!list.is_array() || list.empty() || !list[0].is_string()) {
      return fields.Error("architectures",
                          "expected a non-empty list of strings");
    }
    const std::string& name = list[0].get_ref<const std::string&>();
    for (const Architecture& arch : kArchitectures) {
      if (arch.name == name) return &arch;
    }
    return absl::UnimplementedError(absl::StrCat(
        fields.label(), ": architectures[0]: unknown architecture '", name,
        "' (supported: ", SupportedArchitectures(), ")"));
  }
  if (!fields.Has("model_type"))
    return fields.Error("architectures", "missing");
  ASSIGN_OR_RETURN(const std::string model_type, fields.String("model_type"));
  for (const Architecture& arch : kArchitectures) {
    if (arch.model_type == model_type) return &arch;
  }
  return absl::UnimplementedError(absl::StrCat(
      fields.label(), ": field 'model_type': unknown model type '", model_type,
      "' and no architectures (supported: ", SupportedArchitectures(), ")"));
}

// 5.x writes "dtype", 4.x "torch_dtype"; informational, so f32 when absent.
absl::StatusOr<DType> ParseCheckpointDType(const JsonFields& fields) {
  const absl::string_view field = fields.Has("dtype") ? "dtype" : "torch_dtype";
  if (!fields.Has(field)) return DType::kF32;
  ASSIGN_OR_RETURN(const std::string name, fields.String(field));
  absl::StatusOr<DType> dtype = ParseDType(absl::StripPrefix(name, "torch."));
  if (!dtype.ok()) {
    return fields.Error(field, absl::StrCat("unsupported dtype '", name,
                                            "' (supported: float32, float16, "
                                            "bfloat16)"));
  }
  return *dtype;
}

// Absent ids take the architecture's default; an explicit null means "none",
// as in transformers.
absl::StatusOr<int64_t> TokenId(const JsonFields& fields,
                                absl::string_view field, int64_t fallback) {
  if (!fields.object().contains(field)) return fallback;
  return fields.IntOr(field, -1);
}

absl::Status ParseTokenIds(const JsonFields& fields, const Architecture& arch,
                           ModelConfig* config) {
  ASSIGN_OR_RETURN(config->bos_token_id,
                   TokenId(fields, "bos_token_id", arch.bos));
  ASSIGN_OR_RETURN(config->pad_token_id,
                   TokenId(fields, "pad_token_id", arch.pad));
  if (fields.object().contains("eos_token_id")) {
    ASSIGN_OR_RETURN(config->eos_token_ids,
                     fields.IntOrIntList("eos_token_id"));
  } else if (arch.eos >= 0) {
    config->eos_token_ids = {arch.eos};
  }
  return absl::OkStatus();
}

}  // namespace

std::string SupportedArchitectures() {
  std::vector<absl::string_view> names;
  for (const Architecture& arch : kArchitectures) names.push_back(arch.name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<ModelConfig> ParseHfConfig(absl::string_view json_text,
                                          absl::string_view label) {
  ASSIGN_OR_RETURN(const nlohmann::json root, ParseJson(json_text, label));
  if (!root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": expected a JSON object, got ", root.type_name()));
  }
  const JsonFields fields(root, std::string(label));
  ASSIGN_OR_RETURN(const Architecture* arch, FindArchitecture(fields));

  ModelConfig config;
  config.architecture = std::string(arch->name);
  config.family = arch->family;
  ASSIGN_OR_RETURN(
      config.model_type,
      fields.StringOr("model_type", std::string(arch->model_type)));
  ASSIGN_OR_RETURN(config.vocab_size,
                   PositiveInt(fields, "vocab_size", kMaxVocab));
  ASSIGN_OR_RETURN(config.checkpoint_dtype, ParseCheckpointDType(fields));
  RETURN_IF_ERROR(ParseTokenIds(fields, *arch, &config));
  if (arch->family == ModelFamily::kOpt) {
    RETURN_IF_ERROR(hf_config_internal::ParseOptFields(fields, &config));
  } else {
    RETURN_IF_ERROR(hf_config_internal::ParseLlamaFields(fields, &config));
  }
  return config;
}

absl::StatusOr<ModelConfig> LoadHfConfig(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text,
                   ReadSmallFile(path, kMaxConfigBytes));
  return ParseHfConfig(text, path);
}

}  // namespace dynsparse
