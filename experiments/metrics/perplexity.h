// Token-level sliding-window perplexity (the protocol of HF's "Perplexity of
// fixed-length models" guide), counting each scored token exactly once.
//
// Windows start at 0, stride, 2*stride, ... and hold up to `context` tokens.
// A window scores the tokens after the previous window's end (the first window
// scores from position 1: position 0 has no context), each conditioned on
// every earlier token of its window. HF's guide multiplies each window's mean
// loss by (scored - 1) instead of scored; that differs slightly from the exact
// mean computed here, and the test fixtures record both.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_PERPLEXITY_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_PERPLEXITY_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/graph/session.h"

namespace dynsparse {

struct PerplexityOptions {
  int64_t context = 1024;
  int64_t stride = 512;
};

struct PerplexityResult {
  double nll_sum = 0.0;  // Natural-log negative log-likelihood, summed.
  int64_t tokens = 0;    // Tokens scored.
  int64_t windows = 0;
  double perplexity() const;
};

// Runs every window through `session` (reset per window). `progress` is
// called after each window with (tokens scored so far, total to score).
absl::StatusOr<PerplexityResult> SlidingWindowPerplexity(
    Session& session, absl::Span<const int32_t> ids,
    const PerplexityOptions& options,
    const std::function<void(int64_t, int64_t)>& progress = nullptr);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_PERPLEXITY_H_
