// Passkey retrieval (Mohtashami & Jaggi, 2023, "Landmark Attention"): a random
// 5-digit key hidden at a chosen depth of repeated filler text, asked for at
// the end; the model must generate it greedily. The generator is the
// project's own; the prompt wording follows the paper's.
//
// The follow-up variant hides two keys: a pass key, which the prompt asks
// for, and a secret number, which is asked only after the answer. The answer
// and the second question (the bridge) are fed as decode steps, so a token
// pruning method has already chosen its tokens by the prompt's last token,
// which looks for the pass key; the secret number is scored. It is the case
// LazyLLM's revival exists for: a token that did not matter at the prompt's
// end matters later. Static pruning cannot bring it back.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_PASSKEY_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_PASSKEY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tokenizer/tokenizer.h"

namespace dynsparse {

struct PasskeySpec {
  double depth = 0.5;  // Where the scored key sits, in [0, 1] of the filler.
  uint64_t seed = 0;   // Picks the keys.
  bool followup = false;
  double pass_key_depth = 1.0;  // Follow-up only: the asked, unscored key.
};

struct PasskeyPrompt {
  std::string key;  // The scored key: five digits.
  std::vector<int32_t>
      tokens;  // The prompt, BOS first when the tokenizer adds one.
  // Follow-up only: " <pass key>.\n\nWhat is the secret number? The secret
  // number is", the tokens fed after the prompt before the scored key.
  std::vector<int32_t> bridge;
  // The key as the continuation (" " + key) of prompt + bridge, tokenized as
  // lm-eval tokenizes a loglikelihood request's continuation: the tail of
  // encode(prompt text + bridge text + " " + key) after the first tokens.
  std::vector<int32_t> answer;
  std::string pass_key;          // Follow-up only: the key the prompt asks.
  int64_t filler_units = 0;      // Filler sentences groups in the prompt.
  int64_t units_before_key = 0;  // Of those, how many precede the key.
};

// A prompt (with its bridge) of at most `max_tokens` tokens, as many filler
// units as fit, with the scored key after round(depth * units) units.
absl::StatusOr<PasskeyPrompt> MakePasskeyPrompt(const Tokenizer& tokenizer,
                                                int64_t max_tokens,
                                                const PasskeySpec& spec);

// Whether the first run of digits in `generated` is `key`.
bool PasskeyFound(const std::string& generated, const std::string& key);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_PASSKEY_H_
