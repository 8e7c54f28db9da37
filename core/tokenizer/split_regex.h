// Hand-written matchers for the pre-tokenization regexes found in
// tokenizer.json files, with Oniguruma's semantics (ordered alternation,
// greedy quantifiers with backtracking, Unicode classes). Only the exact
// pattern strings below are recognized: any other regex is rejected at load
// time rather than approximated.
#ifndef DYNSPARSE_CORE_TOKENIZER_SPLIT_REGEX_H_
#define DYNSPARSE_CORE_TOKENIZER_SPLIT_REGEX_H_

#include <optional>
#include <string_view>
#include <vector>

#include "core/tokenizer/pieces.h"

namespace dynsparse::tok {

enum class SplitRegex {
  // GPT-2 / RoBERTa / ByteLevel(use_regex=true):
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kGpt2,
  // Llama-3 / cl100k: case-insensitive contractions, \p{N}{1,3}, newlines
  // kept with punctuation and whitespace.
  kLlama3,
  // Qwen2: as kLlama3 with single digits (\p{N} instead of \p{N}{1,3}).
  kQwen2,
};

inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The matcher for a pattern string, if it is one we implement.
std::optional<SplitRegex> RecognizeSplitRegex(std::string_view pattern);

// All successive non-overlapping matches in `text`, as byte ranges.
std::vector<ByteRange> FindRegexMatches(SplitRegex regex,
                                        std::string_view text);

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_SPLIT_REGEX_H_
