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

class Method {
 public:
  virtual ~Method() = default;

  virtual std::string name() const = 0;
  // Called once with the model's architecture; rejects unsupported models.
  virtual absl::Status Attach(const ModelConfig& config) = 0;
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
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_METHOD_H_
