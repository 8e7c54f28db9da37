#include "experiments/metrics/passkey.h"

#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "experiments/metrics/loglikelihood.h"

namespace dynsparse {
namespace {

constexpr char kHeader[] =
    "There is an important info hidden inside a lot of irrelevant text. Find "
    "it and memorize it. I will quiz you about the important information "
    "there.";
constexpr char kFiller[] =
    " The grass is green. The sky is blue. The sun is yellow. Here we go. "
    "There and back again.";
constexpr char kQuestion[] = "\n\nWhat is the pass key? The pass key is";

std::string Build(const std::string& key, int64_t units, int64_t before) {
  std::string text = kHeader;
  for (int64_t i = 0; i < units; ++i) {
    if (i == before) {
      absl::StrAppend(&text, " The pass key is ", key, ". Remember it. ", key,
                      " is the pass key.");
    }
    text += kFiller;
  }
  if (before >= units) {
    absl::StrAppend(&text, " The pass key is ", key, ". Remember it. ", key,
                    " is the pass key.");
  }
  return text + kQuestion;
}

int64_t Before(double depth, int64_t units) {
  return static_cast<int64_t>(std::llround(depth * static_cast<double>(units)));
}

}  // namespace

absl::StatusOr<PasskeyPrompt> MakePasskeyPrompt(const Tokenizer& tokenizer,
                                                int64_t max_tokens,
                                                double depth, uint64_t seed) {
  if (depth < 0 || depth > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("passkey depth must be in [0, 1], got ", depth));
  }
  std::mt19937_64 rng(seed);
  PasskeyPrompt p;
  p.key = absl::StrCat(10000 + rng() % 90000);
  auto size = [&](int64_t units) {
    return static_cast<int64_t>(
        tokenizer.Encode(Build(p.key, units, Before(depth, units)), true)
            .size());
  };
  if (size(0) > max_tokens) {
    return absl::InvalidArgumentError(
        absl::StrCat("passkey context ", max_tokens, " is shorter than the ",
                     size(0), "-token prompt without filler"));
  }
  // Largest unit count that fits: grow by doubling, then bisect.
  int64_t lo = 0, hi = 1;
  while (size(hi) <= max_tokens) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    (size(mid) <= max_tokens ? lo : hi) = mid;
  }
  p.filler_units = lo;
  p.units_before_key = Before(depth, lo);
  const std::string text = Build(p.key, lo, p.units_before_key);
  TokenizedRequest request =
      EncodeRequest(tokenizer, {text, absl::StrCat(" ", p.key)}, true);
  p.tokens = std::move(request.context);
  p.answer = std::move(request.continuation);
  return p;
}

bool PasskeyFound(const std::string& generated, const std::string& key) {
  size_t i = 0;
  while (i < generated.size() && !absl::ascii_isdigit(generated[i])) ++i;
  size_t j = i;
  while (j < generated.size() && absl::ascii_isdigit(generated[j])) ++j;
  return j > i && generated.substr(i, j - i) == key;
}

}  // namespace dynsparse
