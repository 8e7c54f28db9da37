#include "experiments/metrics/passkey.h"

#include <algorithm>
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
constexpr char kFollowup[] =
    ".\n\nWhat is the secret number? The secret number is";

// A key sentence group inserted before filler unit `before` (or after the
// last one when before >= units).
struct Needle {
  int64_t before = 0;
  std::string text;
};

std::string KeyText(const std::string& name, const std::string& key) {
  return absl::StrCat(" The ", name, " is ", key, ". Remember it. ", key,
                      " is the ", name, ".");
}

// Needles at the same unit keep their order.
std::string Build(const std::vector<Needle>& needles, int64_t units) {
  std::string text = kHeader;
  for (int64_t i = 0; i <= units; ++i) {
    for (const Needle& n : needles) {
      if (std::min(n.before, units) == i) text += n.text;
    }
    if (i < units) text += kFiller;
  }
  return text + kQuestion;
}

int64_t Before(double depth, int64_t units) {
  return static_cast<int64_t>(std::llround(depth * static_cast<double>(units)));
}

absl::Status CheckDepth(double depth, const char* what) {
  if (depth < 0 || depth > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("passkey ", what, " must be in [0, 1], got ", depth));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PasskeyPrompt> MakePasskeyPrompt(const Tokenizer& tokenizer,
                                                int64_t max_tokens,
                                                const PasskeySpec& spec) {
  if (absl::Status s = CheckDepth(spec.depth, "depth"); !s.ok()) return s;
  if (absl::Status s = CheckDepth(spec.pass_key_depth, "pass_key_depth");
      !s.ok()) {
    return s;
  }
  std::mt19937_64 rng(spec.seed);
  auto draw = [&] { return absl::StrCat(10000 + rng() % 90000); };
  PasskeyPrompt p;
  p.key = draw();
  std::string bridge_text;
  if (spec.followup) {
    do {
      p.pass_key = draw();
    } while (p.pass_key == p.key);
    bridge_text = absl::StrCat(" ", p.pass_key, kFollowup);
  }
  auto text_of = [&](int64_t units) {
    if (!spec.followup) {
      return Build({{Before(spec.depth, units), KeyText("pass key", p.key)}},
                   units);
    }
    return Build(
        {{Before(spec.pass_key_depth, units), KeyText("pass key", p.pass_key)},
         {Before(spec.depth, units), KeyText("secret number", p.key)}},
        units);
  };
  auto size = [&](int64_t units) {
    return static_cast<int64_t>(
        tokenizer.Encode(text_of(units) + bridge_text, true).size());
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
  p.units_before_key = Before(spec.depth, lo);
  const std::string text = text_of(lo);
  TokenizedRequest request = EncodeRequest(
      tokenizer, {text + bridge_text, absl::StrCat(" ", p.key)}, true);
  p.answer = std::move(request.continuation);
  if (!spec.followup) {
    p.tokens = std::move(request.context);
    return p;
  }
  // The prompt ends at the question; the rest of the context is the bridge.
  p.tokens = tokenizer.Encode(text, true);
  const std::vector<int32_t>& context = request.context;
  if (context.size() <= p.tokens.size() ||
      !std::equal(p.tokens.begin(), p.tokens.end(), context.begin())) {
    return absl::InternalError(
        "passkey follow-up: the tokenizer does not split prompt + bridge at "
        "the end of the question");
  }
  p.bridge.assign(context.begin() + p.tokens.size(), context.end());
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
