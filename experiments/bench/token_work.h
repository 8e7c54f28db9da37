// TokenWork: the token-pruning instrumentation a measurement reports (issue
// 7): the fraction of prompt token-layers computed by the prefill and over
// the whole generation, and the ideal TTFT speedup the prefill's fraction
// implies. Averaged over the sequences of a measurement; empty (nothing
// reported) when the method does not select tokens.
#ifndef DYNSPARSE_EXPERIMENTS_BENCH_TOKEN_WORK_H_
#define DYNSPARSE_EXPERIMENTS_BENCH_TOKEN_WORK_H_

#include <cstdint>

#include "core/graph/session.h"
#include "core/graph/token_profile.h"
#include "nlohmann/json.hpp"

namespace dynsparse {

// A TokenProfile as JSON, per decode step: {"steps", "ms_per_step",
// "select_ms", "move_ms", "probes", "revived_token_layers", "by_rows":
// [{"rows", "layers", "rows_per_layer", "ms", "host_ms",
// "ms_per_layer"}...]} (the by_rows "ms" of all groups plus select and move
// add up to ms_per_step).
nlohmann::json TokenProfileJson(const TokenProfile& profile);

class TokenWork {
 public:
  // Adds the session's current sequence (call after its last step).
  void Add(const Session& session);
  bool empty() const { return sequences_ == 0; }
  double prefill_fraction() const;
  double generation_fraction() const;
  double ideal_ttft_speedup() const;
  // {"prefill_computed_fraction", "generation_computed_fraction",
  //  "ideal_ttft_speedup", "token_sequences"}; {} when empty.
  nlohmann::json ToJson() const;

 private:
  int64_t sequences_ = 0;
  double prefill_sum_ = 0, generation_sum_ = 0, speedup_sum_ = 0;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_BENCH_TOKEN_WORK_H_
