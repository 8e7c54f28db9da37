#include "core/graph/token_state.h"

#include <algorithm>

namespace dynsparse {

double TokenStats::PrefillFraction() const {
  const double total = static_cast<double>(prompt_tokens * layers);
  return total > 0 ? static_cast<double>(prefill_computed) / total : 1.0;
}

double TokenStats::GenerationFraction() const {
  const double total = static_cast<double>(prompt_tokens * layers);
  return total > 0 ? static_cast<double>(computed) / total : 1.0;
}

double TokenStats::IdealTtftSpeedup() const {
  const double f = PrefillFraction();
  return f > 0 ? 1.0 / f : 1.0;
}

TokenState::TokenState(const ModelConfig& config, int64_t capacity)
    : layers_(config.num_layers),
      capacity_(capacity),
      hidden_(config.hidden_size),
      present_(static_cast<size_t>(layers_ * capacity_), 0),
      aux_present_(present_.size(), 0),
      count_(present_.size(), 0),
      aux_(static_cast<size_t>(layers_)) {
  stats_.layers = layers_;
}

void TokenState::Clear() {
  std::fill(present_.begin(), present_.end(), 0);
  std::fill(aux_present_.begin(), aux_present_.end(), 0);
  std::fill(count_.begin(), count_.end(), 0);
  stats_ = TokenStats();
  stats_.layers = layers_;
  const bool host_only = profile_.host_only;
  profile_ = TokenProfile();
  profile_.host_only = host_only;
}

void TokenState::Truncate(int64_t length) {
  for (int64_t l = 0; l < layers_; ++l) {
    const size_t begin = Index(l, static_cast<int32_t>(length));
    const size_t end = Index(l + 1, 0);
    std::fill(present_.begin() + begin, present_.begin() + end, 0);
    std::fill(aux_present_.begin() + begin, aux_present_.begin() + end, 0);
  }
}

void TokenState::MarkComputed(int64_t layer,
                              absl::Span<const int32_t> positions,
                              int64_t from_aux) {
  for (int32_t p : positions) {
    const size_t i = Index(layer, p);
    journal_.push_back({i, true, present_[i]});
    present_[i] = 1;
    stats_.max_computations = std::max(stats_.max_computations, ++count_[i]);
    if (p < stats_.prompt_tokens && count_[i] == 1) ++stats_.computed;
  }
  stats_.revived += from_aux;
}

Tensor& TokenState::Aux(int64_t layer, Backend& backend) {
  Tensor& t = aux_[static_cast<size_t>(layer)];
  if (t.empty()) t = backend.Allocate(DType::kF32, {capacity_, hidden_});
  return t;
}

void TokenState::MarkAux(int64_t layer, absl::Span<const int32_t> positions) {
  for (int32_t p : positions) {
    const size_t i = Index(layer, p);
    journal_.push_back({i, false, aux_present_[i]});
    aux_present_[i] = 1;
  }
}

void TokenState::BeginStep() {
  journal_.clear();
  stats_at_step_ = stats_;
  profile_at_step_ = profile_;
}

void TokenState::Rollback() {
  for (auto it = journal_.rbegin(); it != journal_.rend(); ++it) {
    if (it->kv) {
      present_[it->index] = it->old_value;
      --count_[it->index];
    } else {
      aux_present_[it->index] = it->old_value;
    }
  }
  journal_.clear();
  stats_ = stats_at_step_;
  profile_ = profile_at_step_;
}

void TokenState::BeginPrompt(int64_t prompt_tokens) {
  stats_.prompt_tokens = prompt_tokens;
}

}  // namespace dynsparse
