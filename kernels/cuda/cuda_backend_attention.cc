// CudaBackend's attention ops: RoPE and K/V writes (alone or fused with a
// decode row's attention), and Attention's choice among the decode, flash
// prefill and split kernels.
#include <algorithm>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/flash_prefill.h"
#include "kernels/cuda/graph_ops.h"
#include "kernels/cuda/op_signature.h"
#include "kernels/cuda/pipelined_attention.h"
#include "kernels/cuda/pipelined_split_plan.h"
#include "kernels/cuda/rope.h"

namespace dynsparse::cuda {

const Tensor& CudaBackend::RopeFrequencies(const RopeTable& rope) {
  for (const auto& [freq, tensor] : rope_tables_) {
    if (freq == rope.inv_freq) return tensor;
  }
  if (mode_ != Mode::kEager) {
    // The upload is a synchronous copy, which a capture cannot contain; the
    // step reruns eagerly and uploads it then.
    mismatch_ = true;
    return device_indices_;
  }
  absl::StatusOr<Tensor> t = UploadRopeInvFreq(*ctx_, rope);
  Check(t.status(), "ApplyRope");
  rope_tables_.emplace_back(rope.inv_freq, *t);
  return rope_tables_.back().second;
}

void CudaBackend::ApplyRope(const RopeTable& rope,
                            absl::Span<const int32_t> positions, int64_t heads,
                            Tensor* x) {
  const Tensor& freq = RopeFrequencies(rope);
  uint64_t sig = Mix(MixTensor(MixTensor(kOpRope, freq), *x),
                     static_cast<uint64_t>(heads));
  const Tensor pos = StagedTensor(positions, &sig);
  if (!Op(sig)) return;
  Check(cuda::ApplyRope(*active_, freq, pos, heads, x), "ApplyRope");
}

void CudaBackend::WriteRows(const Tensor& rows,
                            absl::Span<const int32_t> positions,
                            Tensor* cache) {
  uint64_t sig = MixTensor(MixTensor(kOpWriteRows, rows), *cache);
  const int32_t* pos = StageIndices(positions, &sig);
  if (!Op(sig)) return;
  Check(WriteCacheRows(*active_, rows, pos, cache), "WriteRows");
}

DeviceAttentionArgs CudaBackend::DeviceArgs(const AttentionArgs& args,
                                            uint64_t* sig) {
  *sig = MixTensor(MixTensor(MixTensor(MixTensor(*sig, *args.q), *args.k_cache),
                             *args.v_cache),
                   *args.out);
  *sig = Mix(Mix(Mix(*sig, args.num_heads), args.num_kv_heads), args.head_dim);
  *sig = MixDouble(*sig, args.scale);
  DeviceAttentionArgs d;
  d.q = args.q;
  d.k_cache = args.k_cache;
  d.v_cache = args.v_cache;
  d.positions = StageIndices(args.query_positions, sig);
  d.num_heads = args.num_heads;
  d.num_kv_heads = args.num_kv_heads;
  d.head_dim = args.head_dim;
  d.scale = args.scale;
  d.out = args.out;
  d.decode_chunk_keys = options_.decode_chunk_keys;
  return d;
}

void CudaBackend::LaunchDecodeAttention(DeviceAttentionArgs& d, uint64_t sig,
                                        const char* op,
                                        const DecodeNewRow* new_row) {
  Tensor scratch = Allocate(DType::kF32, {DecodeAttentionScratchFloats(d)});
  if (options_.fused_ops &&
      DecodeAttentionCounters(d) <= kAttentionCounterInts) {
    d.counters = attention_counters_.data<int32_t>();
  }
  d.cluster_merge = options_.cluster_decode_attention;
  d.early_kv_loads = options_.early_kv_loads;
  sig = Mix(MixTensor(sig, scratch), d.counters != nullptr);
  if (!Op(sig)) return;
  Check(new_row != nullptr
            ? DecodeAttentionWithNewRow(*active_, d, *new_row,
                                        scratch.data<float>())
            : DecodeAttention(*active_, d, scratch.data<float>()),
        op);
}

bool CudaBackend::TensorCoreDecodeAttention(int64_t num_keys) const {
  const int64_t from = options_.tensor_core_decode_attention_keys;
  return from > 0 && num_keys >= from;
}

void CudaBackend::Attention(const AttentionArgs& args) {
  const int64_t n = args.q->dim(0);
  uint64_t sig = kOpAttention;
  DeviceAttentionArgs d = DeviceArgs(args, &sig);
  if (!args.key_positions.empty()) {  // Token pruning: the live keys only.
    if (!EagerOnly()) return;
    d.key_rows = StageIndices(args.key_positions, &sig);
    d.num_keys = args.num_keys;
  }
  // Keyed rows from tensor_core_keyed_attention_rows on, and dense decode
  // rows over long caches, take the tensor-core split kernels even where
  // the decode kernel could.
  const bool keyed_tensor_cores =
      !args.key_positions.empty() &&
      n >= options_.tensor_core_keyed_attention_rows;
  const bool dense_tensor_cores = args.key_positions.empty() && n <= 8 &&
                                  TensorCoreDecodeAttention(args.num_keys);
  if (dense_tensor_cores && !EagerStep()) return;
  if (n <= 8 && !keyed_tensor_cores && !dense_tensor_cores) {
    // Split-K decode; the grid depends only on the cache capacity, so the
    // captured graph stays valid as the sequence grows.
    LaunchDecodeAttention(d, sig, "Attention");
    return;
  }
  d.tensor_cores = dense_tensor_cores ||
                   n >= (args.key_positions.empty()
                             ? options_.tensor_core_attention_rows
                             : options_.tensor_core_keyed_attention_rows);
  const bool pipelined = options_.pipelined_split_attention && d.tensor_cores &&
                         PipelinedSplitSupported(args.head_dim);
  // The ring counts only the blocks whose split holds keys their rows see
  // (pipelined_split_plan.h).
  int64_t key_splits = 1;
  if (options_.split_prefill_attention && pipelined) {
    key_splits = PipelinedSplitCount(
        PipelinedTileKeys(args.query_positions, args.key_positions,
                          args.num_keys),
        args.num_heads, args.num_keys, ctx_->sm_count());
  } else if (options_.split_prefill_attention) {
    key_splits =
        PrefillKeySplits(n, args.num_heads, args.num_keys, ctx_->sm_count());
  }
  // The flash kernel has no key split: a few revived rows over many keys
  // (tensor cores from tensor_core_keyed_attention_rows) take the split
  // kernels instead. Full prefills keep it whatever their grid.
  constexpr int64_t kFlashAnyGridRows = 256;
  if (d.tensor_cores && options_.flash_prefill_attention &&
      (key_splits == 1 || n >= kFlashAnyGridRows) && FlashPrefillSupported(d)) {
    const int64_t bytes = FlashPrefillScratchBytes(d, args.num_keys);
    Tensor scratch = Allocate(DType::kF16, {std::max<int64_t>(1, bytes / 2)});
    const FlashPrefillConfig config = options_.flash_prefill_config;
    if (!Op(Mix(
            MixTensor(Mix(sig, args.num_keys), scratch),
            static_cast<uint64_t>(config.warps * 10 + config.min_blocks)))) {
      return;
    }
    Check(FlashPrefillAttention(*active_, d, args.num_keys, scratch.raw_data(),
                                config),
          "Attention");
    return;
  }
  Tensor split_scratch;
  d.key_splits = key_splits;
  d.pipelined_splits = pipelined;
  if (d.key_splits > 1) {
    split_scratch = Allocate(DType::kF32, {PrefillSplitScratchFloats(d)});
    d.split_scratch = split_scratch.data<float>();
  }
  if (!Op(Mix(Mix(Mix(Mix(sig, args.num_keys), d.tensor_cores),
                  static_cast<uint64_t>(d.key_splits)),
              d.pipelined_splits))) {
    return;
  }
  Check(PrefillAttention(*active_, d, args.num_keys), "Attention");
}

void CudaBackend::RopeWriteKv(const RopeTable& rope,
                              absl::Span<const int32_t> positions,
                              int64_t num_heads, int64_t num_kv_heads,
                              Tensor* q, Tensor* k, const Tensor& v,
                              Tensor* k_cache, Tensor* v_cache) {
  if (!options_.fused_ops) {
    Backend::RopeWriteKv(rope, positions, num_heads, num_kv_heads, q, k, v,
                         k_cache, v_cache);
    return;
  }
  const Tensor none;
  const Tensor& freq = rope.enabled() ? RopeFrequencies(rope) : none;
  uint64_t sig = MixTensor(MixTensor(kOpRopeWriteKv, *q), *k);
  sig = MixTensor(MixTensor(MixTensor(MixTensor(sig, v), *k_cache), *v_cache),
                  freq);
  sig = Mix(Mix(sig, static_cast<uint64_t>(num_heads)),
            static_cast<uint64_t>(num_kv_heads));
  const Tensor pos = StagedTensor(positions, &sig);
  if (!Op(sig)) return;
  const int64_t head_dim = num_kv_heads > 0 ? k->dim(1) / num_kv_heads : 0;
  Check(cuda::RopeWriteKv(*active_, freq, pos, num_heads, num_kv_heads,
                          head_dim, q, k, v, k_cache, v_cache),
        "RopeWriteKv");
}

void CudaBackend::RopeWriteKvAttention(const RopeTable& rope, Tensor* q,
                                       Tensor* k, const Tensor& v,
                                       Tensor* k_cache, Tensor* v_cache,
                                       const AttentionArgs& args) {
  // One kernel for one new row attending to the whole cache (Session's
  // plain decode); everything else takes the two ops.
  const bool one_row = q->rank() == 2 && q->dim(0) == 1 &&
                       args.query_positions.size() == 1 &&
                       args.key_positions.empty() &&
                       args.num_keys == args.query_positions[0] + 1;
  const int64_t max_keys = options_.fused_decode_attention_max_keys;
  const bool short_cache = max_keys <= 0 || k_cache->dim(0) <= max_keys;
  if (!options_.fused_ops || !options_.fused_decode_attention || !one_row ||
      !short_cache || TensorCoreDecodeAttention(args.num_keys) || args.q != q ||
      args.k_cache != k_cache || args.v_cache != v_cache) {
    Backend::RopeWriteKvAttention(rope, q, k, v, k_cache, v_cache, args);
    return;
  }
  const Tensor none;
  const Tensor& freq = rope.enabled() ? RopeFrequencies(rope) : none;
  uint64_t sig = kOpRopeWriteKvAttention;
  DeviceAttentionArgs d = DeviceArgs(args, &sig);
  sig = MixTensor(MixTensor(MixTensor(sig, *k), v), freq);
  DecodeNewRow row;
  row.inv_freq = &freq;
  row.k = k;
  row.v = &v;
  row.k_cache = k_cache;
  row.v_cache = v_cache;
  LaunchDecodeAttention(d, sig, "RopeWriteKvAttention", &row);
}

}  // namespace dynsparse::cuda
