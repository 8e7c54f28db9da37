#include "experiments/metrics/perplexity.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace dynsparse {
namespace {

// -log softmax(row)[target], in double.
double TokenNll(const float* row, int64_t vocab, int32_t target) {
  double max_logit = row[0];
  for (int64_t i = 1; i < vocab; ++i)
    max_logit = std::max<double>(max_logit, row[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(row[i] - max_logit);
  return std::log(sum) + max_logit - row[target];
}

}  // namespace

double PerplexityResult::perplexity() const {
  return tokens == 0 ? 0.0 : std::exp(nll_sum / tokens);
}

absl::StatusOr<PerplexityResult> SlidingWindowPerplexity(
    Session& session, absl::Span<const int32_t> ids,
    const PerplexityOptions& options,
    const std::function<void(int64_t, int64_t)>& progress) {
  const int64_t n = static_cast<int64_t>(ids.size());
  if (options.context < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--context must be >= 2, got ", options.context));
  }
  if (options.stride < 1 || options.stride > options.context) {
    return absl::InvalidArgumentError(
        absl::StrCat("--stride must be in [1, context=", options.context,
                     "], got ", options.stride));
  }
  if (n < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("text has ", n, " tokens; perplexity needs at least 2"));
  }
  if (options.context > session.capacity()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--context ", options.context, " exceeds the session's ",
                     session.capacity(), "-token capacity"));
  }
  PerplexityResult result;
  int64_t prev_end = 0;
  for (int64_t begin = 0; prev_end < n; begin += options.stride) {
    const int64_t end = std::min(begin + options.context, n);
    const int64_t first_scored = std::max(prev_end, begin + 1);
    if (first_scored < end) {
      session.Reset();
      const int64_t first_row = first_scored - 1 - begin;
      auto logits = session.Forward(ids.subspan(begin, end - begin), first_row);
      if (!logits.ok()) return logits.status();
      const int64_t vocab = logits->dim(1);
      const float* data = logits->data<float>();
      for (int64_t t = first_scored; t < end; ++t) {
        const int64_t row = t - 1 - begin - first_row;
        result.nll_sum += TokenNll(data + row * vocab, vocab, ids[t]);
        ++result.tokens;
      }
      ++result.windows;
    }
    prev_end = end;
    if (progress) progress(result.tokens, n - 1);
  }
  return result;
}

}  // namespace dynsparse
