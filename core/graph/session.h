// Session: runs one sequence through the model graph — batched prefill of many
// tokens, then incremental decode — with a KV cache and a method's hooks.
#ifndef DYNSPARSE_CORE_GRAPH_SESSION_H_
#define DYNSPARSE_CORE_GRAPH_SESSION_H_

#include <cstdint>
#include <functional>
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

  // Greedy decoding with the choice made on the device: step i feeds the
  // token step i - 1 chose (first_token for step 0) at position length(),
  // and on_token sees each chosen token in order; decoding ends after
  // max_steps tokens or when on_token returns false. The sequence then holds
  // the tokens fed up to that choice: first_token and each chosen token but
  // the last, as a Forward per token would leave it. A backend that
  // pipelines steps (Backend::PipelinesSteps) runs step i + 1 while the host
  // reads step i's token, so the host's pass over a step is off the
  // critical path; a step run past a stop is forgotten (Truncate).
  absl::Status DecodeGreedy(int32_t first_token, int64_t max_steps,
                            const std::function<bool(int32_t)>& on_token);

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
  // Times the phases of later decode steps (token_profile.h), waiting for
  // the device at each or, `host_only`, never; no-op unless the method
  // selects tokens.
  void EnableTokenProfile(bool host_only = false) {
    if (tokens_ != nullptr) tokens_->EnableProfile(host_only);
  }

 private:
  absl::Status CheckTokens(absl::Span<const int32_t> tokens) const;
  // A sequence of `end` tokens fits the cache and the model.
  absl::Status CheckEnd(int64_t end) const;
  // One step of `tokens` (greedy: the one token in device_token_) at
  // positions [length(), ...), run again eagerly when the backend asks, and
  // the cache advanced. Returns the host logits of rows [first_logit_row,
  // n), or (greedy) the chosen token, i32 [1], valid once the backend's
  // WaitStep has returned for this step (it ends with EndStepAsync).
  absl::StatusOr<Tensor> Step(absl::Span<const int32_t> tokens, bool greedy,
                              int64_t first_logit_row);
  // The ops of one step from its embedded rows x (between the backend's
  // BeginStep and EndStep) up to the device logits; does not advance the
  // cache length.
  absl::StatusOr<Tensor> RunStep(Tensor x, absl::Span<const int32_t> positions,
                                 Phase phase, int64_t first_logit_row);
  // The rows a step starts from: token embeddings (host or device ids) plus
  // learned positions where the model has them.
  Tensor Embed(absl::Span<const int32_t> tokens,
               absl::Span<const int32_t> positions);
  Tensor EmbedDevice(const Tensor& tokens, absl::Span<const int32_t> positions);
  Tensor AddPositions(const Tensor& embedded,
                      absl::Span<const int32_t> positions);
  // A one-row step of a method that keeps everything, on the plain dense
  // route: every layer in one Backend::DecodeStack call. False when the
  // backend declines; nothing has run then.
  bool RunDecodeStack(absl::Span<const int32_t> positions, Tensor* x);
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
  // The scoring probe (session_tokens.cc): the last query's attention
  // probabilities over `keys` of layer key_layer's cache, on the device.
  Tensor ProbeLastQuery(int64_t key_layer, absl::Span<const int32_t> keys);
  // Once layer l's keys are written (before its attention), when
  // next_probe_keys_ is set: the probe of layer l + 1, its download started
  // (Method::MayProbeBefore).
  void StartNextProbe(int64_t layer);
  // The started probe's values (waiting for its download): f32 scores, or
  // i32 indices when it was started with a top count; an empty tensor when
  // none was started for `layer`. Never leaves one pending.
  Tensor FinishProbe(int64_t layer);
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
  // The next layer's probe: its keys while the layer runs (empty: no early
  // probe) and, where the method announced it (Method::ProbeTopCount), how
  // many of the first `prunable` keys it keeps; then its download and the
  // layer it is for (-1: none). A started probe with a top count > 0 holds
  // the kept indices (Backend::TopCount), i32, else the scores.
  struct ProbeTop {
    int64_t count = -1;
    int64_t prunable = 0;
  };
  absl::Span<const int32_t> next_probe_keys_;
  ProbeTop next_probe_top_;
  Backend::StartedRead started_probe_;
  int64_t started_probe_layer_ = -1;
  int64_t started_probe_top_count_ = -1;
  SparseBlocks sparse_;  // Sparse execution of head/neuron selections.
  // DecodeGreedy's token on the backend's device, i32 [1]: written by each
  // step's argmax, read by the next step's embedding.
  Tensor device_token_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_SESSION_H_
