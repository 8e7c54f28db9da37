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
#include "core/graph/backend.h"
#include "core/graph/unit_selection.h"
#include "core/model_config.h"
#include "core/tensor.h"

namespace dynsparse {

enum class Phase { kPrefill, kDecode };

struct LayerSite {
  int64_t layer = 0;
  Phase phase = Phase::kPrefill;
};

// Which of the rows entering a layer flow on (token pruning, LazyLLM).
struct TokenSelection {
  bool all = true;
  std::vector<int32_t> keep_rows;  // Row indices kept, ascending.
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

  // Before a layer: which of the `num_rows` rows flow into it.
  virtual void SelectTokens(const LayerSite& site, int64_t num_rows,
                            TokenSelection* keep) {}
  // Before attention: heads each row computes. `x` is the layer's input
  // (residual stream before the attention norm), [rows, hidden].
  virtual void SelectHeads(const LayerSite& site, const Tensor& x,
                           UnitSelection* heads) {}
  // Before the MLP: neurons each row computes. `x` is the MLP block's input
  // (residual stream after attention, before the MLP norm).
  virtual void SelectNeurons(const LayerSite& site, const Tensor& x,
                             UnitSelection* neurons) {}
  virtual SparseExecution execution() const { return SparseExecution::kMasked; }

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
