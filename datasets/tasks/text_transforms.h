// String transforms lm-eval's task utilities apply to documents, re-written
// to give the same output as the Python (re, str) originals.
#ifndef DYNSPARSE_DATASETS_TASKS_TEXT_TRANSFORMS_H_
#define DYNSPARSE_DATASETS_TASKS_TEXT_TRANSFORMS_H_

#include <string>
#include <string_view>

namespace dynsparse {

// Python's str.strip() for ASCII whitespace (the data is UTF-8; non-ASCII
// whitespace such as U+00A0 is kept, a documented difference).
std::string StripAscii(std::string_view s);

// Python's s.replace(from, to): every non-overlapping occurrence, left to
// right.
std::string ReplaceAll(std::string_view s, std::string_view from,
                       std::string_view to);

// hellaswag/utils.py preprocess(): strip, " [title]" -> ". ", drop every
// "[...]" (non-greedy), then "  " -> " ".
std::string HellaswagPreprocess(std::string_view text);

// super_glue/wsc/preprocess_wsc.py general_detokenize(): re-attach
// punctuation split off by the tokenised source text.
std::string GeneralDetokenize(std::string_view text);

}  // namespace dynsparse

#endif  // DYNSPARSE_DATASETS_TASKS_TEXT_TRANSFORMS_H_
