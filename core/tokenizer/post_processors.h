// tokenizer.json post-processors, single-sequence only: they add the
// special tokens (BOS/EOS, CLS/SEP) around the encoded ids.
#ifndef DYNSPARSE_CORE_TOKENIZER_POST_PROCESSORS_H_
#define DYNSPARSE_CORE_TOKENIZER_POST_PROCESSORS_H_

#include <cstdint>
#include <memory>
#include <vector>

namespace dynsparse::tok {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void Process(std::vector<int32_t>* ids,
                       bool add_special_tokens) const = 0;
  // Whether it decides which special tokens to add: a template or CLS/SEP
  // processor does, even one that adds none; ByteLevel only trims offsets.
  // When none decides, tokenizer_config.json's add_bos_token applies.
  virtual bool DecidesSpecialTokens() const = 0;
};

// The "single" template: a list of special-token id runs and the sequence.
class TemplatePostProcessor : public PostProcessor {
 public:
  struct Item {
    bool is_sequence = false;  // $A (a single-sequence template).
    std::vector<int32_t> ids;  // The special token's ids otherwise.
  };
  explicit TemplatePostProcessor(std::vector<Item> items)
      : items_(std::move(items)) {}
  void Process(std::vector<int32_t>* ids,
               bool add_special_tokens) const override;
  bool DecidesSpecialTokens() const override { return true; }

 private:
  std::vector<Item> items_;
};

// RobertaProcessing / BertProcessing: <cls> ids <sep>.
class ClsSepPostProcessor : public PostProcessor {
 public:
  ClsSepPostProcessor(int32_t cls_id, int32_t sep_id)
      : cls_id_(cls_id), sep_id_(sep_id) {}
  void Process(std::vector<int32_t>* ids,
               bool add_special_tokens) const override;
  bool DecidesSpecialTokens() const override { return true; }

 private:
  int32_t cls_id_;
  int32_t sep_id_;
};

// ByteLevel post-processing only changes offsets, which we do not track.
class NoOpPostProcessor : public PostProcessor {
 public:
  void Process(std::vector<int32_t>*, bool) const override {}
  bool DecidesSpecialTokens() const override { return false; }
};

class SequencePostProcessor : public PostProcessor {
 public:
  explicit SequencePostProcessor(
      std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps_(std::move(steps)) {}
  void Process(std::vector<int32_t>* ids,
               bool add_special_tokens) const override;
  bool DecidesSpecialTokens() const override;

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_POST_PROCESSORS_H_
