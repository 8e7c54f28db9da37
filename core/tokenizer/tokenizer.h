// Tokenizer: text <-> token ids, identical to Hugging Face `tokenizers` for a
// tokenizer.json (or vocab.json + merges.txt), and to llama2.c for its
// tokenizer.bin.
#ifndef DYNSPARSE_CORE_TOKENIZER_TOKENIZER_H_
#define DYNSPARSE_CORE_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace dynsparse {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // add_special_tokens: add BOS/EOS as the tokenizer's post-processor (or
  // tokenizer_config.json's add_bos_token/add_eos_token) says, like HF's
  // `encode(text, add_special_tokens=True)`.
  virtual std::vector<int32_t> Encode(std::string_view text,
                                      bool add_special_tokens) const = 0;
  // skip_special_tokens as in HF's decode().
  virtual std::string Decode(absl::Span<const int32_t> ids,
                             bool skip_special_tokens) const = 0;

  virtual int64_t vocab_size() const = 0;  // Including added tokens.
  virtual std::optional<int32_t> bos_id() const = 0;
  virtual std::optional<int32_t> eos_id() const = 0;
  // Whether Encode(text, true) starts with BOS.
  virtual bool adds_bos() const = 0;

  // The id of a token string (added tokens first, then the vocabulary), e.g.
  // to find stop tokens such as "<|eot_id|>".
  virtual std::optional<int32_t> TokenToId(std::string_view token) const {
    return std::nullopt;
  }
  // The stored string of one token (byte-level or "▁" form, not decoded).
  virtual std::optional<std::string> IdToToken(int32_t id) const {
    return std::nullopt;
  }
};

// Loads <dir>/tokenizer.json, or else <dir>/vocab.json + <dir>/merges.txt;
// reads <dir>/tokenizer_config.json and special_tokens_map.json when present.
// `dir` may also name a tokenizer.json file directly.
//
// Encode/Decode match Hugging Face `tokenizers` 0.2x on the same
// tokenizer.json (BPE models only). Errors name the file and the JSON field,
// e.g. "<dir>/tokenizer.json: model.merges[12]: token 'xx' not in vocab".
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadHfTokenizer(
    const std::string& dir);

// A GPT-2-style byte-level BPE from explicit files: `vocab_path` is a JSON
// token -> id map (vocab.json, OpenAI's encoder.json) and `merges_path` the
// merges (merges.txt, OpenAI's vocab.bpe). Uses the GPT-2 pre-tokenizer
// regex and ByteLevel decoder; "<|endoftext|>" (when in the vocabulary) is a
// special token and serves as BOS/EOS, as in HF's GPT-2 tokenizer.
// `config_dir`, if not empty, is searched for tokenizer_config.json and
// special_tokens_map.json.
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadBpeVocabMergesTokenizer(
    const std::string& vocab_path, const std::string& merges_path,
    const std::string& config_dir = "");

// A llama2.c tokenizer.bin (scores + pieces, SentencePiece-style merges),
// reading exactly `vocab_size` tokens. Encode is llama2.c run.c's encode():
// a " " dummy-prefix token when the text is non-empty, byte fallback to
// <0xXX> (id byte + 3), then repeated merging of the adjacent pair whose
// concatenation has the highest score; add_special_tokens adds BOS=1 only
// (run.c's generate() passes bos=1, eos=0). Decode concatenates run.c's
// decode(prev, id) pieces: "<0xXX>" pieces become raw bytes and a leading
// space is dropped after BOS. Ids given without a BOS keep the leading space
// of their first piece (so the stories260K golden ids decode to " Once upon
// ..."). skip_special_tokens drops ids 0-2. Unlike run.c, a NUL byte does
// not end the text, and a vocabulary without a " " piece gets the space
// byte token as dummy prefix instead of id -1.
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadLlama2cTokenizer(
    const std::string& path, int64_t vocab_size);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_TOKENIZER_TOKENIZER_H_
