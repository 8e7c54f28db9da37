#include "core/tokenizer/bpe_model.h"

#include <queue>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/logging.h"
#include "core/tokenizer/string_view_compat.h"
#include "core/tokenizer/utf8.h"

namespace dynsparse::tok {
namespace {

// Words at least this long skip the cache (HF uses the same bound), so long
// SentencePiece lines do not bloat it.
constexpr size_t kMaxCachedWordBytes = 256;

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  size_t len;  // Bytes covered; 0 marks a symbol merged into its left.
};

struct MergeCandidate {
  int32_t rank;
  int32_t pos;
  int32_t new_id;
};

// Orders the heap so that top() is the lowest rank, then the leftmost pos.
struct LaterMerge {
  bool operator()(const MergeCandidate& a, const MergeCandidate& b) const {
    if (a.rank != b.rank) return a.rank > b.rank;
    return a.pos > b.pos;
  }
};

}  // namespace

absl::StatusOr<BpeModel> BpeModel::Create(
    BpeVocab vocab, const BpeMerges& merges, BpeOptions options,
    absl::FunctionRef<std::string(size_t index)> merge_location) {
  BpeModel model;
  model.vocab_ = std::move(vocab);
  model.options_ = std::move(options);
  for (const auto& [token, id] : model.vocab_) model.vocab_r_[id] = token;

  const size_t prefix_len = model.options_.continuing_subword_prefix.size();
  model.merges_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [a, b] = merges[i];
    const auto not_in_vocab = [&](const std::string& token) {
      return absl::InvalidArgumentError(absl::StrCat(
          merge_location(i), ": token '", token, "' not in vocab"));
    };
    const auto a_it = model.vocab_.find(a);
    if (a_it == model.vocab_.end()) return not_in_vocab(a);
    const auto b_it = model.vocab_.find(b);
    if (b_it == model.vocab_.end()) return not_in_vocab(b);
    if (b.size() < prefix_len) {
      return absl::InvalidArgumentError(
          absl::StrCat(merge_location(i), ": token '", b,
                       "' is shorter than continuing_subword_prefix"));
    }
    const std::string merged = a + b.substr(prefix_len);
    const auto merged_it = model.vocab_.find(merged);
    if (merged_it == model.vocab_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          merge_location(i), ": merged token '", merged, "' not in vocab"));
    }
    // A later duplicate overrides an earlier one, as in HF's HashMap collect.
    model.merges_[PairKey(a_it->second, b_it->second)] = {
        static_cast<int32_t>(i), merged_it->second};
  }

  if (model.options_.unk_token.has_value()) {
    if (auto id = model.TokenToId(*model.options_.unk_token)) {
      model.unk_id_ = *id;
    } else {
      DS_LOG(Warning) << "BPE unk_token '" << *model.options_.unk_token
                      << "' is not in the vocabulary; unknown chars are "
                         "dropped";
    }
  }
  for (int b = 0; b < 256; ++b) {
    const auto id = model.TokenToId(absl::StrFormat("<0x%02X>", b));
    model.byte_ids_[b] = id.value_or(-1);
  }
  return model;
}

std::optional<int32_t> BpeModel::TokenToId(std::string_view token) const {
  const auto it = vocab_.find(Sv(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::IdToToken(int32_t id) const {
  const auto it = vocab_r_.find(id);
  return it == vocab_r_.end() ? nullptr : &it->second;
}

void BpeModel::Tokenize(std::string_view word, BpeWordCache* cache,
                        std::vector<int32_t>* ids) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (auto id = TokenToId(word)) {
      ids->push_back(*id);
      return;
    }
  }
  const bool cacheable = cache != nullptr && word.size() < kMaxCachedWordBytes;
  if (cacheable) {
    const auto it = cache->find(Sv(word));
    if (it != cache->end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = ids->size();
  MergeWord(word, ids);
  if (cacheable) {
    cache->emplace(std::string(word),
                   std::vector<int32_t>(ids->begin() + first, ids->end()));
  }
}

void BpeModel::MergeWord(std::string_view word,
                         std::vector<int32_t>* ids) const {
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  const auto add = [&symbols](int32_t id, size_t len) {
    const auto index = static_cast<int32_t>(symbols.size());
    if (index > 0) symbols.back().next = index;
    symbols.push_back({id, index - 1, -1, len});
  };

  // Initial symbols: one per char, with HF's unknown-char handling. A
  // pending unk is only flushed before a known char (not before byte
  // fallback tokens), exactly as in models/bpe/model.rs.
  bool unk_pending = false;
  size_t unk_len = 0;
  std::string key;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t len = DecodeUtf8(word, pos).len;
    const bool is_first = pos == 0;
    const bool is_last = pos + len == word.size();
    key.clear();
    if (!is_first) key = options_.continuing_subword_prefix;
    key.append(word.substr(pos, len));
    if (is_last) key += options_.end_of_word_suffix;
    pos += len;

    if (const auto it = vocab_.find(key); it != vocab_.end()) {
      if (unk_pending) {
        add(*unk_id_, unk_len);
        unk_pending = false;
      }
      add(it->second, len);
      continue;
    }
    if (options_.byte_fallback) {
      bool all_bytes = true;
      for (const char c : key) all_bytes &= byte_ids_[uint8_t(c)] >= 0;
      if (all_bytes) {
        for (const char c : key) add(byte_ids_[uint8_t(c)], 1);
        continue;
      }
    }
    if (!unk_id_) continue;
    if (unk_pending && options_.fuse_unk) {
      unk_len += len;
    } else {
      if (unk_pending) add(*unk_id_, unk_len);
      unk_pending = true;
      unk_len = len;
    }
  }
  if (unk_pending) add(*unk_id_, unk_len);

  const auto find_merge =
      [this](int32_t left,
             int32_t right) -> const std::pair<int32_t, int32_t>* {
    const auto it = merges_.find(PairKey(left, right));
    return it == merges_.end() ? nullptr : &it->second;
  };
  std::priority_queue<MergeCandidate, std::vector<MergeCandidate>, LaterMerge>
      queue;
  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    if (const auto* m = find_merge(symbols[i].id, symbols[i + 1].id)) {
      queue.push({m->first, static_cast<int32_t>(i), m->second});
    }
  }
  while (!queue.empty()) {
    const MergeCandidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.len == 0 || left.next == -1) continue;
    const int32_t right_pos = left.next;
    Symbol& right = symbols[right_pos];
    // Skip entries made stale by an earlier merge.
    const auto* current = find_merge(left.id, right.id);
    if (current == nullptr || current->second != top.new_id) continue;

    left.id = top.new_id;
    left.len += right.len;
    left.next = right.next;
    right.len = 0;
    if (left.next != -1) symbols[left.next].prev = top.pos;

    if (left.prev != -1) {
      const Symbol& prev = symbols[left.prev];
      if (const auto* m = find_merge(prev.id, left.id)) {
        queue.push({m->first, left.prev, m->second});
      }
    }
    if (left.next != -1) {
      const Symbol& next = symbols[left.next];
      if (const auto* m = find_merge(left.id, next.id)) {
        queue.push({m->first, top.pos, m->second});
      }
    }
  }
  for (const Symbol& symbol : symbols) {
    if (symbol.len != 0) ids->push_back(symbol.id);
  }
}

}  // namespace dynsparse::tok
