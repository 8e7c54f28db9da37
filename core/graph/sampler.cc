#include "core/graph/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"

namespace dynsparse {

absl::Status ValidateSamplingOptions(const SamplingOptions& o) {
  if (o.greedy) return absl::OkStatus();
  if (!(o.temperature > 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--temperature must be > 0, got ", o.temperature));
  }
  if (!(o.top_p > 0.0 && o.top_p <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--top-p must be in (0, 1], got ", o.top_p));
  }
  if (o.top_k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--top-k must be >= 0, got ", o.top_k));
  }
  return absl::OkStatus();
}

Sampler::Sampler(const SamplingOptions& options)
    : options_(options), rng_(options.seed) {}

int32_t Sampler::Next(absl::Span<const float> logits) {
  if (options_.greedy) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) -
                                logits.begin());
  }
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  // Highest logit first; stable so equal logits keep id order.
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  size_t keep = order.size();
  if (options_.top_k > 0) keep = std::min<size_t>(keep, options_.top_k);

  const double max_logit = logits[order[0]];
  std::vector<double> probs(keep);
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    probs[i] = std::exp((logits[order[i]] - max_logit) / options_.temperature);
    total += probs[i];
  }
  // Nucleus: the smallest prefix whose mass reaches top_p.
  double mass = 0.0;
  size_t nucleus = keep;
  for (size_t i = 0; i < keep; ++i) {
    mass += probs[i] / total;
    if (mass >= options_.top_p) {
      nucleus = i + 1;
      break;
    }
  }
  std::discrete_distribution<size_t> pick(probs.begin(),
                                          probs.begin() + nucleus);
  return order[pick(rng_)];
}

}  // namespace dynsparse
