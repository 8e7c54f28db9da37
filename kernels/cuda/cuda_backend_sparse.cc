// CudaBackend's sparse execution (DejaVu): masks for masked mode, index
// staging and top-k, gather GEMVs over selected rows or columns, the fused
// sparse MLP, head-subset attention and the lazy K/V completion.
#include <algorithm>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/graph_ops.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/op_signature.h"
#include "kernels/cuda/sparse_ops.h"

namespace dynsparse::cuda {

void CudaBackend::MaskUnits(const UnitSelection& keep, int64_t unit_width,
                            Tensor* x) {
  if (keep.all) return;
  DS_CHECK(!keep.oracle) << "oracle selections are resolved by the graph";
  uint64_t sig = Mix(Mix(MixTensor(kOpMask, *x), unit_width), keep.per_row);
  // Device ids (a predictor's TopK) are used in place; host ids are staged.
  const int32_t* ids = keep.ids.empty() ? StageIndices(keep.indices, &sig)
                                        : keep.ids.data<int32_t>();
  if (!keep.ids.empty()) sig = MixTensor(sig, keep.ids);
  const int64_t units = unit_width > 0 ? x->dim(1) / unit_width : 0;
  Tensor flags = Allocate(DType::kI32,
                          {std::max<int64_t>(1, (x->dim(0) * units + 3) / 4)});
  sig = MixTensor(sig, flags);
  if (!Op(sig)) return;
  Check(MaskUnitsDevice(*active_, ids, keep.per_row, unit_width,
                        flags.data<uint8_t>(), x),
        "MaskUnits");
}

void CudaBackend::StageIds(absl::Span<const int32_t> host, Tensor* ids) {
  DS_CHECK(ids->dtype() == DType::kI32 &&
           ids->numel() == static_cast<int64_t>(host.size()));
  if (!in_step_) {
    // From pageable memory the copy has taken the values when it returns;
    // it runs after every step already launched.
    Check(CudaErrorToStatus(
              cudaMemcpyAsync(ids->raw_data(), host.data(), host.size() * 4,
                              cudaMemcpyHostToDevice, ctx_->stream()),
              "ids upload"),
          "StageIds");
    return;
  }
  uint64_t sig = MixTensor(kOpStageIds, *ids);
  const int32_t* staged = StageIndices(host, &sig);
  if (!Op(sig)) return;
  Check(CudaErrorToStatus(
            cudaMemcpyAsync(ids->raw_data(), staged, host.size() * 4,
                            cudaMemcpyDeviceToDevice, active_->stream()),
            "staging ids"),
        "StageIds");
}

void CudaBackend::TopK(const Tensor& scores, int64_t k, Tensor* indices) {
  if (scores.device() == Device::kCpu) {
    Backend::TopK(scores, k, indices);
    return;
  }
  HoldForSideWork(scores);
  HoldForSideWork(*indices);
  const bool launch =
      Op(Mix(MixTensor(MixTensor(kOpTopK, scores), *indices), k));
  // Set in every mode, so that a replayed step computes the same
  // signatures as its capture.
  if (active_ == ctx_.get()) main_indices_just_written_ = indices->raw_data();
  if (!launch) return;
  Check(TopKRows(*active_, scores, k, indices, options_.topk_cluster), "TopK");
}

void CudaBackend::UnitNorms(const Tensor& x, int64_t unit_width,
                            Tensor* norms) {
  if (x.device() == Device::kCpu) {
    Backend::UnitNorms(x, unit_width, norms);
    return;
  }
  if (!Op(Mix(MixTensor(MixTensor(kOpUnitNorms, x), *norms), unit_width))) {
    return;
  }
  Check(UnitNormsRows(*active_, x, unit_width, norms), "UnitNorms");
}

void CudaBackend::GatherLinear(const Tensor& x, const Tensor& w,
                               const Tensor& bias, const Tensor& ids,
                               int64_t unit_width, bool activate,
                               Activation activation, Tensor* y) {
  uint64_t sig = MixTensor(MixTensor(MixTensor(kOpGatherLinear, x), w), bias);
  sig = MixTensor(MixTensor(sig, ids), *y);
  sig = Mix(Mix(Mix(sig, unit_width), activate),
            static_cast<uint64_t>(activation));
  if (!Op(sig)) return;
  Check(GatherGemv(*active_, x, w, bias, nullptr, nullptr, ids.data<int32_t>(),
                   ids.dim(1), unit_width, activate, activation, y),
        "GatherLinear");
}

void CudaBackend::GatherGatedLinear(const Tensor& x, const Tensor& w_up,
                                    const Tensor& w_gate, const Tensor& b_up,
                                    const Tensor& b_gate, const Tensor& ids,
                                    Activation activation, Tensor* y) {
  uint64_t sig =
      MixTensor(MixTensor(MixTensor(kOpGatherLinear, x), w_up), w_gate);
  sig = MixTensor(MixTensor(MixTensor(MixTensor(sig, b_up), b_gate), ids), *y);
  if (!Op(Mix(sig, static_cast<uint64_t>(activation) + 100))) return;
  Check(GatherGemv(*active_, x, w_up, b_up, &w_gate, &b_gate,
                   ids.data<int32_t>(), ids.dim(1), 1, true, activation, y),
        "GatherGatedLinear");
}

void CudaBackend::GatherLinearT(const Tensor& x, const Tensor& w_t,
                                const Tensor& bias, const Tensor& ids,
                                Tensor* y) {
  if (ids.empty() && RoundsInputForLinear(x, w_t)) {
    // Every unit of a prefill: one GEMM (a layer whose W2 was transposed in
    // place, SparseBlocks::DownOfAll).
    HoldForSideWork(x);
    HoldForSideWork(*y);
    const uint64_t sig = MixTensor(
        MixTensor(MixTensor(MixTensor(kOpLinearTransposed, x), w_t), bias), *y);
    if (!Op(sig)) return;
    Check(cuda::LinearTransposed(*active_, *pool_, x, w_t, bias, y),
          "GatherLinearT");
    return;
  }
  const int64_t k = ids.empty() ? w_t.dim(0) : ids.dim(1);
  Tensor scratch = Allocate(
      DType::kF32, {GatherGemvTScratchFloats(*active_, x.dim(0), k, w_t.dim(1),
                                             ids.empty())});
  uint64_t sig =
      MixTensor(MixTensor(MixTensor(kOpGatherLinearT, x), w_t), bias);
  sig = MixTensor(MixTensor(MixTensor(sig, ids), *y), scratch);
  if (!Op(sig)) return;
  Check(GatherGemvT(*active_, x, w_t, bias,
                    ids.empty() ? nullptr : ids.data<int32_t>(), k,
                    scratch.data<float>(), y),
        "GatherLinearT");
}

FusedSparseMlpLaunch CudaBackend::FusedMlpLaunch(const Tensor& x,
                                                 const Tensor& w_up,
                                                 const Tensor* w_gate,
                                                 const Tensor& w_down_t,
                                                 int64_t k, Activation act) {
  if (options_.fused_sparse_mlp == 0 || x.device() != Device::kCuda) return {};
  // The first grid of one block an SM that holds the units, where wanted,
  // else the first grid of two; automatic (option 1), MLPs wider than 9216
  // take the grid of two only from 8192 kept units (cuda_backend_options.h).
  if (options_.fused_mlp_one_block_an_sm) {
    const FusedSparseMlpLaunch alone =
        FusedMlpGrid(x, w_up, w_gate, w_down_t, k, act, true);
    if (alone.splits > 0) return alone;
  }
  if (options_.fused_sparse_mlp == 1 && x.numel() > 9216 && k < 8192) return {};
  return FusedMlpGrid(x, w_up, w_gate, w_down_t, k, act, false);
}

FusedSparseMlpLaunch CudaBackend::FusedMlpGrid(
    const Tensor& x, const Tensor& w_up, const Tensor* w_gate,
    const Tensor& w_down_t, int64_t k, Activation act, bool one_block_an_sm) {
  auto grid_of = [&](int cluster) -> FusedSparseMlpGrid {
    const auto key = std::make_tuple(x.numel(), static_cast<int>(w_up.dtype()),
                                     w_gate != nullptr, static_cast<int>(act),
                                     cluster, one_block_an_sm);
    auto it = fused_mlp_grids_.find(key);
    if (it == fused_mlp_grids_.end()) {
      it = fused_mlp_grids_
               .emplace(key,
                        FusedSparseMlpClusters(*active_, x.numel(),
                                               w_up.dtype(), w_gate != nullptr,
                                               act, cluster, one_block_an_sm))
               .first;
    }
    return it->second;
  };
  const int forced = static_cast<int>(options_.fused_sparse_mlp_cluster);
  if (forced != 0) {
    return FirstFittingGrid({grid_of(forced)}, x, w_up, w_gate, w_down_t, k);
  }
  // Of the sizes whose one wave holds the units, the larger ones mostly
  // measured faster (fewer splits to reduce; H200, results/bench/
  // h200_run107 .. h200_run116), but which wins moves with the machine (where
  // the clusters land in the GPCs): gated Llama-2-7B keep 0.1 12.4 us at 16
  // against 13.5 at 8; OPT-66B keep 0.1 at 16 (14 splits) ahead of 12 on
  // four machines, behind 8 alone on two (40.1 against 39.1 us) yet ahead in
  // their decode (14.78 against 14.85 ms, run 116); keep 0.25 89.5 at 4
  // against the gathers' 91.8. Splits of more than ~290 units at 16 lost to
  // 8 (OPT-30B keep 0.25, 341 units: 58.0 against 56.6 us, runs 115-116), as
  // did ReLU MLPs narrower than 7168 (OPT-13B keep 0.25, run 109); 12 needs
  // a hidden size that is a multiple of 1536.
  if (w_gate != nullptr) {
    return FirstFittingGrid({grid_of(16), grid_of(8), grid_of(4)}, x, w_up,
                            w_gate, w_down_t, k);
  }
  if (x.numel() >= 7168) {
    const FusedSparseMlpLaunch wide =
        FirstFittingGrid({grid_of(16)}, x, w_up, w_gate, w_down_t, k);
    if (wide.splits > 0 &&
        (k + wide.splits - 1) / wide.splits <= kReluCluster16MaxSplitUnits) {
      return wide;
    }
  }
  return FirstFittingGrid({grid_of(12), grid_of(8), grid_of(4)}, x, w_up,
                          w_gate, w_down_t, k);
}

void CudaBackend::GatherMlp(const Tensor& x, const Tensor& w_up,
                            const Tensor& b_up, const Tensor* w_gate,
                            const Tensor* b_gate, const Tensor& w_down_t,
                            const Tensor& b_down, const Tensor& ids,
                            Activation act, Tensor* hidden, Tensor* y) {
  FusedSparseMlpLaunch launch =
      FusedMlpLaunch(x, w_up, w_gate, w_down_t, ids.dim(1), act);
  launch.early_copies = EarlyMlpCopies(ids);
  const int splits = launch.splits;
  const FusedSparseMlpGrid& grid = launch.grid;
  if (splits == 0) {
    Backend::GatherMlp(x, w_up, b_up, w_gate, b_gate, w_down_t, b_down, ids,
                       act, hidden, y);
    return;
  }
  Tensor scratch = Allocate(DType::kF32, {splits * x.numel()});
  uint64_t sig = MixTensor(MixTensor(MixTensor(kOpGatherMlp, x), w_up), b_up);
  if (w_gate != nullptr) sig = MixTensor(MixTensor(sig, *w_gate), *b_gate);
  sig = MixTensor(MixTensor(MixTensor(sig, w_down_t), b_down), ids);
  sig = Mix(MixTensor(MixTensor(sig, *y), scratch), static_cast<uint64_t>(act));
  sig = Mix(sig, static_cast<uint64_t>(launch.early_copies));
  int32_t* counters = FusedMlpCounters();
  sig = Mix(sig, static_cast<uint64_t>(counters != nullptr));
  if (!Op(Mix(Mix(sig, static_cast<uint64_t>(splits)),
              static_cast<uint64_t>(grid.cluster)))) {
    return;
  }
  Check(FusedSparseMlp(*active_, x, w_up, b_up, w_gate, b_gate, w_down_t,
                       b_down, ids.data<int32_t>(), ids.dim(1), act, launch,
                       scratch.data<float>(), counters, y),
        "GatherMlp");
}

void CudaBackend::GatherColumnsLinear(const Tensor& x, const Tensor& w,
                                      const Tensor& bias, const Tensor& ids,
                                      int64_t unit_width, Tensor* y) {
  uint64_t sig =
      MixTensor(MixTensor(MixTensor(kOpGatherColumnsLinear, x), w), bias);
  sig = Mix(MixTensor(MixTensor(sig, ids), *y), unit_width);
  if (!Op(sig)) return;
  Check(GatherColumnsGemv(*active_, x, w, bias, ids.data<int32_t>(), ids.dim(1),
                          unit_width, y,
                          static_cast<int>(options_.sparse_rows_per_warp)),
        "GatherColumnsLinear");
}

void CudaBackend::GatherColumns(const Tensor& x, const Tensor& ids,
                                int64_t unit_width, Tensor* y) {
  uint64_t sig = MixTensor(MixTensor(MixTensor(kOpGatherColumns, x), ids), *y);
  if (!Op(Mix(sig, unit_width))) return;
  Check(GatherColumnsCopy(*active_, x, ids.data<int32_t>(), ids.dim(1),
                          unit_width, y),
        "GatherColumns");
}

void CudaBackend::SparseAttention(const AttentionArgs& args,
                                  const Tensor& head_ids) {
  uint64_t sig = MixTensor(kOpSparseAttention, head_ids);
  DeviceAttentionArgs d = DeviceArgs(args, &sig);
  d.num_heads = head_ids.dim(1);  // Compact heads.
  d.head_ids = head_ids.data<int32_t>();
  d.head_group = args.num_heads / args.num_kv_heads;
  LaunchDecodeAttention(d, sig, "SparseAttention");
}

void CudaBackend::LazyKv(const LazyKvArgs& args) {
  const Tensor none;
  const Tensor& freq = args.rope != nullptr && args.rope->enabled()
                           ? RopeFrequencies(*args.rope)
                           : none;
  uint64_t sig = MixTensor(MixTensor(kOpLazyKv, *args.ring_x), *args.k_cache);
  sig = MixTensor(MixTensor(MixTensor(sig, *args.v_cache), *args.wk), freq);
  sig = Mix(sig, args.h != nullptr
                     ? reinterpret_cast<uintptr_t>(args.h->raw_data())
                     : 0);
  if (args.head_ids != nullptr) sig = MixTensor(sig, *args.head_ids);
  DeviceLazyKvArgs d;
  d.step = StageIndices(args.step, &sig);
  if (!Op(sig)) return;
  d.h = args.h != nullptr ? args.h->data<float>() : nullptr;
  d.head_ids = args.head_ids != nullptr && args.h != nullptr
                   ? args.head_ids->data<int32_t>()
                   : nullptr;
  d.k = d.head_ids != nullptr ? args.head_ids->numel() : 0;
  d.ring_x = args.ring_x->data<float>();
  d.ring_pos = args.ring_pos->data<int32_t>();
  d.pending = args.ring_pending->data<int32_t>();
  d.slots = args.ring_x->dim(0);
  d.wk = args.wk;
  d.wv = args.wv;
  d.bk = args.bk;
  d.bv = args.bv;
  d.inv_freq = freq.empty() ? nullptr : freq.data<float>();
  d.num_heads = args.num_heads;
  d.num_kv_heads = args.num_kv_heads;
  d.head_dim = args.head_dim;
  d.hidden = args.ring_x->dim(1);
  d.k_cache = args.k_cache;
  d.v_cache = args.v_cache;
  d.rows_per_warp = static_cast<int>(options_.sparse_rows_per_warp);
  d.tensor_cores = options_.lazy_kv_tensor_cores;
  d.mma_blocks_per_sm = static_cast<int>(options_.lazy_kv_mma_blocks_per_sm);
  Check(LazyKvDevice(*active_, d), "LazyKv");
}

Tensor CudaBackend::Transpose(const Tensor& w) {
  if (w.device() == Device::kCpu) return Backend::Transpose(w);
  Check(ctx_->Synchronize(), "Transpose");
  size_t free_bytes = 0, total_bytes = 0;
  Check(CudaErrorToStatus(cudaMemGetInfo(&free_bytes, &total_bytes),
                          "cudaMemGetInfo"),
        "Transpose");
  // Left for activations, graphs and the benchmark's 2 GiB bandwidth copy.
  const size_t margin = std::max<size_t>(size_t{6} << 30, total_bytes / 20);
  const bool in_place = w.bytes() + margin > free_bytes;
  absl::StatusOr<Tensor> t = AllocateDevice(*ctx_, w.dtype(), w.shape());
  Check(t.status(), "Transpose");
  if (!in_place) {
    Tensor out = t->Reshape({w.dim(1), w.dim(0)});
    Check(TransposeMatrix(*ctx_, w, &out), "Transpose");
    Check(ctx_->Synchronize(), "Transpose");
    return out;
  }
  // No room for a second copy of every W2: transpose through one scratch
  // copy into the weight's own storage (the graph then reads this weight
  // only transposed, SparseBlocks::down_in_place).
  Check(CopyDeviceToDevice(*ctx_, w, &*t), "Transpose");
  Tensor out = w.Reshape({w.dim(1), w.dim(0)});
  Check(TransposeMatrix(*ctx_, *t, &out), "Transpose");
  Check(ctx_->Synchronize(), "Transpose");
  transposed_in_place_.insert(w.raw_data());
  return out;
}

}  // namespace dynsparse::cuda
