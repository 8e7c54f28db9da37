#include "core/tokenizer/split_regex.h"

#include <cstdint>

#include "core/tokenizer/unicode_props.h"
#include "core/tokenizer/utf8.h"

namespace dynsparse::tok {
namespace {

// Per-char classes, computed once per text.
enum : uint8_t {
  kLetter = 1,
  kNumber = 2,
  kSpace = 4,    // \s
  kNewline = 8,  // \r or \n
};

struct Char {
  char32_t cp;
  size_t offset;  // Byte offset in the text.
  uint8_t cls;
};

class Matcher {
 public:
  Matcher(SplitRegex regex, std::string_view text) : regex_(regex) {
    size_t pos = 0;
    while (pos < text.size()) {
      const DecodedChar d = DecodeUtf8(text, pos);
      uint8_t cls = 0;
      if (IsLetter(d.cp)) cls |= kLetter;
      if (IsNumber(d.cp)) cls |= kNumber;
      if (IsWhiteSpace(d.cp)) cls |= kSpace;
      if (d.cp == '\r' || d.cp == '\n') cls |= kNewline;
      chars_.push_back({d.cp, pos, cls});
      pos += d.len;
    }
    end_offset_ = text.size();
  }

  std::vector<ByteRange> FindAll() const {
    std::vector<ByteRange> matches;
    size_t i = 0;
    const size_t n = chars_.size();
    while (i < n) {
      const size_t end = MatchAt(i);
      if (end > i) {
        matches.emplace_back(chars_[i].offset, Offset(end));
        i = end;
      } else {
        ++i;  // No match can start here; search on (never hit in practice).
      }
    }
    return matches;
  }

 private:
  size_t Offset(size_t i) const {
    return i < chars_.size() ? chars_[i].offset : end_offset_;
  }
  bool Is(size_t i, uint8_t cls) const {
    return i < chars_.size() && (chars_[i].cls & cls) != 0;
  }
  bool IsCp(size_t i, char32_t cp) const {
    return i < chars_.size() && chars_[i].cp == cp;
  }
  // [^\s\p{L}\p{N}]
  bool IsOther(size_t i) const {
    return i < chars_.size() &&
           (chars_[i].cls & (kSpace | kLetter | kNumber)) == 0;
  }
  size_t RunOf(size_t i, uint8_t cls) const {
    while (Is(i, cls)) ++i;
    return i;
  }
  size_t RunOfOther(size_t i) const {
    while (IsOther(i)) ++i;
    return i;
  }

  // Index one past the match starting at char i, or i when none.
  size_t MatchAt(size_t i) const {
    return regex_ == SplitRegex::kGpt2 ? MatchGpt2(i) : MatchLlama3(i);
  }

  // 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive. Oniguruma's
  // case folding also matches U+017F (long s) for 's'.
  size_t MatchContraction(size_t i, bool ignore_case) const {
    if (!IsCp(i, '\'') || i + 1 >= chars_.size()) return i;
    const auto fold = [&](size_t k) -> char32_t {
      if (k >= chars_.size()) return 0;
      const char32_t c = chars_[k].cp;
      if (!ignore_case) return c;
      if (c >= 'A' && c <= 'Z') return c - 'A' + 'a';
      if (c == 0x17F) return 's';
      return c;
    };
    const char32_t a = fold(i + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    const char32_t b = fold(i + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
        (a == 'l' && b == 'l')) {
      return i + 3;
    }
    return i;
  }

  // \s+(?!\S) then \s+: a whitespace run leaves its last char to the next
  // word unless the run ends the text or is a single char.
  size_t MatchSpaces(size_t i) const {
    if (!Is(i, kSpace)) return i;
    const size_t run = RunOf(i, kSpace);
    if (run == chars_.size() || run - i == 1) return run;
    return run - 1;
  }

  size_t MatchGpt2(size_t i) const {
    if (size_t e = MatchContraction(i, false); e > i) return e;
    const bool space = IsCp(i, ' ');
    //  ?\p{L}+ and  ?\p{N}+
    for (uint8_t cls : {kLetter, kNumber}) {
      if (space && Is(i + 1, cls)) return RunOf(i + 1, cls);
      if (Is(i, cls)) return RunOf(i, cls);
    }
    //  ?[^\s\p{L}\p{N}]+
    if (space && IsOther(i + 1)) return RunOfOther(i + 1);
    if (IsOther(i)) return RunOfOther(i);
    return MatchSpaces(i);
  }

  size_t MatchLlama3(size_t i) const {
    if (size_t e = MatchContraction(i, true); e > i) return e;
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (i < chars_.size() && !Is(i, kNewline | kLetter | kNumber) &&
        Is(i + 1, kLetter)) {
      return RunOf(i + 1, kLetter);
    }
    if (Is(i, kLetter)) return RunOf(i, kLetter);
    // \p{N}{1,3} (Qwen2: \p{N})
    if (Is(i, kNumber)) {
      const size_t max_digits = regex_ == SplitRegex::kQwen2 ? 1 : 3;
      size_t e = i;
      while (e - i < max_digits && Is(e, kNumber)) ++e;
      return e;
    }
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    size_t e = i;
    if (IsCp(i, ' ') && IsOther(i + 1)) {
      e = RunOfOther(i + 1);
    } else if (IsOther(i)) {
      e = RunOfOther(i);
    }
    if (e > i) return RunOf(e, kNewline);
    // \s*[\r\n]+: the whitespace run up to and including its last newline.
    if (Is(i, kSpace)) {
      const size_t run = RunOf(i, kSpace);
      for (size_t k = run; k > i; --k) {
        if (Is(k - 1, kNewline)) return k;
      }
    }
    return MatchSpaces(i);
  }

  SplitRegex regex_;
  std::vector<Char> chars_;
  size_t end_offset_ = 0;
};

}  // namespace

std::optional<SplitRegex> RecognizeSplitRegex(std::string_view pattern) {
  if (pattern == kGpt2Pattern) return SplitRegex::kGpt2;
  if (pattern == kLlama3Pattern) return SplitRegex::kLlama3;
  if (pattern == kQwen2Pattern) return SplitRegex::kQwen2;
  return std::nullopt;
}

std::vector<ByteRange> FindRegexMatches(SplitRegex regex,
                                        std::string_view text) {
  return Matcher(regex, text).FindAll();
}

}  // namespace dynsparse::tok
