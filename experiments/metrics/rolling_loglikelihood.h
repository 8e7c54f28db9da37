// lm-eval's loglikelihood_rolling: the log-likelihood of a whole token list
// in disjoint windows of max_length predicted tokens (get_rolling_token_windows
// with context_len 1 + make_disjoint_window): the first window is the prefix
// token + tokens[:L-1] predicting tokens[:L]; each later window predicts the
// next max_length (or fewer) tokens from the max_length tokens before them.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_ROLLING_LOGLIKELIHOOD_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_ROLLING_LOGLIKELIHOOD_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/graph/session.h"

namespace dynsparse {

struct RollingResult {
  double logprob = 0.0;  // Natural log, summed over every token.
  int64_t tokens = 0;
  int64_t windows = 0;
};

// `session` needs capacity >= max_length; it is reset per window.
absl::StatusOr<RollingResult> RollingLoglikelihood(
    Session& session, absl::Span<const int32_t> tokens, int32_t prefix_token,
    int64_t max_length);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_ROLLING_LOGLIKELIHOOD_H_
