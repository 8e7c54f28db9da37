// tokenizer.json pre-tokenizers: cut the normalized pieces into words (and
// transform them, e.g. ByteLevel's byte -> char map) before the model runs.
#ifndef DYNSPARSE_CORE_TOKENIZER_PRE_TOKENIZERS_H_
#define DYNSPARSE_CORE_TOKENIZER_PRE_TOKENIZERS_H_

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/tokenizer/pieces.h"
#include "core/tokenizer/split_regex.h"
#include "core/tokenizer/text_split.h"

namespace dynsparse::tok {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Rewrites the non-added pieces; added-token pieces pass through.
  virtual void PreTokenize(std::vector<Piece>* pieces) const = 0;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(
      std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void PreTokenize(std::vector<Piece>* pieces) const override;

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

// Optional leading space, optional GPT-2 regex split, then bytes -> chars.
class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  void PreTokenize(std::vector<Piece>* pieces) const override;

 private:
  bool add_prefix_space_;
  bool use_regex_;
};

// Split on a literal string or one of the recognized regexes.
class SplitPreTokenizer : public PreTokenizer {
 public:
  using Pattern = std::variant<std::string, SplitRegex>;
  SplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void PreTokenize(std::vector<Piece>* pieces) const override;

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

enum class PrependScheme { kAlways, kNever, kFirst };

// SentencePiece-style: spaces become `replacement` ("▁"), which is prepended
// per `scheme`; with `split`, each "▁" starts a new word.
class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(char32_t replacement, PrependScheme scheme, bool split);
  void PreTokenize(std::vector<Piece>* pieces) const override;

 private:
  char32_t replacement_;
  std::string replacement_utf8_;
  PrependScheme scheme_;
  bool split_;
};

// Isolates digits: each one alone, or runs of digits.
class DigitsPreTokenizer : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual_digits)
      : individual_digits_(individual_digits) {}
  void PreTokenize(std::vector<Piece>* pieces) const override;

 private:
  bool individual_digits_;
};

// Splits on whitespace, dropping it.
class WhitespaceSplitPreTokenizer : public PreTokenizer {
 public:
  void PreTokenize(std::vector<Piece>* pieces) const override;
};

// Keeps the matches of \w+|[^\w\s]+ (Rust regex classes).
class WhitespacePreTokenizer : public PreTokenizer {
 public:
  void PreTokenize(std::vector<Piece>* pieces) const override;
};

// Splits on one char, dropping it.
class CharDelimiterSplitPreTokenizer : public PreTokenizer {
 public:
  explicit CharDelimiterSplitPreTokenizer(char32_t delimiter)
      : delimiter_(delimiter) {}
  void PreTokenize(std::vector<Piece>* pieces) const override;

 private:
  char32_t delimiter_;
};

// Splits around each punctuation char.
class PunctuationPreTokenizer : public PreTokenizer {
 public:
  explicit PunctuationPreTokenizer(SplitBehavior behavior)
      : behavior_(behavior) {}
  void PreTokenize(std::vector<Piece>* pieces) const override;

 private:
  SplitBehavior behavior_;
};

// BERT: split on whitespace (removed), then isolate punctuation.
class BertPreTokenizer : public PreTokenizer {
 public:
  void PreTokenize(std::vector<Piece>* pieces) const override;
};

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_PRE_TOKENIZERS_H_
