// UTF-8 decoding helpers shared by the tokenizers. Input text is arbitrary
// bytes: invalid sequences never abort, they decode as U+FFFD spans.
#ifndef DYNSPARSE_CORE_TOKENIZER_UTF8_H_
#define DYNSPARSE_CORE_TOKENIZER_UTF8_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace dynsparse::tok {

inline constexpr char32_t kReplacementChar = 0xFFFD;

struct DecodedChar {
  char32_t cp = 0;  // The code point, or U+FFFD when !valid.
  size_t len = 0;   // Bytes consumed (>= 1 unless at the end of input).
  bool valid = false;
};

// Decodes the code point starting at byte `pos` (< s.size()). An invalid or
// truncated sequence yields !valid with `len` = its "maximal subpart" (the
// Unicode/WHATWG rule Rust's from_utf8_lossy uses), so each one becomes a
// single U+FFFD exactly as in Hugging Face `tokenizers`.
DecodedChar DecodeUtf8(std::string_view s, size_t pos);

// Appends the UTF-8 encoding of `cp` (must be a scalar value).
void AppendUtf8(char32_t cp, std::string* out);

// Returns `bytes` with each invalid sequence replaced by U+FFFD.
std::string Utf8Lossy(std::string_view bytes);

bool IsValidUtf8(std::string_view bytes);

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_UTF8_H_
