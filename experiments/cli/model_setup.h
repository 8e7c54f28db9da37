// What every model-running command shares: the --model/--tokenizer/--method/
// --device/--dtype/--threads flags and opening everything they name.
#ifndef DYNSPARSE_EXPERIMENTS_CLI_MODEL_SETUP_H_
#define DYNSPARSE_EXPERIMENTS_CLI_MODEL_SETUP_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/backend.h"
#include "core/graph/method.h"
#include "core/io/model_loader.h"
#include "core/tokenizer/tokenizer.h"
#include "experiments/cli/flags.h"
#include "methods/method_args.h"

namespace dynsparse {

// --model and --tokenizer.
std::vector<FlagSpec> ModelFlagSpecs();
// --method, --method-arg, --device, --dtype, --threads.
std::vector<FlagSpec> RunFlagSpecs();

// Everything needed to open a model, from flags or from a config's model +
// method entry.
struct ModelSpecRequest {
  std::string path;       // HF folder, llama2.c .bin, or random:NAME.
  std::string tokenizer;  // "" = the model folder.
  std::string device = "cpu";
  std::string dtype = "f32";
  int64_t threads = 0;
  std::string method = "dense";
  MethodArgs method_args;
};

struct OpenedModel {
  LoadedModel model;
  std::unique_ptr<Tokenizer> tokenizer;  // Null when not requested.
  std::unique_ptr<Backend> backend;      // Null when not requested.
  std::unique_ptr<Method> method;        // Null when not requested.
  std::string method_name;
  std::string dtype_name;
  std::string device;
};

struct OpenRequest {
  bool tokenizer = true;
  bool runtime = true;  // backend + method (+ --dtype for the weights)
};

// The request the model flags describe (--method-arg parsed).
absl::StatusOr<ModelSpecRequest> RequestFromFlags(const ParsedFlags& flags);

absl::StatusOr<OpenedModel> OpenModel(const ModelSpecRequest& spec,
                                      const OpenRequest& request);
absl::StatusOr<OpenedModel> OpenModel(const ParsedFlags& flags,
                                      const OpenRequest& request);

// The backend of a device ("cpu" | "cuda").
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(
    const std::string& device, int64_t threads);

// A method from the registry, attached to `config` and the sessions' backend.
absl::StatusOr<std::unique_ptr<Method>> CreateAttachedMethod(
    const std::string& name, const MethodArgs& args, const ModelConfig& config,
    Backend& backend);

// Tokenizer only (for `tokenize`), from --model DIR or --tokenizer.
absl::StatusOr<std::unique_ptr<Tokenizer>> OpenTokenizer(
    const ParsedFlags& flags, int64_t llama2c_vocab_size);
absl::StatusOr<std::unique_ptr<Tokenizer>> OpenTokenizer(
    const std::string& model, const std::string& tokenizer,
    int64_t llama2c_vocab_size);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_CLI_MODEL_SETUP_H_
