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

nlohmann::json TokenProfileJson(const TokenProfile& p) {
  const double steps = p.steps > 0 ? static_cast<double>(p.steps) : 1.0;
  nlohmann::json groups = nlohmann::json::array();
  for (int b = 0; b < TokenProfile::kBuckets; ++b) {
    if (p.layers[b] == 0) continue;
    const double layers = static_cast<double>(p.layers[b]);
    groups.push_back(
        {{"rows", TokenProfile::BucketName(b)},
         {"layers", layers / steps},
         {"rows_per_layer", static_cast<double>(p.rows[b]) / layers},
         {"ms", p.layer_ms[b] / steps},
         {"host_ms", p.layer_host_ms[b] / steps},
         {"ms_per_layer", p.layer_ms[b] / layers}});
  }
  return {{"steps", p.steps},
          {"host_only", p.host_only},
          {"ms_per_step", p.steps_ms / steps},
          {"select_ms", p.select_ms / steps},
          {"move_ms", p.move_ms / steps},
          {"probes", static_cast<double>(p.probes) / steps},
          {"probe_wait_ms", p.probe_wait_ms / steps},
          {"revived_token_layers", static_cast<double>(p.revived) / steps},
          {"by_rows", groups}};
}

}  // namespace dynsparse
