// The generation loop: prefill the prompt, then decode one token at a time
// until max_new tokens or an end-of-sequence id.
#ifndef DYNSPARSE_EXPERIMENTS_GENERATION_H_
#define DYNSPARSE_EXPERIMENTS_GENERATION_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/graph/sampler.h"
#include "core/graph/session.h"

namespace dynsparse {

struct GenerationOptions {
  int64_t max_new_tokens = 32;
  SamplingOptions sampling;
  std::vector<int32_t> stop_ids;  // Generation ends after emitting one.
};

struct GenerationResult {
  std::vector<int32_t> tokens;  // New tokens only.
  bool stopped_on_eos = false;
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;  // All decode steps together.
};

// `on_token` (optional) sees each new token as it is chosen, for streaming.
absl::StatusOr<GenerationResult> Generate(
    Session& session, absl::Span<const int32_t> prompt,
    const GenerationOptions& options,
    const std::function<void(int32_t)>& on_token = nullptr);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_GENERATION_H_
