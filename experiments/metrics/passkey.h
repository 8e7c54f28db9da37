// Passkey retrieval (Mohtashami & Jaggi, 2023, "Landmark Attention"): a random
// 5-digit key hidden at a chosen depth of repeated filler text, asked for at
// the end; the model must generate it greedily. The generator is the
// project's own; the prompt wording follows the paper's.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_PASSKEY_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_PASSKEY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tokenizer/tokenizer.h"

namespace dynsparse {

struct PasskeyPrompt {
  std::string key;  // Five digits.
  std::vector<int32_t>
      tokens;  // The prompt, BOS first when the tokenizer adds one.
  // The key as the prompt's continuation (" " + key), tokenized as lm-eval
  // tokenizes a loglikelihood request's continuation: the tail of
  // encode(prompt text + " " + key) after the prompt's tokens.
  std::vector<int32_t> answer;
  int64_t filler_units = 0;      // Filler sentences groups in the prompt.
  int64_t units_before_key = 0;  // Of those, how many precede the key.
};

// A prompt of at most `max_tokens` tokens (as many filler units as fit) with
// the key after round(depth * units) units. `seed` picks the key.
absl::StatusOr<PasskeyPrompt> MakePasskeyPrompt(const Tokenizer& tokenizer,
                                                int64_t max_tokens,
                                                double depth, uint64_t seed);

// Whether the first run of digits in `generated` is `key`.
bool PasskeyFound(const std::string& generated, const std::string& key);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_PASSKEY_H_
