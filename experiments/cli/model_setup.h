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

namespace dynsparse {

// --model and --tokenizer.
std::vector<FlagSpec> ModelFlagSpecs();
// --method, --method-arg, --device, --dtype, --threads.
std::vector<FlagSpec> RunFlagSpecs();

struct OpenedModel {
  LoadedModel model;
  std::unique_ptr<Tokenizer> tokenizer;  // Null when not requested.
  std::unique_ptr<Backend> backend;      // Null when not requested.
  std::unique_ptr<Method> method;        // Null when not requested.
  std::string method_name;
  std::string dtype_name;
};

struct OpenRequest {
  bool tokenizer = true;
  bool runtime = true;  // backend + method (+ --dtype for the weights)
};

absl::StatusOr<OpenedModel> OpenModel(const ParsedFlags& flags,
                                      const OpenRequest& request);

// Tokenizer only (for `tokenize`), from --model DIR or --tokenizer.
absl::StatusOr<std::unique_ptr<Tokenizer>> OpenTokenizer(
    const ParsedFlags& flags, int64_t llama2c_vocab_size);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_CLI_MODEL_SETUP_H_
