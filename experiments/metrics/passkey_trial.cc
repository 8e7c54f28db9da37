#include "experiments/metrics/passkey_trial.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "experiments/metrics/loglikelihood.h"

namespace dynsparse {
namespace {

absl::Span<const float> LastRow(const Tensor& logits) {
  const int64_t vocab = logits.dim(1);
  return absl::MakeConstSpan(logits.data<float>() + (logits.dim(0) - 1) * vocab,
                             vocab);
}

}  // namespace

absl::StatusOr<PasskeyTrialResult> RunPasskeyTrial(
    Session& session, absl::Span<const int32_t> prompt,
    absl::Span<const int32_t> bridge, absl::Span<const int32_t> answer,
    int64_t max_new, absl::Span<const int32_t> stop_ids) {
  const int64_t n = static_cast<int64_t>(prompt.size() + bridge.size());
  const int64_t a = static_cast<int64_t>(answer.size());
  if (prompt.empty() || a == 0 || max_new < 1) {
    return absl::InvalidArgumentError(
        "a passkey trial needs a prompt, an answer and max_new >= 1");
  }
  if (n + std::max(a, max_new) > session.capacity()) {
    return absl::OutOfRangeError(absl::StrCat(
        "passkey prompt (+ bridge) of ", n, " tokens + ", std::max(a, max_new),
        " answer tokens exceeds the ", session.capacity(), "-token session"));
  }
  auto stops = [&](int32_t token) {
    return std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end();
  };
  PasskeyTrialResult result;
  result.answer_tokens = a;
  session.Reset();
  auto logits =
      session.Forward(prompt, static_cast<int64_t>(prompt.size()) - 1);
  for (size_t i = 0; i < bridge.size() && logits.ok(); ++i) {
    logits = session.Forward(bridge.subspan(i, 1), 0);
  }
  if (!logits.ok()) return logits.status();

  // Teacher-force the answer; greedy follows while its argmax is the answer.
  bool greedy_along = true;  // Greedy has emitted answer[0..t) so far.
  bool greedy_done = false;
  std::vector<float> departure;  // The row where greedy left the answer.
  int64_t departure_length = 0;
  for (int64_t t = 0; t < a; ++t) {
    const TokenScore score = ScoreToken(LastRow(*logits), answer[t]);
    result.answer_logprob += score.logprob;
    if (greedy_along && !greedy_done) {
      if (score.argmax == answer[t]) {
        result.generated.push_back(answer[t]);
        greedy_done = stops(answer[t]) ||
                      static_cast<int64_t>(result.generated.size()) == max_new;
      } else {
        greedy_along = false;
        const absl::Span<const float> row = LastRow(*logits);
        departure.assign(row.begin(), row.end());
        departure_length = session.length();
      }
    }
    const bool need_next = t + 1 < a || (greedy_along && !greedy_done);
    if (!need_next) break;
    logits = session.Forward(answer.subspan(t, 1), 0);
    if (!logits.ok()) return logits.status();
  }
  if (greedy_done) return result;

  // Greedy goes on: from the departure row (rewinding the answer's steps),
  // or from the row after the whole answer.
  std::vector<float> row;
  if (!greedy_along) {
    if (absl::Status s = session.Truncate(departure_length); !s.ok()) return s;
    row = std::move(departure);
  } else {
    const absl::Span<const float> last = LastRow(*logits);
    row.assign(last.begin(), last.end());
  }
  while (true) {
    const int32_t next = static_cast<int32_t>(ScoreToken(row, 0).argmax);
    result.generated.push_back(next);
    if (stops(next) ||
        static_cast<int64_t>(result.generated.size()) == max_new) {
      break;
    }
    logits = session.Forward(absl::MakeConstSpan(&next, 1), 0);
    if (!logits.ok()) return logits.status();
    const absl::Span<const float> last = LastRow(*logits);
    row.assign(last.begin(), last.end());
  }
  return result;
}

}  // namespace dynsparse
