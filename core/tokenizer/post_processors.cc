#include "core/tokenizer/post_processors.h"

namespace dynsparse::tok {

void TemplatePostProcessor::Process(std::vector<int32_t>* ids,
                                    bool add_special_tokens) const {
  std::vector<int32_t> out;
  out.reserve(ids->size() + 4);
  for (const Item& item : items_) {
    if (item.is_sequence) {
      out.insert(out.end(), ids->begin(), ids->end());
    } else if (add_special_tokens) {
      out.insert(out.end(), item.ids.begin(), item.ids.end());
    }
  }
  *ids = std::move(out);
}

void ClsSepPostProcessor::Process(std::vector<int32_t>* ids,
                                  bool add_special_tokens) const {
  if (!add_special_tokens) return;
  ids->insert(ids->begin(), cls_id_);
  ids->push_back(sep_id_);
}

void SequencePostProcessor::Process(std::vector<int32_t>* ids,
                                    bool add_special_tokens) const {
  for (const auto& step : steps_) step->Process(ids, add_special_tokens);
}

bool SequencePostProcessor::DecidesSpecialTokens() const {
  for (const auto& step : steps_) {
    if (step->DecidesSpecialTokens()) return true;
  }
  return false;
}

}  // namespace dynsparse::tok
