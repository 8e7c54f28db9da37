#include "experiments/cli/model_setup.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_backend.h"
#include "methods/registry.h"

namespace dynsparse {

std::vector<FlagSpec> ModelFlagSpecs() {
  return {
      {"model", FlagKind::kValue,
       "HF model folder, or a llama2.c checkpoint .bin"},
      {"tokenizer", FlagKind::kValue,
       "tokenizer: llama2.c tokenizer.bin, or a folder with tokenizer.json "
       "(default: the model folder)"},
  };
}

std::vector<FlagSpec> RunFlagSpecs() {
  return {
      {"method", FlagKind::kValue, "sparsity method", "dense"},
      {"method-arg", FlagKind::kRepeated, "method parameter key=value"},
      {"device", FlagKind::kValue, "cpu | cuda", "cpu"},
      {"dtype", FlagKind::kValue, "weight dtype: f32 | f16 | bf16", "f32"},
      {"threads", FlagKind::kValue, "CPU threads (0 = all cores)", "0"},
  };
}

absl::StatusOr<std::unique_ptr<Tokenizer>> OpenTokenizer(
    const ParsedFlags& flags, int64_t llama2c_vocab_size) {
  const std::string model = flags.Get("model");
  std::string source = flags.Get("tokenizer");
  if (source.empty()) source = model;
  if (source.empty()) {
    return absl::InvalidArgumentError("--model (or --tokenizer) is required");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(source, ec)) return LoadHfTokenizer(source);
  if (source.ends_with(".bin")) {
    if (source == model) {
      return absl::InvalidArgumentError(absl::StrCat(
          model, ": a llama2.c checkpoint needs --tokenizer TOKENIZER.bin"));
    }
    return LoadLlama2cTokenizer(source, llama2c_vocab_size);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--tokenizer ", source,
      ": expected a folder with tokenizer.json or a llama2.c .bin file"));
}

absl::StatusOr<OpenedModel> OpenModel(const ParsedFlags& flags,
                                      const OpenRequest& request) {
  OpenedModel opened;
  const std::string path = flags.Get("model");
  if (path.empty()) return absl::InvalidArgumentError("--model is required");

  LoadOptions options;
  options.config_only = !request.runtime;
  opened.dtype_name = "f32";
  if (request.runtime) {
    opened.dtype_name = flags.Get("dtype");
    ASSIGN_OR_RETURN(options.dtype, ParseDType(opened.dtype_name));
    const std::string device = flags.Get("device");
    if (device == "cuda") {
      return absl::UnimplementedError(
          "--device cuda: the CUDA backend is not implemented yet; use "
          "--device cpu");
    }
    if (device != "cpu") {
      return absl::InvalidArgumentError(
          absl::StrCat("--device '", device, "' (valid: cpu, cuda)"));
    }
  }
  ASSIGN_OR_RETURN(opened.model, LoadModel(path, options));

  if (request.tokenizer) {
    ASSIGN_OR_RETURN(opened.tokenizer,
                     OpenTokenizer(flags, opened.model.config.vocab_size));
    if (opened.tokenizer->vocab_size() > opened.model.config.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer has ", opened.tokenizer->vocab_size(),
                       " tokens but the model's vocab_size is ",
                       opened.model.config.vocab_size));
    }
  }
  if (request.runtime) {
    ASSIGN_OR_RETURN(const int64_t threads, flags.GetInt("threads"));
    opened.backend = std::make_unique<CpuBackend>(static_cast<int>(threads));
    opened.method_name = flags.Get("method");
    ASSIGN_OR_RETURN(MethodArgs args,
                     MethodArgs::Parse(flags.GetAll("method-arg")));
    ASSIGN_OR_RETURN(opened.method, CreateMethod(opened.method_name, args));
    RETURN_IF_ERROR(opened.method->Attach(opened.model.config));
  }
  return opened;
}

}  // namespace dynsparse
