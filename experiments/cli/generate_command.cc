// dynsparse generate: continue a prompt with the chosen method.
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/graph/session.h"
#include "core/status_macros.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/model_setup.h"
#include "experiments/generation.h"

namespace dynsparse {
namespace {

absl::StatusOr<GenerationOptions> ReadGenerationOptions(
    const ParsedFlags& flags, const OpenedModel& opened) {
  GenerationOptions options;
  ASSIGN_OR_RETURN(options.max_new_tokens, flags.GetInt("max-new"));
  if (options.max_new_tokens < 1) {
    return absl::InvalidArgumentError("--max-new must be >= 1");
  }
  SamplingOptions& s = options.sampling;
  s.greedy = flags.Has("greedy");
  ASSIGN_OR_RETURN(s.temperature, flags.GetDouble("temperature"));
  ASSIGN_OR_RETURN(s.top_p, flags.GetDouble("top-p"));
  ASSIGN_OR_RETURN(s.top_k, flags.GetInt("top-k"));
  ASSIGN_OR_RETURN(const int64_t seed, flags.GetInt("seed"));
  s.seed = static_cast<uint64_t>(seed);
  if (s.temperature == 0.0) s.greedy = true;
  for (int64_t id : opened.model.config.eos_token_ids) {
    options.stop_ids.push_back(static_cast<int32_t>(id));
  }
  if (auto eos = opened.tokenizer->eos_id(); eos.has_value()) {
    options.stop_ids.push_back(*eos);
  }
  if (flags.Has("ignore-eos")) options.stop_ids.clear();
  return options;
}

}  // namespace

int RunGenerate(const CommandArgs& args) {
  std::vector<FlagSpec> specs = ModelFlagSpecs();
  for (FlagSpec& s : RunFlagSpecs()) specs.push_back(std::move(s));
  specs.insert(
      specs.end(),
      {
          {"prompt", FlagKind::kValue, "the text to continue", ""},
          {"max-new", FlagKind::kValue, "new tokens at most", "32"},
          {"greedy", FlagKind::kSwitch, "always take the most likely token"},
          {"temperature", FlagKind::kValue, "sampling temperature (0 = greedy)",
           "1.0"},
          {"top-p", FlagKind::kValue, "nucleus sampling mass", "1.0"},
          {"top-k", FlagKind::kValue,
           "sample among the k most likely (0 = all)", "0"},
          {"seed", FlagKind::kValue, "random seed for sampling", "0"},
          {"ignore-eos", FlagKind::kSwitch, "do not stop at end-of-sequence"},
          {"max-context", FlagKind::kValue,
           "KV cache capacity (0 = prompt + max-new)", "0"},
          {"json", FlagKind::kSwitch, "print one JSON object"},
      });
  if (WantsHelp(args)) {
    PrintCommandHelp("generate", "Continue a prompt.", specs);
    return 0;
  }
  auto flags = ParseFlags(args, specs);
  if (!flags.ok()) return ReportError("generate", flags.status());
  auto opened = OpenModel(*flags, {});
  if (!opened.ok()) return ReportError("generate", opened.status());
  auto options = ReadGenerationOptions(*flags, *opened);
  if (!options.ok()) return ReportError("generate", options.status());

  const std::string prompt = flags->Get("prompt");
  std::vector<int32_t> ids = opened->tokenizer->Encode(prompt, true);
  if (ids.empty() && opened->tokenizer->bos_id().has_value()) {
    ids.push_back(*opened->tokenizer->bos_id());  // Unconditional generation.
  }
  auto max_context = flags->GetInt("max-context");
  if (!max_context.ok()) return ReportError("generate", max_context.status());
  const int64_t capacity = *max_context > 0 ? *max_context
                                            : static_cast<int64_t>(ids.size()) +
                                                  options->max_new_tokens;
  Session session(opened->model.config, opened->model.weights, *opened->backend,
                  *opened->method, capacity);

  const bool json = flags->Has("json");
  // Continuations are decoded together with the prompt and printed past the
  // prompt's own decoding, so leading-space rules (SentencePiece strips the
  // first space of a sequence) and multi-token characters come out right.
  const std::string prompt_text = opened->tokenizer->Decode(ids, true);
  auto continuation = [&](const std::vector<int32_t>& new_ids) {
    std::vector<int32_t> all = ids;
    all.insert(all.end(), new_ids.begin(), new_ids.end());
    const std::string full = opened->tokenizer->Decode(all, true);
    return full.starts_with(prompt_text)
               ? full.substr(prompt_text.size())
               : opened->tokenizer->Decode(new_ids, true);
  };
  std::vector<int32_t> so_far;
  std::string printed;
  if (!json) std::cout << prompt << std::flush;
  auto stream = [&](int32_t id) {
    if (json) return;
    so_far.push_back(id);
    const std::string text = continuation(so_far);
    if (text.size() > printed.size() && text.starts_with(printed)) {
      std::cout << text.substr(printed.size()) << std::flush;
      printed = text;
    }
  };
  auto result = Generate(session, ids, *options, stream);
  if (!result.ok()) return ReportError("generate", result.status());
  const std::string text = continuation(result->tokens);
  const int64_t decode_steps =
      std::max<int64_t>(1, static_cast<int64_t>(result->tokens.size()) - 1);
  const double ms_per_token = 1e3 * result->decode_seconds / decode_steps;
  if (json) {
    nlohmann::json out = {
        {"prompt", prompt},
        {"prompt_ids", ids},
        {"ids", result->tokens},
        {"text", text},
        {"stopped_on_eos", result->stopped_on_eos},
        {"method", opened->method_name},
        {"dtype", opened->dtype_name},
        {"device", "cpu"},
        {"prefill_ms", 1e3 * result->prefill_seconds},
        {"decode_ms_per_token", ms_per_token},
    };
    std::cout << out.dump() << std::endl;
  } else {
    if (text.starts_with(printed)) std::cout << text.substr(printed.size());
    std::cout << std::endl;
    std::cerr << result->tokens.size() << " tokens, prefill "
              << 1e3 * result->prefill_seconds << " ms, decode " << ms_per_token
              << " ms/token (" << opened->backend->name() << ", "
              << opened->dtype_name << ", method " << opened->method_name
              << ")\n";
  }
  return 0;
}

}  // namespace dynsparse
