// TokenState: the per-sequence token-axis state of LazyLLM-style pruning,
// owned by Session when its method selects tokens (core/graph/
// session_tokens.cc runs the steps).
//
// - KV presence per layer: which positions have K/V at that layer. A token is
//   computed at a layer only when it lacks K/V there, and has it forever
//   after, so each (token, layer) is computed at most once per sequence.
// - The Aux Cache: Aux(l) holds the output of layer l (input of l + 1) for
//   tokens computed at l and dropped before l + 1; a later step that selects
//   such a token again revives it from there.
// - Instrumentation: how often each (token, layer) was computed, and the
//   fraction of prompt token-layers computed by the prefill and so far.
#ifndef DYNSPARSE_CORE_GRAPH_TOKEN_STATE_H_
#define DYNSPARSE_CORE_GRAPH_TOKEN_STATE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/graph/backend.h"
#include "core/graph/token_profile.h"
#include "core/model_config.h"
#include "core/tensor.h"

namespace dynsparse {

// Work done on the prompt's token-layers (prompt = the first step's tokens).
struct TokenStats {
  int64_t prompt_tokens = 0;
  int64_t layers = 0;
  int64_t prefill_computed = 0;  // Prompt token-layers the prefill computed.
  int64_t computed = 0;          // ... computed over the whole generation.
  int64_t revived = 0;           // Token-layers computed from the Aux Cache.
  int32_t max_computations = 0;  // Most computations of any (token, layer).

  double PrefillFraction() const;
  double GenerationFraction() const;
  // TTFT speedup if time scaled with token-layers computed: 1 / prefill
  // fraction (attention and the probe make the real one lower).
  double IdealTtftSpeedup() const;
};

class TokenState {
 public:
  TokenState(const ModelConfig& config, int64_t capacity);

  // Forgets everything (a new sequence).
  void Clear();
  // Forgets positions >= length (Session::Truncate).
  void Truncate(int64_t length);

  bool present(int64_t layer, int32_t position) const {
    return present_[Index(layer, position)] != 0;
  }
  // present(layer, p) for every position p, as one row: the token path's
  // per-layer loops over the whole context read it directly (a call per
  // element kept the compiler reloading the vector through memory).
  const uint8_t* present_row(int64_t layer) const {
    return present_.data() + Index(layer, 0);
  }
  bool in_aux(int64_t layer, int32_t position) const {
    return aux_present_[Index(layer, position)] != 0;
  }
  // Records that `positions` were computed at `layer` in this step;
  // `from_aux` of them were revived from the Aux Cache.
  void MarkComputed(int64_t layer, absl::Span<const int32_t> positions,
                    int64_t from_aux);
  // Aux(layer), [capacity, hidden] f32, allocated on first use.
  Tensor& Aux(int64_t layer, Backend& backend);
  void MarkAux(int64_t layer, absl::Span<const int32_t> positions);
  // Computations of (position, layer) since the sequence began.
  int32_t computations(int64_t layer, int32_t position) const {
    return count_[Index(layer, position)];
  }

  // Steps are transactions: a backend may discard a step and ask for a rerun
  // (CUDA graph mismatch), so Session opens each attempt with BeginStep and
  // undoes a discarded one with Rollback.
  void BeginStep();
  void Rollback();

  // The first step of a sequence defines the prompt; call before its layers.
  void BeginPrompt(int64_t prompt_tokens);
  void EndPrefill() { stats_.prefill_computed = stats_.computed; }
  const TokenStats& stats() const { return stats_; }

  // Opt-in phase timing of decode steps (token_profile.h); null when off.
  // Cleared with the sequence, rolled back with a discarded step.
  void EnableProfile(bool host_only) {
    profiling_ = true;
    profile_.host_only = host_only;
  }
  TokenProfile* profile() { return profiling_ ? &profile_ : nullptr; }
  const TokenProfile* profile() const {
    return profiling_ ? &profile_ : nullptr;
  }

 private:
  size_t Index(int64_t layer, int32_t position) const {
    return static_cast<size_t>(layer * capacity_ + position);
  }

  int64_t layers_;
  int64_t capacity_;
  int64_t hidden_;
  std::vector<uint8_t> present_;      // [layers, capacity]
  std::vector<uint8_t> aux_present_;  // [layers, capacity]
  std::vector<int32_t> count_;        // [layers, capacity]
  std::vector<Tensor> aux_;           // [layers]; empty until used
  TokenStats stats_;
  // This step's changes: index into the [layers, capacity] arrays and
  // whether it set presence (else Aux presence) from 0; counts rise by one.
  struct Change {
    size_t index;
    bool kv;
    uint8_t old_value;
  };
  std::vector<Change> journal_;
  TokenStats stats_at_step_;
  bool profiling_ = false;
  TokenProfile profile_;
  TokenProfile profile_at_step_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_TOKEN_STATE_H_
