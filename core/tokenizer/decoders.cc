#include "core/tokenizer/decoders.h"

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/utf8.h"

namespace dynsparse::tok {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a "<0xXX>" token. Like Rust's u8::from_str_radix, a leading
// '+' is accepted ("<0x+7>" is byte 7).
std::optional<uint8_t> ParseByteToken(std::string_view token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') {
    return std::nullopt;
  }
  const char hi = token[3];
  const char lo = token[4];
  if (hi == '+') {
    const int v = HexValue(lo);
    if (v < 0) return std::nullopt;
    return static_cast<uint8_t>(v);
  }
  const int h = HexValue(hi);
  const int l = HexValue(lo);
  if (h < 0 || l < 0) return std::nullopt;
  return static_cast<uint8_t>(h * 16 + l);
}

}  // namespace

void SequenceDecoder::DecodeChain(std::vector<std::string>* tokens) const {
  for (const auto& step : steps_) step->DecodeChain(tokens);
}

void ByteLevelDecoder::DecodeChain(std::vector<std::string>* tokens) const {
  std::string bytes;
  for (const std::string& token : *tokens) {
    const size_t mark = bytes.size();
    size_t pos = 0;
    bool all_mapped = true;
    while (pos < token.size()) {
      const DecodedChar c = DecodeUtf8(token, pos);
      const std::optional<uint8_t> b =
          c.valid ? ByteLevelCharToByte(c.cp) : std::nullopt;
      if (!b) {
        all_mapped = false;
        break;
      }
      bytes.push_back(static_cast<char>(*b));
      pos += c.len;
    }
    if (!all_mapped) {
      bytes.resize(mark);
      bytes += token;
    }
  }
  tokens->assign(1, Utf8Lossy(bytes));
}

void ReplaceDecoder::DecodeChain(std::vector<std::string>* tokens) const {
  if (pattern_.empty()) return;
  for (std::string& token : *tokens) {
    token = absl::StrReplaceAll(token, {{pattern_, content_}});
  }
}

void ByteFallbackDecoder::DecodeChain(std::vector<std::string>* tokens) const {
  std::vector<std::string> out;
  out.reserve(tokens->size());
  std::string pending;  // Bytes of consecutive <0xXX> tokens.
  const auto flush = [&]() {
    if (pending.empty()) return;
    if (IsValidUtf8(pending)) {
      out.push_back(pending);
    } else {
      std::string replacement;
      AppendUtf8(kReplacementChar, &replacement);
      out.insert(out.end(), pending.size(), replacement);
    }
    pending.clear();
  };
  for (std::string& token : *tokens) {
    if (const auto byte = ParseByteToken(token)) {
      pending.push_back(static_cast<char>(*byte));
      continue;
    }
    flush();
    out.push_back(std::move(token));
  }
  flush();
  *tokens = std::move(out);
}

void FuseDecoder::DecodeChain(std::vector<std::string>* tokens) const {
  tokens->assign(1, absl::StrJoin(*tokens, ""));
}

void StripDecoder::DecodeChain(std::vector<std::string>* tokens) const {
  for (std::string& token : *tokens) {
    // Byte offset of each char start, plus the end.
    std::vector<size_t> starts;
    std::vector<char32_t> chars;
    size_t pos = 0;
    while (pos < token.size()) {
      const DecodedChar c = DecodeUtf8(token, pos);
      starts.push_back(pos);
      chars.push_back(c.cp);
      pos += c.len;
    }
    starts.push_back(token.size());
    size_t first = 0;
    while (first < start_ && first < chars.size() && chars[first] == content_) {
      ++first;
    }
    size_t last = chars.size();
    for (size_t i = 0; i < stop_ && last > first && chars[last - 1] == content_;
         ++i) {
      --last;
    }
    token = token.substr(starts[first], starts[last] - starts[first]);
  }
}

void MetaspaceDecoder::DecodeChain(std::vector<std::string>* tokens) const {
  std::string replacement;
  AppendUtf8(replacement_, &replacement);
  for (size_t i = 0; i < tokens->size(); ++i) {
    const bool drop = i == 0 && scheme_ != PrependScheme::kNever;
    (*tokens)[i] =
        absl::StrReplaceAll((*tokens)[i], {{replacement, drop ? "" : " "}});
  }
}

void BpeSuffixDecoder::DecodeChain(std::vector<std::string>* tokens) const {
  if (suffix_.empty()) return;
  for (size_t i = 0; i < tokens->size(); ++i) {
    const bool last = i + 1 == tokens->size();
    (*tokens)[i] =
        absl::StrReplaceAll((*tokens)[i], {{suffix_, last ? "" : " "}});
  }
}

std::string DecodeTokens(const Decoder* decoder,
                         std::vector<std::string> tokens) {
  if (decoder == nullptr) return absl::StrJoin(tokens, " ");
  decoder->DecodeChain(&tokens);
  return absl::StrJoin(tokens, "");
}

}  // namespace dynsparse::tok
