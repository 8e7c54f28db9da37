#include "core/tokenizer/unicode_props.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#include "core/tokenizer/utf8.h"

namespace dynsparse::tok {
namespace {

bool InCategories(char32_t cp, uint32_t mask) {
  return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & mask) != 0;
}

}  // namespace

bool IsLetter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return InCategories(cp, U_GC_L_MASK);
}

bool IsNumber(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return InCategories(cp, U_GC_N_MASK);
}

bool IsWhiteSpace(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_WHITE_SPACE);
}

bool IsAlphanumeric(char32_t cp) {
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_ALPHABETIC) ||
         IsNumber(cp);
}

bool IsWordChar(char32_t cp) {
  const auto c = static_cast<UChar32>(cp);
  return u_hasBinaryProperty(c, UCHAR_ALPHABETIC) ||
         InCategories(cp, U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK) ||
         u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL);
}

bool IsMark(char32_t cp) { return InCategories(cp, U_GC_M_MASK); }

bool IsPunctuation(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= '!' && cp <= '/') || (cp >= ':' && cp <= '@') ||
           (cp >= '[' && cp <= '`') || (cp >= '{' && cp <= '~');
  }
  return InCategories(cp, U_GC_P_MASK);
}

std::string NormalizeUnicode(std::string_view text, NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = nullptr;
  switch (form) {
    case NormalForm::kNfc:
      normalizer = icu::Normalizer2::getNFCInstance(status);
      break;
    case NormalForm::kNfd:
      normalizer = icu::Normalizer2::getNFDInstance(status);
      break;
    case NormalForm::kNfkc:
      normalizer = icu::Normalizer2::getNFKCInstance(status);
      break;
    case NormalForm::kNfkd:
      normalizer = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  if (U_FAILURE(status) || normalizer == nullptr) return std::string(text);
  const icu::UnicodeString input = icu::UnicodeString::fromUTF8(
      icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  const icu::UnicodeString output = normalizer->normalize(input, status);
  if (U_FAILURE(status)) return std::string(text);
  std::string out;
  output.toUTF8String(out);
  return out;
}

std::string LowercaseChars(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const DecodedChar c = DecodeUtf8(text, pos);
    pos += c.len;
    if (c.cp < 0x80) {
      char ch = static_cast<char>(c.cp);
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
      out.push_back(ch);
      continue;
    }
    // One code point at a time so ICU applies no context (final sigma).
    UChar src[2];
    int32_t src_len = 0;
    U16_APPEND_UNSAFE(src, src_len, static_cast<UChar32>(c.cp));
    UChar dst[8];
    UErrorCode status = U_ZERO_ERROR;
    const int32_t n = u_strToLower(dst, 8, src, src_len, "", &status);
    if (U_FAILURE(status)) {
      AppendUtf8(c.cp, &out);
      continue;
    }
    for (int32_t i = 0; i < n;) {
      UChar32 lower;
      U16_NEXT(dst, i, n, lower);
      AppendUtf8(static_cast<char32_t>(lower), &out);
    }
  }
  return out;
}

}  // namespace dynsparse::tok
