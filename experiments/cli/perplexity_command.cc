// dynsparse perplexity: sliding-window token perplexity of a text.
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "core/graph/session.h"
#include "datasets/corpus_registry.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/model_setup.h"
#include "experiments/metrics/perplexity.h"

namespace dynsparse {

int RunPerplexity(const CommandArgs& args) {
  std::vector<FlagSpec> specs = ModelFlagSpecs();
  for (FlagSpec& s : RunFlagSpecs()) specs.push_back(std::move(s));
  specs.insert(
      specs.end(),
      {
          {"text", FlagKind::kValue,
           "UTF-8 text file, or a registered corpus name (wikitext2, ptb, "
           "...)"},
          {"corpus", FlagKind::kValue,
           "registered corpus name (same as --text NAME)"},
          {"context", FlagKind::kValue, "tokens per window", "1024"},
          {"stride", FlagKind::kValue, "window start spacing", "512"},
          {"max-tokens", FlagKind::kValue,
           "score only the first N tokens (0 = all)", "0"},
          {"no-special", FlagKind::kSwitch, "tokenize without BOS/EOS"},
          {"json", FlagKind::kSwitch, "print one JSON object"},
      });
  if (WantsHelp(args)) {
    PrintCommandHelp("perplexity", "Sliding-window token perplexity.", specs);
    return 0;
  }
  auto flags = ParseFlags(args, specs);
  if (!flags.ok()) return ReportError("perplexity", flags.status());
  if (flags->Has("text") == flags->Has("corpus")) {
    return ReportError(
        "perplexity",
        absl::InvalidArgumentError("give exactly one of --text, --corpus"));
  }
  PerplexityOptions options;
  auto context = flags->GetInt("context");
  auto stride = flags->GetInt("stride");
  auto max_tokens = flags->GetInt("max-tokens");
  for (const auto* v : {&context, &stride, &max_tokens}) {
    if (!v->ok()) return ReportError("perplexity", v->status());
  }
  options.context = *context;
  options.stride = *stride;

  auto corpus = LoadCorpus(flags->Has("text") ? flags->Get("text")
                                              : flags->Get("corpus"));
  if (!corpus.ok()) return ReportError("perplexity", corpus.status());
  auto opened = OpenModel(*flags, {});
  if (!opened.ok()) return ReportError("perplexity", opened.status());

  const bool add_special = !flags->Has("no-special");
  std::vector<int32_t> ids =
      opened->tokenizer->Encode(corpus->text, add_special);
  if (*max_tokens > 0 && static_cast<int64_t>(ids.size()) > *max_tokens) {
    ids.resize(*max_tokens);
  }
  const bool bos = add_special && opened->tokenizer->adds_bos();
  Session session(opened->model.config, opened->model.weights, *opened->backend,
                  *opened->method, options.context);

  const bool show_progress = isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  auto progress = [&](int64_t done, int64_t total) {
    if (!show_progress) return;
    std::cerr << absl::StrFormat("\rperplexity: %d/%d tokens", done, total)
              << std::flush;
  };
  auto result = SlidingWindowPerplexity(session, ids, options, progress);
  if (show_progress) std::cerr << "\n";
  if (!result.ok()) return ReportError("perplexity", result.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  nlohmann::json out = {
      {"metric", "perplexity"},
      {"value", result->perplexity()},
      {"tokens", result->tokens},
      {"nll_sum", result->nll_sum},
      {"context", options.context},
      {"stride", options.stride},
      {"windows", result->windows},
      {"text_tokens", ids.size()},
      {"bos", bos ? "prepended once, at the start of the text" : "none"},
      {"protocol",
       "token-level sliding window; each token scored once with up to "
       "context-1 tokens of left context"},
      {"corpus", corpus->name},
      {"model", opened->model.source},
      {"method", opened->method_name},
      {"dtype", opened->dtype_name},
      {"device", "cpu"},
      {"wall_seconds", seconds},
  };
  if (flags->Has("json")) {
    std::cout << out.dump() << std::endl;
  } else {
    std::cout << absl::StrFormat(
        "perplexity %.4f over %d tokens (context %d, stride %d, %s)\n",
        result->perplexity(), result->tokens, options.context, options.stride,
        corpus->name);
  }
  return 0;
}

}  // namespace dynsparse
