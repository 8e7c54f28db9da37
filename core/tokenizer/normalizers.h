// tokenizer.json normalizers: string -> string transforms applied to the
// input pieces between added tokens (HF `tokenizers` normalizers).
#ifndef DYNSPARSE_CORE_TOKENIZER_NORMALIZERS_H_
#define DYNSPARSE_CORE_TOKENIZER_NORMALIZERS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer/unicode_props.h"

namespace dynsparse::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string Normalize(std::string_view text) const = 0;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  std::string Normalize(std::string_view text) const override;

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

// Prepends a string to non-empty input (Llama-2's "▁").
class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string Normalize(std::string_view text) const override;

 private:
  std::string prefix_;
};

// Replaces every non-overlapping occurrence of a literal string.
class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(std::string pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::string Normalize(std::string_view text) const override;

 private:
  std::string pattern_;
  std::string content_;
};

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  std::string Normalize(std::string_view text) const override;

 private:
  NormalForm form_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  std::string Normalize(std::string_view text) const override;
};

// Strips Unicode whitespace on the left and/or right.
class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  std::string Normalize(std::string_view text) const override;

 private:
  bool left_;
  bool right_;
};

// Removes combining marks (general category M).
class StripAccentsNormalizer : public Normalizer {
 public:
  std::string Normalize(std::string_view text) const override;
};

// Maps each byte to its GPT-2 byte-level character.
class ByteLevelNormalizer : public Normalizer {
 public:
  std::string Normalize(std::string_view text) const override;
};

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_NORMALIZERS_H_
