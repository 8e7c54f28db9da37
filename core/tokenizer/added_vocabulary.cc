#include "core/tokenizer/added_vocabulary.h"

#include <algorithm>

#include "core/tokenizer/string_view_compat.h"
#include "core/tokenizer/unicode_props.h"
#include "core/tokenizer/utf8.h"

namespace dynsparse::tok {
namespace {

// Start of the last char of `s` (non-empty), stepping back over at most
// three continuation bytes.
size_t LastCharStart(std::string_view s) {
  size_t start = s.size() - 1;
  while (start > 0 && s.size() - start < 4 &&
         (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) {
    --start;
  }
  return start;
}

// The last char of `s` (non-empty), U+FFFD when it is not valid UTF-8.
char32_t LastChar(std::string_view s) {
  const size_t start = LastCharStart(s);
  const DecodedChar c = DecodeUtf8(s, start);
  return start + c.len == s.size() ? c.cp : kReplacementChar;
}

// Byte offset where the trailing whitespace of `s` starts.
size_t TrailingSpaceStart(std::string_view s) {
  while (!s.empty() && IsWhiteSpace(LastChar(s))) {
    s = s.substr(0, LastCharStart(s));
  }
  return s.size();
}

// Byte length of the leading whitespace of `s`.
size_t LeadingSpaceEnd(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const DecodedChar c = DecodeUtf8(s, pos);
    if (!IsWhiteSpace(c.cp)) break;
    pos += c.len;
  }
  return pos;
}

}  // namespace

std::optional<int32_t> AddedVocabulary::Add(const AddedToken& token,
                                            const BpeModel& model) {
  if (token.special && !token.content.empty() &&
      !special_set_.contains(token.content)) {
    special_tokens_.push_back(token);
    special_set_.insert(token.content);
  }
  if (token.content.empty()) return std::nullopt;
  for (const auto& [id, existing] : id_to_token_) {
    if (existing == token) return std::nullopt;
  }
  std::optional<int32_t> id = TokenToId(token.content);
  if (!id) id = model.TokenToId(token.content);
  if (!id) {
    const auto model_size = static_cast<int32_t>(model.vocab().size());
    if (!max_id_.has_value()) {
      id = model_size;
    } else {
      id = (*max_id_ >= model_size || model_size == 0) ? *max_id_ + 1
                                                       : model_size;
    }
  }
  token_to_id_[token.content] = *id;
  id_to_token_[*id] = token;
  max_id_ = std::max(max_id_.value_or(*id), *id);
  if (!special_set_.contains(token.content)) plain_tokens_.push_back(token);
  return id;
}

void AddedVocabulary::Finalize(const BpeModel& model,
                               const Normalizer* normalizer) {
  normalized_forms_.clear();
  std::vector<Matcher::Pattern> raw;
  std::vector<Matcher::Pattern> normalized;
  const auto add_pattern = [&](const AddedToken& token) {
    std::optional<int32_t> id = TokenToId(token.content);
    if (!id) id = model.TokenToId(token.content);
    if (!id) return;
    if (token.normalized) {
      std::string form =
          normalizer ? normalizer->Normalize(token.content) : token.content;
      if (form != token.content) normalized_forms_[*id] = form;
      normalized.push_back({std::move(form), *id});
    } else {
      raw.push_back({token.content, *id});
    }
  };
  for (const AddedToken& token : special_tokens_) add_pattern(token);
  for (const AddedToken& token : plain_tokens_) add_pattern(token);
  raw_matcher_ = BuildMatcher(std::move(raw));
  normalized_matcher_ = BuildMatcher(std::move(normalized));
}

AddedVocabulary::Matcher AddedVocabulary::BuildMatcher(
    std::vector<Matcher::Pattern> patterns) {
  Matcher matcher;
  matcher.patterns = std::move(patterns);
  for (size_t i = 0; i < matcher.patterns.size(); ++i) {
    const std::string& text = matcher.patterns[i].text;
    if (text.empty()) continue;
    matcher.by_first_byte[static_cast<uint8_t>(text[0])].push_back(
        static_cast<int>(i));
  }
  for (auto& bucket : matcher.by_first_byte) {
    // Longest first; among equal lengths the earlier pattern wins.
    std::stable_sort(bucket.begin(), bucket.end(), [&](int a, int b) {
      return matcher.patterns[a].text.size() > matcher.patterns[b].text.size();
    });
  }
  return matcher;
}

void AddedVocabulary::SplitOnMatches(const Matcher& matcher, Piece&& piece,
                                     std::vector<Piece>* out) const {
  const std::string_view text = piece.text;
  const auto emit = [&](size_t start, size_t end, int32_t id) {
    Piece part;
    part.text = std::string(text.substr(start, end - start));
    part.added_id = id;
    part.at_origin = piece.at_origin && start == 0;
    out->push_back(std::move(part));
  };
  size_t start_offset = 0;  // End of the last emitted split.
  size_t search = 0;        // Where the literal search resumes.
  while (search < text.size()) {
    // Leftmost, then longest, literal match.
    int found = -1;
    size_t found_at = 0;
    for (size_t pos = search; pos < text.size() && found < 0; ++pos) {
      for (int index : matcher.by_first_byte[static_cast<uint8_t>(text[pos])]) {
        if (text.substr(pos).starts_with(matcher.patterns[index].text)) {
          found = index;
          found_at = pos;
          break;
        }
      }
    }
    if (found < 0) break;
    const Matcher::Pattern& pattern = matcher.patterns[found];
    size_t start = found_at;
    size_t stop = found_at + pattern.text.size();
    search = stop;
    const auto token_it = id_to_token_.find(pattern.id);
    if (token_it == id_to_token_.end()) continue;
    const AddedToken& token = token_it->second;
    if (token.single_word) {
      const bool word_before =
          start > 0 && IsWordChar(LastChar(text.substr(0, start)));
      const bool word_after =
          stop < text.size() && IsWordChar(DecodeUtf8(text, stop).cp);
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      start = std::max(TrailingSpaceStart(text.substr(0, start)), start_offset);
    }
    if (token.rstrip) stop += LeadingSpaceEnd(text.substr(stop));
    if (start_offset < start) emit(start_offset, start, -1);
    emit(start, stop, pattern.id);
    start_offset = stop;
  }
  if (start_offset < text.size()) emit(start_offset, text.size(), -1);
}

std::vector<Piece> AddedVocabulary::ExtractAndNormalize(
    std::string_view text, const Normalizer* normalizer) const {
  std::vector<Piece> pieces;
  Piece whole;
  whole.text = std::string(text);
  whole.at_origin = true;
  pieces.push_back(std::move(whole));
  SplitPieces(&pieces, [&](Piece&& piece, std::vector<Piece>* out) {
    SplitOnMatches(raw_matcher_, std::move(piece), out);
  });
  SplitPieces(&pieces, [&](Piece&& piece, std::vector<Piece>* out) {
    if (normalizer != nullptr) piece.text = normalizer->Normalize(piece.text);
    SplitOnMatches(normalized_matcher_, std::move(piece), out);
  });
  return pieces;
}

std::optional<int32_t> AddedVocabulary::TokenToId(
    std::string_view content) const {
  const auto it = token_to_id_.find(Sv(content));
  if (it == token_to_id_.end()) return std::nullopt;
  return it->second;
}

const AddedToken* AddedVocabulary::TokenForId(int32_t id) const {
  const auto it = id_to_token_.find(id);
  return it == id_to_token_.end() ? nullptr : &it->second;
}

const std::string* AddedVocabulary::DecodeString(int32_t id) const {
  if (const auto it = normalized_forms_.find(id);
      it != normalized_forms_.end()) {
    return &it->second;
  }
  const auto it = id_to_token_.find(id);
  return it == id_to_token_.end() ? nullptr : &it->second.content;
}

}  // namespace dynsparse::tok
