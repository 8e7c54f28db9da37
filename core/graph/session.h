// Session: runs one sequence through the model graph — batched prefill of many
// tokens, then incremental decode — with a KV cache and a method's hooks.
#ifndef DYNSPARSE_CORE_GRAPH_SESSION_H_
#define DYNSPARSE_CORE_GRAPH_SESSION_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/graph/backend.h"
#include "core/graph/kv_cache.h"
#include "core/graph/method.h"
#include "core/graph/rope.h"
#include "core/graph/sparse_blocks.h"
#include "core/graph/token_state.h"
#include "core/model_config.h"
#include "core/model_weights.h"

namespace dynsparse {

class Session {
 public:
  // `config`, `weights`, `backend` and `method` must outlive the session.
  // `max_tokens` bounds the sequence length (KV cache capacity).
  Session(const ModelConfig& config, const ModelWeights& weights,
          Backend& backend, Method& method, int64_t max_tokens);

  // Appends `tokens` at positions [length(), length() + n) and runs them.
  // Returns host f32 logits [n - first_logit_row, vocab] for rows
  // [first_logit_row, n); pass n - 1 for just the last token.
  absl::StatusOr<Tensor> Forward(absl::Span<const int32_t> tokens,
                                 int64_t first_logit_row);

  // Forgets the sequence: the next Forward starts at position 0.
  void Reset();
  // Keeps positions [0, length) and forgets the rest, so several
  // continuations can share one context's prefill (multiple-choice scoring).
  // Methods that keep per-sequence state must not depend on dropped tokens;
  // `length` beyond the current length is an error.
  absl::Status Truncate(int64_t length);
  int64_t length() const { return cache_.length(); }
  int64_t capacity() const { return cache_.capacity(); }
  const KvCache& cache() const { return cache_; }
  // Token pruning state (null unless the method selects tokens).
  const TokenState* token_state() const { return tokens_.get(); }
  // Times the phases of later decode steps (token_profile.h); no-op unless
  // the method selects tokens.
  void EnableTokenProfile() {
    if (tokens_ != nullptr) tokens_->EnableProfile();
  }

 private:
  absl::Status CheckTokens(absl::Span<const int32_t> tokens) const;
  // The ops of one Forward (between the backend's BeginStep and EndStep);
  // does not advance the cache length.
  absl::StatusOr<Tensor> RunStep(absl::Span<const int32_t> tokens,
                                 absl::Span<const int32_t> positions,
                                 Phase phase, int64_t first_logit_row);
  Tensor Embed(absl::Span<const int32_t> tokens,
               absl::Span<const int32_t> positions);
  // `pending` carries a pre-norm block's output until the next norm adds it
  // to the residual stream x (Backend::AddNorm); post-norm models add at once.
  // `rows_changed`: LayerSite::rows_changed of the layer's SelectHeads.
  void RunLayer(int64_t layer, Phase phase, absl::Span<const int32_t> positions,
                Tensor* x, Tensor* pending, bool rows_changed = false);
  void Norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
            Tensor* y);
  // Pre-LN models norm a block's input (returned), folding in the pending
  // residual first; post-LN models (OPT-350m) use x itself and norm the
  // block's output after the residual add (EndBlock). `reader`: the first
  // projection weight that reads the normed rows; more than
  // SparseBlocks::kMaxRows rows only reach dense projections, so they come in
  // the dtype the backend wants there (Backend::ProjectionInputDType).
  Tensor BlockInput(Tensor* x, Tensor* pending, const Tensor& weight,
                    const Tensor& bias, const Tensor& reader);
  void EndBlock(const Tensor& out, const Tensor& norm_weight,
                const Tensor& norm_bias, Tensor* x, Tensor* pending);
  // The plain dense route (Backend::FusesInputNorm): one row, a pre-norm
  // model, no token pruning or observing method. A block that keeps every
  // head (neuron) then adds its output into x itself and, when nothing is
  // pending, hands its norm to the projection that reads it, so no norm or
  // add runs alone.
  bool PlainDenseRow(int64_t n) const;
  InputNorm NormOf(const Tensor& weight, const Tensor& bias) const;
  // The MLP block on the plain dense route: x += MLP(norm(x)).
  void FusedNormMlp(const LayerWeights& w, Tensor* x);
  void Attention(int64_t layer, Phase phase,
                 absl::Span<const int32_t> positions, Tensor* x,
                 Tensor* pending, bool rows_changed);
  void Mlp(int64_t layer, Phase phase, Tensor* x, Tensor* pending);
  // The layers of a step under token pruning (session_tokens.cc): leaves in
  // x the rows computed at the last layer, the logit rows last.
  absl::Status RunTokenLayers(absl::Span<const int32_t> positions, Phase phase,
                              int64_t first_logit_row, Tensor* x,
                              Tensor* pending);
  // An oracle selection becomes ids: per row, the units of `x` (blocks of
  // `unit_width` columns) with the largest L2 norm.
  void ResolveOracle(const Tensor& x, int64_t unit_width,
                     UnitSelection* selection);

  const ModelConfig& config_;
  const ModelWeights& weights_;
  Backend& backend_;
  Method& method_;
  RopeTable rope_;
  KvCache cache_;
  // Token pruning (LazyLLM): the state, the keys of the layer being run
  // (empty: every position up to the query) and the last row's query of the
  // last layer run, for the scoring probe.
  std::unique_ptr<TokenState> tokens_;
  absl::Span<const int32_t> live_keys_;
  Tensor last_query_;
  SparseBlocks sparse_;  // Sparse execution of head/neuron selections.
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_SESSION_H_
