#include "core/graph/sparse_blocks.h"

#include <cmath>

#include "core/logging.h"

namespace dynsparse {

SparseBlocks::SparseBlocks(const ModelConfig& config,
                           const ModelWeights& weights, Backend& backend,
                           const RopeTable& rope, const Method& method)
    : config_(config),
      weights_(weights),
      backend_(backend),
      rope_(rope),
      enabled_(method.execution() == SparseExecution::kSparse &&
               backend.SupportsSparse()),
      ring_slots_(method.LazyKvWindow()) {
  if (!enabled_) return;
  DS_CHECK(Method::IsLazyKvWindow(ring_slots_))
      << method.name() << ": lazy K/V window " << ring_slots_;
  rings_.resize(config.num_layers);
  in_place_.resize(config.num_layers);
  sparse_mlp_.resize(config.num_layers);
  for (int64_t l = 0; l < config.num_layers; ++l) {
    // Transposed W2 now: a decode step (maybe a CUDA graph capture) must not
    // allocate or copy weights. Layers whose MLP stays dense keep W2 as it
    // is, with their fused dense kernels.
    sparse_mlp_[l] = method.MaySparsifyNeurons(l);
    if (sparse_mlp_[l]) {
      const Tensor& w_down = weights.layers[l].w_down;
      in_place_[l] =
          backend_.TransposedWeight(w_down).raw_data() == w_down.raw_data();
    }
    Ring& ring = rings_[l];
    ring.x = backend_.Allocate(DType::kF32, {ring_slots_, config.hidden_size});
    ring.pos = backend_.Allocate(DType::kI32, {ring_slots_});
    // Only `pending` is read before it is written: it starts at zero.
    absl::StatusOr<Tensor> pending = backend_.Upload(
        Tensor::Zeros(DType::kI32, {ring_slots_, config.num_kv_heads}));
    DS_CHECK(pending.ok()) << pending.status().ToString();
    ring.pending = *pending;
  }
}

Tensor SparseBlocks::Ids(const UnitSelection& selection, int64_t rows) {
  DS_CHECK(!selection.all && !selection.oracle);
  if (!selection.ids.empty()) {
    DS_CHECK(selection.ids.dim(0) == rows &&
             selection.ids.dim(1) == selection.per_row)
        << "ids " << ShapeToString(selection.ids.shape()) << " for " << rows
        << " rows of " << selection.per_row;
    return selection.ids;
  }
  DS_CHECK_EQ(static_cast<int64_t>(selection.indices.size()),
              rows * selection.per_row);
  Tensor ids = backend_.Allocate(DType::kI32, {rows, selection.per_row});
  backend_.StageIds(selection.indices, &ids);
  return ids;
}

const Tensor& SparseBlocks::DownTransposed(int64_t layer) {
  DS_CHECK(sparse_mlp_[layer])
      << "layer " << layer
      << ": the method selected neurons in a layer it declared dense "
         "(Method::MaySparsifyNeurons)";
  return backend_.TransposedWeight(weights_.layers[layer].w_down);
}

Tensor SparseBlocks::Mlp(int64_t layer, const Tensor& h,
                         const UnitSelection& neurons) {
  const LayerWeights& w = weights_.layers[layer];
  const int64_t n = h.dim(0);
  const Tensor ids = Ids(neurons, n);
  Tensor act = backend_.Allocate(DType::kF32, {n, neurons.per_row});
  Tensor down = backend_.Allocate(DType::kF32, {n, config_.hidden_size});
  const bool gated = config_.gated_mlp;
  backend_.GatherMlp(h, w.w_up, w.b_up, gated ? &w.w_gate : nullptr,
                     gated ? &w.b_gate : nullptr, DownTransposed(layer),
                     w.b_down, ids, config_.activation, &act, &down);
  return down;
}

Tensor SparseBlocks::DownOfAll(int64_t layer, const Tensor& activation) {
  const LayerWeights& w = weights_.layers[layer];
  Tensor down =
      backend_.Allocate(DType::kF32, {activation.dim(0), config_.hidden_size});
  backend_.GatherLinearT(activation, DownTransposed(layer), w.b_down, Tensor(),
                         &down);
  return down;
}

Tensor SparseBlocks::DownOfKept(int64_t layer, const Tensor& activation,
                                const UnitSelection& neurons) {
  const LayerWeights& w = weights_.layers[layer];
  const int64_t n = activation.dim(0);
  const Tensor ids = Ids(neurons, n);
  Tensor kept = backend_.Allocate(DType::kF32, {n, neurons.per_row});
  backend_.GatherColumns(activation, ids, 1, &kept);
  Tensor down = backend_.Allocate(DType::kF32, {n, config_.hidden_size});
  backend_.GatherLinearT(kept, DownTransposed(layer), w.b_down, ids, &down);
  return down;
}

Tensor SparseBlocks::OutOfKept(int64_t layer, const Tensor& context,
                               const UnitSelection& heads) {
  const LayerWeights& w = weights_.layers[layer];
  const int64_t n = context.dim(0), hd = config_.head_dim;
  const Tensor ids = Ids(heads, n);
  Tensor kept = backend_.Allocate(DType::kF32, {n, heads.per_row * hd});
  backend_.GatherColumns(context, ids, hd, &kept);
  Tensor out = backend_.Allocate(DType::kF32, {n, config_.hidden_size});
  backend_.GatherColumnsLinear(kept, w.wo, w.bo, ids, hd, &out);
  return out;
}

void SparseBlocks::RunLazyKv(int64_t layer, const Tensor* h, const Tensor* ids,
                             KvCache* cache) {
  const LayerWeights& w = weights_.layers[layer];
  Ring& ring = rings_[layer];
  LazyKvArgs args;
  args.h = h;
  args.head_ids = ids;
  args.step = ring.step;
  args.ring_x = &ring.x;
  args.ring_pos = &ring.pos;
  args.ring_pending = &ring.pending;
  args.wk = &w.wk;
  args.wv = &w.wv;
  args.bk = &w.bk;
  args.bv = &w.bv;
  args.rope = &rope_;
  args.num_heads = config_.num_heads;
  args.num_kv_heads = config_.num_kv_heads;
  args.head_dim = config_.head_dim;
  args.k_cache = &cache->keys(layer);
  args.v_cache = &cache->values(layer);
  backend_.LazyKv(args);
}

void SparseBlocks::Flush(int64_t layer, KvCache* cache) {
  if (!enabled_ || !rings_[layer].dirty) return;
  rings_[layer].step = {0, 0, 1};
  RunLazyKv(layer, nullptr, nullptr, cache);
  rings_[layer].dirty = false;
}

Tensor SparseBlocks::DecodeAttention(int64_t layer, const Tensor& h,
                                     absl::Span<const int32_t> positions,
                                     const UnitSelection& heads,
                                     KvCache* cache) {
  DS_CHECK(enabled_ && positions.size() == 1);
  const LayerWeights& w = weights_.layers[layer];
  Ring& ring = rings_[layer];
  const int32_t pos = positions[0];
  // A position out of sequence (Truncate, Reset): the window it belongs to
  // is not the ring's; complete what the ring owes and start afresh.
  if (ring.dirty && pos != ring.next) Flush(layer, cache);
  const Tensor ids = Ids(heads, 1);
  const int64_t k = heads.per_row, hd = config_.head_dim;

  Tensor q = backend_.Allocate(DType::kF32, {1, k * hd});
  backend_.GatherLinear(h, w.wq, w.bq, ids, hd, /*activate=*/false,
                        config_.activation, &q);
  if (rope_.enabled()) backend_.ApplyRope(rope_, positions, k, &q);
  // No periodic flush: a head owing the K/V of the token the next one will
  // replace in the ring completes it in this step (LazyKvArgs).
  ring.step = {pos, pos % ring_slots_, 0};
  RunLazyKv(layer, &h, &ids, cache);
  ring.dirty = true;
  ring.next = pos + 1;

  Tensor context = backend_.Allocate(DType::kF32, {1, k * hd});
  AttentionArgs args;
  args.q = &q;
  args.k_cache = &cache->keys(layer);
  args.v_cache = &cache->values(layer);
  args.num_keys = pos + 1;
  args.query_positions = positions;
  args.num_heads = config_.num_heads;
  args.num_kv_heads = config_.num_kv_heads;
  args.head_dim = hd;
  args.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  args.out = &context;
  backend_.SparseAttention(args, ids);

  Tensor out = backend_.Allocate(DType::kF32, {1, config_.hidden_size});
  backend_.GatherColumnsLinear(context, w.wo, w.bo, ids, hd, &out);
  return out;
}

}  // namespace dynsparse
