// The Hugging Face tokenizer pipeline (tokenizers' TokenizerImpl for a BPE
// model): added tokens -> normalizer -> pre-tokenizer -> BPE -> post-processor,
// and the decoder for the way back.
#ifndef DYNSPARSE_CORE_TOKENIZER_HF_TOKENIZER_H_
#define DYNSPARSE_CORE_TOKENIZER_HF_TOKENIZER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tokenizer/added_vocabulary.h"
#include "core/tokenizer/bpe_model.h"
#include "core/tokenizer/decoders.h"
#include "core/tokenizer/normalizers.h"
#include "core/tokenizer/post_processors.h"
#include "core/tokenizer/pre_tokenizers.h"
#include "core/tokenizer/tokenizer.h"

namespace dynsparse::tok {

struct HfTokenizerParts {
  std::unique_ptr<Normalizer> normalizer;         // May be null.
  std::unique_ptr<PreTokenizer> pre_tokenizer;    // May be null.
  std::unique_ptr<BpeModel> model;                // Required.
  AddedVocabulary added;                          // Finalized.
  std::unique_ptr<PostProcessor> post_processor;  // May be null.
  std::unique_ptr<Decoder> decoder;               // May be null.
  // Added around the ids when add_special_tokens is set (from
  // tokenizer_config.json's add_bos_token/add_eos_token, used only when the
  // post-processor adds nothing itself).
  std::vector<int32_t> extra_prefix;
  std::vector<int32_t> extra_suffix;
  std::optional<int32_t> bos_id;
  std::optional<int32_t> eos_id;
};

class HfTokenizer : public Tokenizer {
 public:
  explicit HfTokenizer(HfTokenizerParts parts);

  std::vector<int32_t> Encode(std::string_view text,
                              bool add_special_tokens) const override;
  std::string Decode(absl::Span<const int32_t> ids,
                     bool skip_special_tokens) const override;
  // Highest id + 1 over the model and added tokens (HF's len(tokenizer)
  // when ids are contiguous, as in every shipped tokenizer).
  int64_t vocab_size() const override { return vocab_size_; }
  std::optional<int32_t> bos_id() const override { return parts_.bos_id; }
  std::optional<int32_t> eos_id() const override { return parts_.eos_id; }
  bool adds_bos() const override { return adds_bos_; }
  std::optional<int32_t> TokenToId(std::string_view token) const override;
  std::optional<std::string> IdToToken(int32_t id) const override;

 private:
  HfTokenizerParts parts_;
  int64_t vocab_size_ = 0;
  bool adds_bos_ = false;
};

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_HF_TOKENIZER_H_
