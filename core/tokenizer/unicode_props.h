// Unicode character classes and transforms (via ICU) with the exact meanings
// the Hugging Face `tokenizers` regexes and normalizers give them.
#ifndef DYNSPARSE_CORE_TOKENIZER_UNICODE_PROPS_H_
#define DYNSPARSE_CORE_TOKENIZER_UNICODE_PROPS_H_

#include <string>
#include <string_view>

namespace dynsparse::tok {

// \p{L}: general category Lu, Ll, Lt, Lm or Lo.
bool IsLetter(char32_t cp);
// \p{N} and Rust's char::is_numeric: Nd, Nl or No.
bool IsNumber(char32_t cp);
// Oniguruma's \s and Rust's char::is_whitespace: the White_Space property.
bool IsWhiteSpace(char32_t cp);
// Rust's char::is_alphanumeric: Alphabetic or Nd/Nl/No.
bool IsAlphanumeric(char32_t cp);
// Rust regex's \w: Alphabetic, M, Nd, Pc or Join_Control.
bool IsWordChar(char32_t cp);
// General category M (Mn, Mc, Me).
bool IsMark(char32_t cp);
// ASCII punctuation or general category P.
bool IsPunctuation(char32_t cp);

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

// Unicode normalization of UTF-8 text (invalid bytes become U+FFFD).
std::string NormalizeUnicode(std::string_view text, NormalForm form);

// Full (context-free) lowercase mapping of each code point, like Rust's
// char::to_lowercase applied one char at a time (so 'İ' -> "i̇", and a final
// 'Σ' stays 'σ').
std::string LowercaseChars(std::string_view text);

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_UNICODE_PROPS_H_
