// The BPE model of Hugging Face `tokenizers` (models/bpe): a word is split
// into chars, then the lowest-rank merge is applied repeatedly. Uses a heap
// over a linked list of symbols, O(n log n) per word, so SentencePiece-style
// tokenizers (a whole line is one word) stay fast.
#ifndef DYNSPARSE_CORE_TOKENIZER_BPE_MODEL_H_
#define DYNSPARSE_CORE_TOKENIZER_BPE_MODEL_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace dynsparse::tok {

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::string continuing_subword_prefix;  // "" = none.
  std::string end_of_word_suffix;         // "" = none.
  bool fuse_unk = false;
  bool byte_fallback = false;  // Unknown chars become <0xXX> tokens.
  bool ignore_merges = false;  // A word that is in the vocab is one token.
};

using BpeVocab = absl::flat_hash_map<std::string, int32_t>;
using BpeMerges = std::vector<std::pair<std::string, std::string>>;

// Per-call cache of word -> ids; BPE is deterministic, so repeated words
// (common after byte-level pre-tokenization) are merged once.
using BpeWordCache = absl::flat_hash_map<std::string, std::vector<int32_t>>;

class BpeModel {
 public:
  // Fails on the first merge naming a token (or merged token) that is not
  // in the vocabulary; the message starts with merge_location(index).
  static absl::StatusOr<BpeModel> Create(
      BpeVocab vocab, const BpeMerges& merges, BpeOptions options,
      absl::FunctionRef<std::string(size_t index)> merge_location);

  // Appends the ids of one pre-tokenized word.
  void Tokenize(std::string_view word, BpeWordCache* cache,
                std::vector<int32_t>* ids) const;

  std::optional<int32_t> TokenToId(std::string_view token) const;
  const std::string* IdToToken(int32_t id) const;
  const BpeVocab& vocab() const { return vocab_; }
  const BpeOptions& options() const { return options_; }

 private:
  BpeModel() = default;
  void MergeWord(std::string_view word, std::vector<int32_t>* ids) const;

  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) |
           static_cast<uint32_t>(b);
  }

  BpeVocab vocab_;
  absl::flat_hash_map<int32_t, std::string> vocab_r_;
  // (left id, right id) -> (rank, merged id).
  absl::flat_hash_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  BpeOptions options_;
  std::optional<int32_t> unk_id_;
  std::array<int32_t, 256> byte_ids_{};  // <0xXX> ids, -1 when absent.
};

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_BPE_MODEL_H_
