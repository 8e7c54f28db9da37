// SparseBlocks: the sparse execution of DejaVu selections inside Session
// (Method::execution() == kSparse on a backend with SupportsSparse()).
//
// - MLP: the kept neurons only: gathered up (and gate) rows with fused bias +
//   activation, then the down projection over the kept neurons from a
//   transposed copy of W2 (Backend::TransposedWeight, made when the session
//   starts so no decode step allocates; only for the layers whose MLP the
//   method may sparsify, Method::MaySparsifyNeurons).
// - Attention (decode, one row): Q of the kept heads, attention of the kept
//   heads, W_O over the kept heads' columns. K/V of skipped heads are
//   completed lazily (METHODS.md §1.8): each layer keeps the attention inputs
//   of its last W decode tokens in a ring (W = Method::LazyKvWindow()); a kv
//   head computes its missing K/V whenever it is active, and a head that
//   still owes the K/V of the token whose slot the next token will take is
//   made active for that step (so the forced work is spread over steps, not
//   one flush of every head each W steps, and a head owes at most W - 1 old
//   tokens and the new one). Each (token, head) K/V is computed exactly
//   once, at most W - 1 steps late (W = 16: as in DejaVu's release), and an
//   active head always sees a complete cache.
//   GQA: a kv head is active when any of its query heads is kept.
// Everything is driven by device ids and staged host scalars with a fixed
// op sequence, so a sparse decode step replays as one CUDA graph.
#ifndef DYNSPARSE_CORE_GRAPH_SPARSE_BLOCKS_H_
#define DYNSPARSE_CORE_GRAPH_SPARSE_BLOCKS_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/graph/backend.h"
#include "core/graph/kv_cache.h"
#include "core/graph/method.h"
#include "core/graph/rope.h"
#include "core/graph/unit_selection.h"
#include "core/model_config.h"
#include "core/model_weights.h"

namespace dynsparse {

class SparseBlocks {
 public:
  // Prefills of more rows run masked: per-row gathers would read the weights
  // once per row.
  static constexpr int64_t kMaxRows = 8;

  // Enabled when the method asks for sparse execution and the backend has
  // sparse kernels; the method must be attached.
  SparseBlocks(const ModelConfig& config, const ModelWeights& weights,
               Backend& backend, const RopeTable& rope, const Method& method);

  bool enabled() const { return enabled_; }
  // True when the backend had no room for a transposed copy of this layer's
  // W2 and transposed the weight in place (CudaBackend on OPT-66B): the
  // layer's dense MLP must then end in DownOfAll too.
  bool down_in_place(int64_t layer) const {
    return enabled_ && in_place_[layer];
  }
  // activation [n, inter] times W2^T (every neuron) from the transposed W2.
  Tensor DownOfAll(int64_t layer, const Tensor& activation);
  // The MLP output (before the residual add) for kept neurons given as ids
  // or host indices (not oracle); h is the MLP's normed input [n, hidden].
  Tensor Mlp(int64_t layer, const Tensor& h, const UnitSelection& neurons);
  // The down projection of a dense activation [n, inter] over the kept
  // neurons (oracle selections, resolved to ids).
  Tensor DownOfKept(int64_t layer, const Tensor& activation,
                    const UnitSelection& neurons);
  // One decode row: the attention block's output (after W_O) with only the
  // kept heads (ids or host indices), completing K/V lazily.
  Tensor DecodeAttention(int64_t layer, const Tensor& h,
                         absl::Span<const int32_t> positions,
                         const UnitSelection& heads, KvCache* cache);
  // W_O over the kept heads of a dense attention output [n, q_dim].
  Tensor OutOfKept(int64_t layer, const Tensor& context,
                   const UnitSelection& heads);
  // Completes every K/V the layer's ring still owes; called before a dense
  // attention reads the cache (prefill, all heads, oracle).
  void Flush(int64_t layer, KvCache* cache);

 private:
  struct Ring {
    Tensor x, pos, pending;
    bool dirty = false;             // Some K/V may be missing.
    int64_t next = -1;              // The position the window expects next.
    std::array<int32_t, 3> step{};  // LazyKvArgs::step
  };
  Tensor Ids(const UnitSelection& selection, int64_t rows);
  // W2^T of a layer the method declared sparse (checked).
  const Tensor& DownTransposed(int64_t layer);
  void RunLazyKv(int64_t layer, const Tensor* h, const Tensor* ids,
                 KvCache* cache);

  const ModelConfig& config_;
  const ModelWeights& weights_;
  Backend& backend_;
  const RopeTable& rope_;
  bool enabled_;
  int32_t ring_slots_;
  std::vector<Ring> rings_;
  std::vector<char> in_place_;
  std::vector<char> sparse_mlp_;  // Layers with a transposed W2.
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_SPARSE_BLOCKS_H_
