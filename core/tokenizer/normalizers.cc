#include "core/tokenizer/normalizers.h"

#include "absl/strings/str_replace.h"
#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/string_view_compat.h"
#include "core/tokenizer/utf8.h"

namespace dynsparse::tok {

std::string SequenceNormalizer::Normalize(std::string_view text) const {
  std::string out(text);
  for (const auto& step : steps_) out = step->Normalize(out);
  return out;
}

std::string PrependNormalizer::Normalize(std::string_view text) const {
  if (text.empty()) return std::string();
  std::string out = prefix_;
  out.append(text);
  return out;
}

std::string ReplaceNormalizer::Normalize(std::string_view text) const {
  if (pattern_.empty()) return std::string(text);
  return absl::StrReplaceAll(Sv(text), {{pattern_, content_}});
}

std::string UnicodeNormalizer::Normalize(std::string_view text) const {
  return NormalizeUnicode(text, form_);
}

std::string LowercaseNormalizer::Normalize(std::string_view text) const {
  return LowercaseChars(text);
}

std::string StripNormalizer::Normalize(std::string_view text) const {
  size_t begin = 0;
  size_t end = text.size();
  if (left_) {
    while (begin < end) {
      const DecodedChar c = DecodeUtf8(text, begin);
      if (!IsWhiteSpace(c.cp)) break;
      begin += c.len;
    }
  }
  if (right_) {
    // Walk forward so multi-byte chars are decoded correctly; remember where
    // the trailing whitespace run starts.
    size_t pos = begin;
    size_t last_non_space_end = begin;
    while (pos < end) {
      const DecodedChar c = DecodeUtf8(text, pos);
      pos += c.len;
      if (!IsWhiteSpace(c.cp)) last_non_space_end = pos;
    }
    end = last_non_space_end;
  }
  return std::string(text.substr(begin, end - begin));
}

std::string StripAccentsNormalizer::Normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const DecodedChar c = DecodeUtf8(text, pos);
    if (!IsMark(c.cp)) out.append(text.substr(pos, c.len));
    pos += c.len;
  }
  return out;
}

std::string ByteLevelNormalizer::Normalize(std::string_view text) const {
  return BytesToByteLevel(text);
}

}  // namespace dynsparse::tok
