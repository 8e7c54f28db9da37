// Added tokens (special or not) of a tokenizer.json: the input is split on
// them before normalization and pre-tokenization, with HF `tokenizers`'
// AddedVocabulary rules (leftmost-longest match, single_word, lstrip,
// rstrip, normalized).
#ifndef DYNSPARSE_CORE_TOKENIZER_ADDED_VOCABULARY_H_
#define DYNSPARSE_CORE_TOKENIZER_ADDED_VOCABULARY_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/tokenizer/bpe_model.h"
#include "core/tokenizer/normalizers.h"
#include "core/tokenizer/pieces.h"
#include "core/tokenizer/string_view_compat.h"

namespace dynsparse::tok {

struct AddedToken {
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;

  bool operator==(const AddedToken&) const = default;
};

class AddedVocabulary {
 public:
  // Adds one token the way HF does when loading a tokenizer.json: its id is
  // the model's (or an earlier added token's) id for the same content, else
  // the next free id after the model vocabulary. Returns the id, or nullopt
  // for an empty or duplicate token.
  std::optional<int32_t> Add(const AddedToken& token, const BpeModel& model);

  // Builds the matchers; call after the last Add. Normalized tokens are
  // matched in their normalized form.
  void Finalize(const BpeModel& model, const Normalizer* normalizer);

  // Splits `text` on non-normalized tokens, normalizes the other pieces, then
  // splits those on normalized tokens.
  std::vector<Piece> ExtractAndNormalize(std::string_view text,
                                         const Normalizer* normalizer) const;

  std::optional<int32_t> TokenToId(std::string_view content) const;
  const AddedToken* TokenForId(int32_t id) const;
  // The string the decoder sees for an added token: its normalized form when
  // the token is `normalized` and the normalizer changes it (HF 0.2x's
  // normalized cache), else its content. Null for a non-added id.
  const std::string* DecodeString(int32_t id) const;
  bool IsSpecial(std::string_view content) const {
    return special_set_.contains(Sv(content));
  }
  std::optional<int32_t> max_id() const { return max_id_; }

 private:
  // Leftmost-longest literal matcher over a set of token strings.
  struct Matcher {
    struct Pattern {
      std::string text;
      int32_t id;
    };
    std::vector<Pattern> patterns;
    // Pattern indices by first byte, longest first.
    std::array<std::vector<int>, 256> by_first_byte;
  };
  static Matcher BuildMatcher(std::vector<Matcher::Pattern> patterns);
  void SplitOnMatches(const Matcher& matcher, Piece&& piece,
                      std::vector<Piece>* out) const;

  absl::flat_hash_map<std::string, int32_t> token_to_id_;
  absl::flat_hash_map<int32_t, AddedToken> id_to_token_;
  absl::flat_hash_map<int32_t, std::string> normalized_forms_;
  std::vector<AddedToken> special_tokens_;  // In insertion order.
  std::vector<AddedToken> plain_tokens_;    // Non-special, insertion order.
  absl::flat_hash_set<std::string> special_set_;
  std::optional<int32_t> max_id_;
  Matcher raw_matcher_;         // normalized == false.
  Matcher normalized_matcher_;  // normalized == true.
};

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_ADDED_VOCABULARY_H_
