#include "experiments/generation.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"

namespace dynsparse {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

absl::StatusOr<GenerationResult> Generate(
    Session& session, absl::Span<const int32_t> prompt,
    const GenerationOptions& options,
    const std::function<void(int32_t)>& on_token) {
  if (prompt.empty()) {
    return absl::InvalidArgumentError(
        "the prompt has no tokens (an empty prompt needs a BOS token)");
  }
  if (absl::Status s = ValidateSamplingOptions(options.sampling); !s.ok()) {
    return s;
  }
  const int64_t needed =
      static_cast<int64_t>(prompt.size()) + options.max_new_tokens;
  if (needed > session.capacity()) {
    return absl::OutOfRangeError(
        absl::StrCat("prompt (", prompt.size(), " tokens) + --max-new ",
                     options.max_new_tokens, " exceeds the ",
                     session.capacity(), "-token context"));
  }
  Sampler sampler(options.sampling);
  GenerationResult result;
  session.Reset();

  auto start = std::chrono::steady_clock::now();
  auto logits =
      session.Forward(prompt, static_cast<int64_t>(prompt.size()) - 1);
  if (!logits.ok()) return logits.status();
  result.prefill_seconds = SecondsSince(start);

  start = std::chrono::steady_clock::now();
  auto is_stop = [&](int32_t id) {
    return std::find(options.stop_ids.begin(), options.stop_ids.end(), id) !=
           options.stop_ids.end();
  };
  if (options.sampling.greedy && options.max_new_tokens > 0) {
    // The argmax on the device, the host one step behind it.
    const int32_t first =
        Sampler(options.sampling)
            .Next(absl::MakeConstSpan(logits->data<float>(), logits->dim(1)));
    auto take = [&](int32_t id) {
      result.tokens.push_back(id);
      if (on_token) on_token(id);
      result.stopped_on_eos = is_stop(id);
      return !result.stopped_on_eos;
    };
    if (take(first) && options.max_new_tokens > 1) {
      if (absl::Status s =
              session.DecodeGreedy(first, options.max_new_tokens - 1, take);
          !s.ok()) {
        return s;
      }
    }
    result.decode_seconds = SecondsSince(start);
    return result;
  }
  for (int64_t step = 0; step < options.max_new_tokens; ++step) {
    const int32_t next = sampler.Next(
        absl::MakeConstSpan(logits->data<float>(), logits->dim(1)));
    result.tokens.push_back(next);
    if (on_token) on_token(next);
    if (is_stop(next)) {
      result.stopped_on_eos = true;
      break;
    }
    if (step + 1 == options.max_new_tokens) break;
    logits = session.Forward(absl::MakeConstSpan(&next, 1), 0);
    if (!logits.ok()) return logits.status();
  }
  result.decode_seconds = SecondsSince(start);
  return result;
}

}  // namespace dynsparse
