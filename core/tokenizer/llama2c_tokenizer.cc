#include "core/tokenizer/llama2c_tokenizer.h"

#include <cstring>
#include <fstream>
#include <queue>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tokenizer/string_view_compat.h"

namespace dynsparse::tok {
namespace {

// run.c only merges pairs scoring above its initial best_score.
constexpr float kMinMergeScore = -1e10f;

template <typename T>
bool ReadScalar(std::string_view data, size_t* offset, T* value) {
  if (data.size() - *offset < sizeof(T)) return false;
  std::memcpy(value, data.data() + *offset, sizeof(T));
  *offset += sizeof(T);
  return true;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// sscanf(piece, "<0x%02hhX>", &b) == 1: "<0x" then one or two hex digits.
std::optional<uint8_t> ByteOfPiece(std::string_view piece) {
  if (!piece.starts_with("<0x") || piece.size() < 4) return std::nullopt;
  const int hi = HexDigit(piece[3]);
  if (hi < 0) return std::nullopt;
  const int lo = piece.size() > 4 ? HexDigit(piece[4]) : -1;
  return static_cast<uint8_t>(lo < 0 ? hi : hi * 16 + lo);
}

struct Node {
  int32_t id;
  int32_t prev;
  int32_t next;
  uint32_t version;  // Bumped when the node changes, to spot stale pairs.
  bool alive;
};

struct Candidate {
  float score;
  int32_t left;
  int32_t right;
  uint32_t left_version;
  uint32_t right_version;
  int32_t merged_id;
};

// Highest score first; on ties the leftmost pair, as run.c's scan does.
struct WorseCandidate {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  }
};

}  // namespace

absl::StatusOr<Llama2cTokenizer> Llama2cTokenizer::Parse(
    const std::string& path, std::string_view data, int64_t vocab_size) {
  if (vocab_size <= kEosId || vocab_size > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": vocab_size ", vocab_size, " must be in [3, 2^31)"));
  }
  Llama2cTokenizer t;
  size_t offset = 0;
  if (!ReadScalar(data, &offset, &t.max_token_length_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": max_token_length: truncated file (", data.size(), " bytes)"));
  }
  t.pieces_.reserve(vocab_size);
  t.scores_.reserve(vocab_size);
  for (int64_t i = 0; i < vocab_size; ++i) {
    const auto truncated = [&](std::string_view field) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": token[", i, "].", Sv(field), ": truncated at byte ", offset,
          " (file has ", data.size(), " bytes, expected ", vocab_size,
          " tokens)"));
    };
    float score = 0;
    int32_t len = 0;
    if (!ReadScalar(data, &offset, &score)) return truncated("score");
    if (!ReadScalar(data, &offset, &len)) return truncated("len");
    if (len < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": token[", i, "].len: negative (", len, ")"));
    }
    if (data.size() - offset < static_cast<size_t>(len)) {
      return truncated("bytes");
    }
    std::string piece(data.substr(offset, len));
    offset += len;
    // run.c treats pieces as C strings.
    if (const size_t nul = piece.find('\0'); nul != std::string::npos) {
      piece.resize(nul);
    }
    t.piece_to_id_.try_emplace(piece, static_cast<int32_t>(i));
    t.pieces_.push_back(std::move(piece));
    t.scores_.push_back(score);
  }
  return t;
}

std::optional<int32_t> Llama2cTokenizer::TokenToId(
    std::string_view token) const {
  const auto it = piece_to_id_.find(Sv(token));
  if (it == piece_to_id_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Llama2cTokenizer::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return std::nullopt;
  return pieces_[id];
}

std::vector<int32_t> Llama2cTokenizer::Encode(std::string_view text,
                                              bool add_special_tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() + 2);
  if (add_special_tokens) ids.push_back(kBosId);
  const auto push_byte = [&](uint8_t b) {
    const int32_t id = kFirstByteId + b;
    ids.push_back(static_cast<size_t>(id) < pieces_.size() ? id : kUnkId);
  };
  if (!text.empty()) {
    // The dummy prefix. run.c assumes " " is in the vocabulary (it would
    // push -1 otherwise); fall back to the space byte.
    if (auto space = TokenToId(" ")) {
      ids.push_back(*space);
    } else {
      push_byte(' ');
    }
  }
  // One lookup per UTF-8 char: a byte plus up to 3 continuation bytes.
  size_t pos = 0;
  while (pos < text.size()) {
    size_t len = 1;
    while (pos + len < text.size() && len < 4 &&
           (static_cast<uint8_t>(text[pos + len]) & 0xC0) == 0x80) {
      ++len;
    }
    const std::string_view ch = text.substr(pos, len);
    if (auto id = TokenToId(ch)) {
      ids.push_back(*id);
    } else {
      for (const char c : ch) push_byte(static_cast<uint8_t>(c));
    }
    pos += len;
  }
  MergePairs(&ids);
  return ids;
}

void Llama2cTokenizer::MergePairs(std::vector<int32_t>* ids) const {
  const auto n = static_cast<int32_t>(ids->size());
  if (n < 2) return;
  std::vector<Node> nodes(n);
  for (int32_t i = 0; i < n; ++i) {
    nodes[i] = {(*ids)[i], i - 1, i + 1 < n ? i + 1 : -1, 0, true};
  }
  std::priority_queue<Candidate, std::vector<Candidate>, WorseCandidate> heap;
  std::string buffer;
  const auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = nodes[left].next;
    if (right < 0) return;
    buffer = pieces_[nodes[left].id];
    buffer += pieces_[nodes[right].id];
    const auto merged = TokenToId(buffer);
    if (!merged) return;
    const float score = scores_[*merged];
    if (!(score > kMinMergeScore)) return;
    heap.push({score, left, right, nodes[left].version, nodes[right].version,
               *merged});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Node& left = nodes[c.left];
    Node& right = nodes[c.right];
    if (!left.alive || !right.alive || left.next != c.right ||
        left.version != c.left_version || right.version != c.right_version) {
      continue;
    }
    left.id = c.merged_id;
    ++left.version;
    left.next = right.next;
    right.alive = false;
    if (right.next >= 0) nodes[right.next].prev = c.left;
    consider(left.prev);
    consider(c.left);
  }
  ids->clear();
  for (int32_t i = 0; i >= 0; i = nodes[i].next) ids->push_back(nodes[i].id);
}

std::string Llama2cTokenizer::Decode(absl::Span<const int32_t> ids,
                                     bool skip_special_tokens) const {
  std::string out;
  int32_t prev = -1;
  for (const int32_t id : ids) {
    const int32_t prev_id = prev;
    prev = id;
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) continue;
    if (skip_special_tokens && id <= kEosId) continue;
    std::string_view piece = pieces_[id];
    // SentencePiece drops the leading space of the first piece after BOS.
    if (prev_id == kBosId && piece.starts_with(' ')) piece.remove_prefix(1);
    if (const auto byte = ByteOfPiece(piece)) {
      out.push_back(static_cast<char>(*byte));
    } else {
      out.append(piece);
    }
  }
  return out;
}

}  // namespace dynsparse::tok

namespace dynsparse {

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadLlama2cTokenizer(
    const std::string& path, int64_t vocab_size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open file"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  ASSIGN_OR_RETURN(
      tok::Llama2cTokenizer tokenizer,
      tok::Llama2cTokenizer::Parse(path, buffer.str(), vocab_size));
  return std::make_unique<tok::Llama2cTokenizer>(std::move(tokenizer));
}

}  // namespace dynsparse
