#include "core/tokenizer/hf_tokenizer.h"

#include <algorithm>

namespace dynsparse::tok {

HfTokenizer::HfTokenizer(HfTokenizerParts parts) : parts_(std::move(parts)) {
  int64_t max_id = -1;
  for (const auto& [token, id] : parts_.model->vocab()) {
    max_id = std::max<int64_t>(max_id, id);
  }
  if (auto added_max = parts_.added.max_id()) {
    max_id = std::max<int64_t>(max_id, *added_max);
  }
  vocab_size_ = max_id + 1;
  const std::vector<int32_t> empty = Encode("", /*add_special_tokens=*/true);
  adds_bos_ = parts_.bos_id.has_value() && !empty.empty() &&
              empty.front() == *parts_.bos_id;
}

std::vector<int32_t> HfTokenizer::Encode(std::string_view text,
                                         bool add_special_tokens) const {
  std::vector<Piece> pieces =
      parts_.added.ExtractAndNormalize(text, parts_.normalizer.get());
  if (parts_.pre_tokenizer != nullptr) {
    parts_.pre_tokenizer->PreTokenize(&pieces);
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  BpeWordCache cache;
  for (const Piece& piece : pieces) {
    if (piece.added_id >= 0) {
      ids.push_back(piece.added_id);
    } else {
      parts_.model->Tokenize(piece.text, &cache, &ids);
    }
  }
  if (parts_.post_processor != nullptr) {
    parts_.post_processor->Process(&ids, add_special_tokens);
  }
  if (add_special_tokens) {
    ids.insert(ids.begin(), parts_.extra_prefix.begin(),
               parts_.extra_prefix.end());
    ids.insert(ids.end(), parts_.extra_suffix.begin(),
               parts_.extra_suffix.end());
  }
  return ids;
}

std::string HfTokenizer::Decode(absl::Span<const int32_t> ids,
                                bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    const std::string* token = parts_.added.DecodeString(id);
    if (token == nullptr) token = parts_.model->IdToToken(id);
    if (token == nullptr) continue;  // Unknown ids are skipped, as in HF.
    if (skip_special_tokens && parts_.added.IsSpecial(*token)) continue;
    tokens.push_back(*token);
  }
  return DecodeTokens(parts_.decoder.get(), std::move(tokens));
}

std::optional<int32_t> HfTokenizer::TokenToId(std::string_view token) const {
  if (auto id = parts_.added.TokenToId(token)) return id;
  return parts_.model->TokenToId(token);
}

std::optional<std::string> HfTokenizer::IdToToken(int32_t id) const {
  if (const AddedToken* added = parts_.added.TokenForId(id)) {
    return added->content;
  }
  if (const std::string* token = parts_.model->IdToToken(id)) return *token;
  return std::nullopt;
}

}  // namespace dynsparse::tok
