// Method: the policy interface the model graph consults at fixed points of
// every layer. The graph owns the mechanics (weights, KV cache, gathers);
// a method only returns selections. Implementations live in methods/ and are
// listed in the explicit table of methods/registry.cc.
//
// The interface lives in core/ because the graph calls it; methods/ depends on
// core/, never the reverse.
#ifndef DYNSPARSE_CORE_GRAPH_METHOD_H_
#define DYNSPARSE_CORE_GRAPH_METHOD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/graph/backend.h"
#include "core/graph/top_count.h"
#include "core/graph/unit_selection.h"
#include "core/model_config.h"
#include "core/tensor.h"

namespace dynsparse {

enum class Phase { kPrefill, kDecode };

struct LayerSite {
  int64_t layer = 0;
  Phase phase = Phase::kPrefill;
  // Token pruning dropped or revived rows since the previous layer: what a
  // method predicted for this layer from an earlier sub-block (DejaVu's
  // lookahead) is for other rows. Set for SelectHeads only.
  bool rows_changed = false;
};

// Which of the candidate tokens entering a layer flow on (token pruning,
// LazyLLM). Candidates the graph protects are kept whatever the method says.
struct TokenSelection {
  bool all = true;
  std::vector<int32_t> keep_rows;  // Candidate indices kept, ascending.
};

// The tokens a method may select from before layer l >= 1: those live at
// layer l - 1 in this step (every step starts from the full context at layer
// 0, so sets are nested within a step). Positions are original positions.
class TokenCandidates {
 public:
  virtual ~TokenCandidates() = default;
  // Ascending original positions of the candidates.
  virtual absl::Span<const int32_t> positions() const = 0;
  // Positions >= first_new() arrived in this step (the prompt in prefill).
  virtual int32_t first_new() const = 0;
  // Candidates at indices >= first_protected() are always kept: the last
  // token and any row whose logits the caller asked for.
  virtual int64_t first_protected() const = 0;
  // Layer l - 1's attention probabilities from the step's last token over
  // the candidates (the same keys it attended to), averaged over all query
  // heads. Computed on the first call only (a device round trip).
  virtual absl::Span<const float> LastQueryAttention() = 0;
  // The ascending indices of the `count` candidates below first_protected()
  // with the highest LastQueryAttention, ties to the earlier one. Session
  // answers from the device when the method announced the count
  // (Method::ProbeTopCount); otherwise, and by default, from the scores.
  virtual std::vector<int32_t> TopLastQueryAttention(int64_t count) {
    return TopCountIndices(
        LastQueryAttention().first(static_cast<size_t>(first_protected())),
        count);
  }
};

// How the graph executes head/neuron selections. Both give the same numbers
// on the same selection (a test holds them equal): masked computes densely and
// zeroes what is not kept (batched quality evaluation); sparse touches only
// the kept rows/heads (decode timing). Backends without sparse kernels for a
// shape fall back to masked.
enum class SparseExecution { kMasked, kSparse };

class Method {
 public:
  virtual ~Method() = default;

  virtual std::string name() const = 0;
  // Called once with the model's architecture and the backend sessions will
  // run on; rejects unsupported models. A method that runs ops of its own
  // (DejaVu's predictors) uploads its weights here (Backend::Upload) and keeps
  // the backend to run them on.
  virtual absl::Status Attach(const ModelConfig& config, Backend& backend) = 0;
  // Called before the first token of every new sequence.
  virtual void BeginSequence() {}

  // True when the method prunes tokens: Session then keeps per-layer KV
  // presence and the Aux Cache and calls SelectTokens before layers >= 1.
  virtual bool SelectsTokens() const { return false; }
  // Before layer site.layer >= 1: which candidates flow into it.
  virtual void SelectTokens(const LayerSite& site, TokenCandidates& candidates,
                            TokenSelection* keep) {}
  // False (LazyLLM as Lazy-Llama implements it): a layer's attention keys
  // are the tokens selected for it in this step. True: also every token with
  // K/V at the layer from an earlier step, so a decode step never loses cached
  // context (an ablation; the queries, and so the computed token-layers, are
  // the same).
  virtual bool AttendsToCachedTokens() const { return false; }
  // True when SelectTokens at `site` may ask for LastQueryAttention: Session
  // then computes it at the end of the previous layer's attention and
  // downloads it while that layer's MLP runs, instead of stopping the device
  // at the layer boundary. A probe computed and not asked for is wasted work,
  // never a wrong selection.
  virtual bool MayProbeBefore(const LayerSite& site) const { return false; }
  // When SelectTokens at `site`, given `candidates` of which the first
  // `prunable` may go, will ask TopLastQueryAttention(count): that count,
  // so Session can pick them with the probe and download `count` indices
  // instead of every score (the host's selection over a long context would
  // otherwise hold the device idle). -1: it will not, or it does not know.
  virtual int64_t ProbeTopCount(const LayerSite& site, int64_t candidates,
                                int64_t prunable) const {
    return -1;
  }
  // Before attention: heads each row computes. `x` is the layer's input
  // (residual stream before the attention norm), [rows, hidden].
  virtual void SelectHeads(const LayerSite& site, const Tensor& x,
                           UnitSelection* heads) {}
  // Before the MLP: neurons each row computes. `x` is the MLP block's input
  // (residual stream after attention, before the MLP norm).
  virtual void SelectNeurons(const LayerSite& site, const Tensor& x,
                             UnitSelection* neurons) {}
  virtual SparseExecution execution() const { return SparseExecution::kMasked; }
  // After Attach: whether SelectNeurons may keep fewer than all neurons at
  // `layer`. Sparse execution prepares the transposed W2 of such layers only
  // (on a device short of memory it transposes W2 in place, and the layer's
  // dense MLP would then lose its fused kernels).
  virtual bool MaySparsifyNeurons(int64_t layer) const { return true; }
  // Sparse execution's lazy K/V window (core/graph/sparse_blocks.h): a head
  // completes the K/V of a token it skipped at the latest window - 1 steps
  // later, 2..kMaxLazyKvWindow (DejaVu's release: 16). It changes the speed
  // only: an active head always sees a complete cache. The default, 8, keeps
  // a head's owed tokens within one 8-token group of the tensor-core lazy
  // K/V kernel: OPT-66B DejaVu decode 15.23 -> 14.76 ms against 16
  // (results/bench/h200_run94).
  static constexpr int32_t kMaxLazyKvWindow = 16;
  static constexpr int32_t kDefaultLazyKvWindow = 8;
  static constexpr bool IsLazyKvWindow(int64_t window) {
    return window >= 2 && window <= kMaxLazyKvWindow;
  }
  virtual int32_t LazyKvWindow() const { return kDefaultLazyKvWindow; }
  // True when SelectHeads and SelectNeurons keep everything at every layer,
  // with no side work: a decode row's layers may then run as one
  // Backend::DecodeStack call.
  virtual bool KeepsEverything() const { return false; }

  // Calibration (`dynsparse calibrate`): when observes() is true the graph
  // hands the method host f32 copies of what sparsity labels are made of,
  // before any selection is applied. Made in prefill steps, which every
  // backend runs eagerly.
  virtual bool observes() const { return false; }
  // The attention output before W_O, [rows, num_heads * head_dim].
  virtual void ObserveHeads(const LayerSite& site, const Tensor& context) {}
  // The MLP activation that feeds the down projection, [rows, intermediate]
  // (gated MLPs: act(gate) * up).
  virtual void ObserveNeurons(const LayerSite& site, const Tensor& activation) {
  }
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_METHOD_H_
