// llama2.c's tokenizer.bin format and its encode/decode (run.c), see
// LoadLlama2cTokenizer in tokenizer.h for the exact semantics.
#ifndef DYNSPARSE_CORE_TOKENIZER_LLAMA2C_TOKENIZER_H_
#define DYNSPARSE_CORE_TOKENIZER_LLAMA2C_TOKENIZER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/tokenizer/tokenizer.h"

namespace dynsparse::tok {

class Llama2cTokenizer : public Tokenizer {
 public:
  static constexpr int32_t kUnkId = 0;
  static constexpr int32_t kBosId = 1;
  static constexpr int32_t kEosId = 2;
  static constexpr int32_t kFirstByteId = 3;  // <0x00>.

  // Parses the file contents; `path` is only used in error messages.
  static absl::StatusOr<Llama2cTokenizer> Parse(const std::string& path,
                                                std::string_view data,
                                                int64_t vocab_size);

  std::vector<int32_t> Encode(std::string_view text,
                              bool add_special_tokens) const override;
  std::string Decode(absl::Span<const int32_t> ids,
                     bool skip_special_tokens) const override;
  int64_t vocab_size() const override {
    return static_cast<int64_t>(pieces_.size());
  }
  std::optional<int32_t> bos_id() const override { return kBosId; }
  std::optional<int32_t> eos_id() const override { return kEosId; }
  bool adds_bos() const override { return true; }
  std::optional<int32_t> TokenToId(std::string_view token) const override;
  std::optional<std::string> IdToToken(int32_t id) const override;

  int32_t max_token_length() const { return max_token_length_; }

 private:
  Llama2cTokenizer() = default;
  // run.c's merge loop over `ids`, in O(n log n).
  void MergePairs(std::vector<int32_t>* ids) const;

  int32_t max_token_length_ = 0;
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  // Piece -> lowest id with that piece.
  absl::flat_hash_map<std::string, int32_t> piece_to_id_;
};

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_LLAMA2C_TOKENIZER_H_
