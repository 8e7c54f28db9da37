#include "experiments/bench/token_work.h"

namespace dynsparse {

void TokenWork::Add(const Session& session) {
  const TokenState* state = session.token_state();
  if (state == nullptr || state->stats().prompt_tokens == 0) return;
  const TokenStats& s = state->stats();
  ++sequences_;
  prefill_sum_ += s.PrefillFraction();
  generation_sum_ += s.GenerationFraction();
  speedup_sum_ += s.IdealTtftSpeedup();
}

double TokenWork::prefill_fraction() const {
  return empty() ? 1.0 : prefill_sum_ / sequences_;
}
double TokenWork::generation_fraction() const {
  return empty() ? 1.0 : generation_sum_ / sequences_;
}
double TokenWork::ideal_ttft_speedup() const {
  return empty() ? 1.0 : speedup_sum_ / sequences_;
}

nlohmann::json TokenWork::ToJson() const {
  if (empty()) return nlohmann::json::object();
  return {{"prefill_computed_fraction", prefill_fraction()},
          {"generation_computed_fraction", generation_fraction()},
          {"ideal_ttft_speedup", ideal_ttft_speedup()},
          {"token_sequences", sequences_}};
}

}  // namespace dynsparse
