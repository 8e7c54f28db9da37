#include "experiments/cli/model_setup.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/backend_factory.h"
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
    const std::string& model, const std::string& tokenizer,
    int64_t llama2c_vocab_size) {
  const std::string source = tokenizer.empty() ? model : tokenizer;
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

absl::StatusOr<std::unique_ptr<Tokenizer>> OpenTokenizer(
    const ParsedFlags& flags, int64_t llama2c_vocab_size) {
  return OpenTokenizer(flags.Get("model"), flags.Get("tokenizer"),
                       llama2c_vocab_size);
}

absl::StatusOr<ModelSpecRequest> RequestFromFlags(const ParsedFlags& flags) {
  ModelSpecRequest spec;
  spec.path = flags.Get("model");
  spec.tokenizer = flags.Get("tokenizer");
  spec.device = flags.Get("device");
  spec.dtype = flags.Get("dtype");
  spec.method = flags.Get("method");
  if (spec.device.empty()) spec.device = "cpu";
  if (spec.dtype.empty()) spec.dtype = "f32";
  if (spec.method.empty()) spec.method = "dense";
  if (!flags.Get("threads").empty()) {
    ASSIGN_OR_RETURN(spec.threads, flags.GetInt("threads"));
  }
  ASSIGN_OR_RETURN(spec.method_args,
                   MethodArgs::Parse(flags.GetAll("method-arg")));
  return spec;
}

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(
    const std::string& device, int64_t threads) {
  if (device == "cuda") {
    // kernels/backend_factory: errors if this build or machine has no CUDA.
    BackendRequest request;
    request.device = device;
    return CreateBackend(request, nullptr);
  }
  if (device != "cpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device '", device, "' (valid: cpu, cuda)"));
  }
  return std::unique_ptr<Backend>(
      std::make_unique<CpuBackend>(static_cast<int>(threads)));
}

absl::StatusOr<std::unique_ptr<Method>> CreateAttachedMethod(
    const std::string& name, const MethodArgs& args, const ModelConfig& config,
    Backend& backend) {
  ASSIGN_OR_RETURN(std::unique_ptr<Method> method, CreateMethod(name, args));
  RETURN_IF_ERROR(method->Attach(config, backend));
  return method;
}

absl::StatusOr<OpenedModel> OpenModel(const ModelSpecRequest& spec,
                                      const OpenRequest& request) {
  OpenedModel opened;
  if (spec.path.empty())
    return absl::InvalidArgumentError("--model is required");

  LoadOptions options;
  options.config_only = !request.runtime;
  opened.dtype_name = "f32";
  opened.device = spec.device;
  if (request.runtime) {
    opened.dtype_name = spec.dtype;
    ASSIGN_OR_RETURN(options.dtype, ParseDType(opened.dtype_name));
    // The backend is built before the weights load so a bad device fails
    // fast, without reading gigabytes first.
    ASSIGN_OR_RETURN(opened.backend, CreateBackend(spec.device, spec.threads));
  }
  ASSIGN_OR_RETURN(opened.model, LoadModel(spec.path, options));
  if (opened.backend != nullptr) {  // CUDA: upload the weights once.
    RETURN_IF_ERROR(
        MoveWeightsToBackend(*opened.backend, &opened.model.weights));
  }

  if (request.tokenizer) {
    ASSIGN_OR_RETURN(opened.tokenizer,
                     OpenTokenizer(spec.path, spec.tokenizer,
                                   opened.model.config.vocab_size));
    if (opened.tokenizer->vocab_size() > opened.model.config.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer has ", opened.tokenizer->vocab_size(),
                       " tokens but the model's vocab_size is ",
                       opened.model.config.vocab_size));
    }
  }
  if (request.runtime) {
    opened.method_name = spec.method;
    ASSIGN_OR_RETURN(opened.method, CreateAttachedMethod(
                                        spec.method, spec.method_args,
                                        opened.model.config, *opened.backend));
  }
  return opened;
}

absl::StatusOr<OpenedModel> OpenModel(const ParsedFlags& flags,
                                      const OpenRequest& request) {
  ASSIGN_OR_RETURN(const ModelSpecRequest spec, RequestFromFlags(flags));
  return OpenModel(spec, request);
}

}  // namespace dynsparse
