// dynsparse tokenize: token ids of a text, exactly as the model sees them.
#include <iostream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "core/io/model_loader.h"
#include "datasets/text_file.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/model_setup.h"

namespace dynsparse {

int RunTokenize(const CommandArgs& args) {
  std::vector<FlagSpec> specs = ModelFlagSpecs();
  specs.push_back({"text", FlagKind::kValue, "UTF-8 text file to tokenize"});
  specs.push_back({"string", FlagKind::kValue, "text given inline instead"});
  specs.push_back({"no-special", FlagKind::kSwitch,
                   "do not add BOS/EOS (add_special_tokens=False)"});
  specs.push_back({"json", FlagKind::kSwitch, "print {\"ids\":[...]}"});
  if (WantsHelp(args)) {
    PrintCommandHelp("tokenize", "Token ids of a text file.", specs);
    return 0;
  }
  auto flags = ParseFlags(args, specs);
  if (!flags.ok()) return ReportError("tokenize", flags.status());

  std::string text;
  if (flags->Has("text") == flags->Has("string")) {
    return ReportError("tokenize", absl::InvalidArgumentError(
                                       "give exactly one of --text, --string"));
  }
  if (flags->Has("text")) {
    auto read = ReadTextFile(flags->Get("text"));
    if (!read.ok()) return ReportError("tokenize", read.status());
    text = *std::move(read);
  } else {
    text = flags->Get("string");
  }
  // A llama2.c tokenizer needs the vocabulary size from the checkpoint header.
  int64_t llama2c_vocab = 0;
  const std::string model = flags->Get("model");
  if (flags->Get("tokenizer").ends_with(".bin") && model.ends_with(".bin")) {
    auto loaded = LoadModel(model, LoadOptions{});
    if (!loaded.ok()) return ReportError("tokenize", loaded.status());
    llama2c_vocab = loaded->config.vocab_size;
  }
  auto tokenizer = OpenTokenizer(*flags, llama2c_vocab);
  if (!tokenizer.ok()) return ReportError("tokenize", tokenizer.status());
  const std::vector<int32_t> ids =
      (*tokenizer)->Encode(text, !flags->Has("no-special"));
  if (flags->Has("json")) {
    std::cout << nlohmann::json{{"ids", ids}}.dump() << std::endl;
  } else {
    std::cout << absl::StrJoin(ids, " ") << "\n";
    std::cerr << ids.size() << " tokens\n";
  }
  return 0;
}

}  // namespace dynsparse
