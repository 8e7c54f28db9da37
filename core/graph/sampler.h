// Next-token choice from a row of logits: greedy, or temperature + top-k +
// top-p (nucleus) sampling with a seeded generator so runs are repeatable.
#ifndef DYNSPARSE_CORE_GRAPH_SAMPLER_H_
#define DYNSPARSE_CORE_GRAPH_SAMPLER_H_

#include <cstdint>
#include <random>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace dynsparse {

struct SamplingOptions {
  bool greedy = true;
  double temperature = 1.0;  // > 0
  int64_t top_k = 0;         // 0 = no limit
  double top_p = 1.0;        // (0, 1]
  uint64_t seed = 0;
};

absl::Status ValidateSamplingOptions(const SamplingOptions& options);

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);
  // Returns the chosen token id; ties in greedy mode go to the lowest id.
  int32_t Next(absl::Span<const float> logits);

 private:
  SamplingOptions options_;
  std::mt19937_64 rng_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_SAMPLER_H_
