// One passkey trial on a Session: the greedy answer (is the key found?) and
// the log-likelihood of the true key's tokens after the prompt, both under
// the session's method. The key is teacher-forced through the method's own
// generation path: the prompt's step prunes as the method prunes a prefill,
// then each key token is a decode step (lazyllm re-selects and may revive,
// static pruning keeps the prefill's set). Every scored row is the newest
// token of its step, so no method drops it.
//
// A follow-up prompt's bridge goes in as decode steps between the prompt and
// the answer, unscored.
//
// Greedy decoding and the teacher-forced key share their steps for as long as
// greedy emits the key's tokens; where greedy departs, the session is
// truncated back to that point and greedy goes on from the departing token.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_PASSKEY_TRIAL_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_PASSKEY_TRIAL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/graph/session.h"

namespace dynsparse {

struct PasskeyTrialResult {
  std::vector<int32_t> generated;  // Greedy tokens, at most max_new.
  double answer_logprob = 0.0;     // Sum of log p(answer[t] | prefix).
  int64_t answer_tokens = 0;
};

// `answer` is the key's tokens (non-empty); generation stops after a token of
// `stop_ids` or `max_new` tokens. The session must hold the prompt, the
// bridge and max(max_new, answer.size()) tokens.
absl::StatusOr<PasskeyTrialResult> RunPasskeyTrial(
    Session& session, absl::Span<const int32_t> prompt,
    absl::Span<const int32_t> bridge, absl::Span<const int32_t> answer,
    int64_t max_new, absl::Span<const int32_t> stop_ids);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_PASSKEY_TRIAL_H_
