// tokenizer.json decoders: turn the list of token strings back into text
// (HF `tokenizers` Decoder::decode_chain, then a final concatenation).
#ifndef DYNSPARSE_CORE_TOKENIZER_DECODERS_H_
#define DYNSPARSE_CORE_TOKENIZER_DECODERS_H_

#include <memory>
#include <string>
#include <vector>

#include "core/tokenizer/pre_tokenizers.h"

namespace dynsparse::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void DecodeChain(std::vector<std::string>* tokens) const = 0;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  void DecodeChain(std::vector<std::string>* tokens) const override;

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

// Byte-level chars back to bytes, then lossy UTF-8 (one U+FFFD per invalid
// sequence). A token with a non-byte-level char is kept as its raw bytes.
class ByteLevelDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens) const override;
};

// Literal string replacement in each token.
class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(std::string pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void DecodeChain(std::vector<std::string>* tokens) const override;

 private:
  std::string pattern_;
  std::string content_;
};

// Runs of <0xXX> tokens become their bytes if those form valid UTF-8, else
// one U+FFFD per byte.
class ByteFallbackDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens) const override;
};

// Concatenates all tokens into one.
class FuseDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens) const override;
};

// Removes up to `start` leading and `stop` trailing `content` chars of each
// token.
class StripDecoder : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void DecodeChain(std::vector<std::string>* tokens) const override;

 private:
  char32_t content_;
  size_t start_;
  size_t stop_;
};

// "▁" back to spaces; with a prepend scheme other than never, every "▁" of
// the first token is dropped (HF's behaviour, not just the leading one).
class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(char32_t replacement, PrependScheme scheme)
      : replacement_(replacement), scheme_(scheme) {}
  void DecodeChain(std::vector<std::string>* tokens) const override;

 private:
  char32_t replacement_;
  PrependScheme scheme_;
};

// BPEDecoder: the end-of-word suffix becomes a space (nothing at the end).
class BpeSuffixDecoder : public Decoder {
 public:
  explicit BpeSuffixDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void DecodeChain(std::vector<std::string>* tokens) const override;

 private:
  std::string suffix_;
};

// Joins the decoded tokens (HF Decoder::decode).
std::string DecodeTokens(const Decoder* decoder,
                         std::vector<std::string> tokens);

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_DECODERS_H_
