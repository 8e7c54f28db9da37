#include "experiments/metrics/rolling_loglikelihood.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"

namespace dynsparse {
namespace {

// Adds log p(targets[t]) over the last targets.size() rows of `input`.
absl::Status ScoreWindow(Session& session, absl::Span<const int32_t> input,
                         absl::Span<const int32_t> targets,
                         RollingResult* out) {
  session.Reset();
  const int64_t first = static_cast<int64_t>(input.size() - targets.size());
  auto logits = session.Forward(input, first);
  if (!logits.ok()) return logits.status();
  const int64_t vocab = logits->dim(1);
  const float* data = logits->data<float>();
  for (size_t t = 0; t < targets.size(); ++t) {
    const float* row = data + static_cast<int64_t>(t) * vocab;
    const float mx = *std::max_element(row, row + vocab);
    double sum = 0.0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(row[v] - mx);
    out->logprob += static_cast<double>(row[targets[t]]) - mx - std::log(sum);
  }
  out->tokens += static_cast<int64_t>(targets.size());
  ++out->windows;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RollingResult> RollingLoglikelihood(
    Session& session, absl::Span<const int32_t> tokens, int32_t prefix_token,
    int64_t max_length) {
  RollingResult result;
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return result;
  if (max_length < 1 || session.capacity() < max_length) {
    return absl::InvalidArgumentError(absl::StrCat("max_length ", max_length,
                                                   " must be in [1, ",
                                                   session.capacity(), "]"));
  }
  const int64_t first_len = std::min(max_length, n);
  std::vector<int32_t> input = {prefix_token};
  input.insert(input.end(), tokens.begin(), tokens.begin() + first_len - 1);
  if (absl::Status s =
          ScoreWindow(session, input, tokens.subspan(0, first_len), &result);
      !s.ok()) {
    return s;
  }
  int64_t predicted = first_len;
  while (predicted < n) {
    const int64_t pred_len = std::min(n - predicted, max_length);
    const int64_t end = predicted + pred_len;
    // Disjoint window: tokens[end - max_length - 1 : end - 1] as input.
    const int64_t begin = end - max_length - 1;
    if (absl::Status s =
            ScoreWindow(session, tokens.subspan(begin, end - 1 - begin),
                        tokens.subspan(predicted, pred_len), &result);
        !s.ok()) {
      return s;
    }
    predicted = end;
  }
  return result;
}

}  // namespace dynsparse
