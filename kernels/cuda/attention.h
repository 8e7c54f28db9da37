// Causal attention over a KV cache on CUDA, GQA aware, f32 activations.
// The cache is f32 or f16 (CudaBackend's default, kv_access.cuh): the
// kernels convert its elements to f32 where they load them, so an f16 cache
// gives the f32 results of its rounded values.
//
// Both kernels take the query positions from device memory, never from host
// arguments, so a decode step can be captured in a CUDA graph once and
// replayed as the sequence grows: key j is visible to query row i iff
// j <= positions[i], and the grid covers the cache's whole capacity.
//
// - PrefillAttention: flash-style tiling (64 queries x 32 keys per step,
//   online softmax in f32); the n x n score matrix never exists. Optionally
//   on tensor cores (mma.sync, f16 operands) for long prompts.
//   With key_splits, few query rows over many keys also split the keys
//   over blocks (flash-decoding style partials, merged by a second kernel).
// - DecodeAttention (flash-decoding): the keys are split into chunks of 64
//   (or 16 / 32, decode_chunk_keys),
//   one block per (chunk, head, row) writes a partial (max, sum, weighted
//   values) and a second kernel (or the last block, with counters) merges
//   the chunks. For a few query rows. DecodeAttentionWithNewRow also does a
//   decode step's prologue (RoPE of q and k, the KV-cache write) in the same
//   launch.
#ifndef DYNSPARSE_KERNELS_CUDA_ATTENTION_H_
#define DYNSPARSE_KERNELS_CUDA_ATTENTION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

inline constexpr int64_t kMaxAttentionHeadDim = 256;
inline constexpr int64_t kDecodeKeysPerChunk = 64;

struct DeviceAttentionArgs {
  const Tensor* q = nullptr;  // f32 [n, heads * head_dim]
  // f32 or f16 [capacity, kv_heads * head_dim], both the same dtype.
  const Tensor* k_cache = nullptr;
  const Tensor* v_cache = nullptr;
  const int32_t* positions = nullptr;  // device i32 [n]
  // Token pruning (LazyLLM): the keys are the cache rows key_rows[0..
  // num_keys), device i32, ascending; each row sits at its own position and
  // is visible to query i iff key_rows[j] <= positions[i]. Null: every row.
  const int32_t* key_rows = nullptr;
  int64_t num_keys = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;  // <= kMaxAttentionHeadDim
  float scale = 1.0f;
  Tensor* out = nullptr;  // f32 [n, heads * head_dim]
  // Prefill only: run the tensor-core kernel (q, k, v rounded to f16; an f16
  // cache's k and v as they are; scores and softmax in f32) when head_dim is
  // 64 or 128; relative error ~1e-3 instead of ~1e-6.
  bool tensor_cores = false;
  // Prefill only: split the keys over up to `key_splits` blocks per (64-row
  // query tile, head), for a few query rows over many keys (token steps that
  // revive rows: one block per head would leave most SMs idle). Each block
  // writes a partial like a DecodeAttention chunk into `split_scratch`
  // (PrefillSplitScratchFloats floats) and a second kernel merges them.
  int64_t key_splits = 1;
  float* split_scratch = nullptr;
  // With tensor_cores and key splits: stream the keys through a cp.async
  // ring (pipelined_attention.h) instead of staging each tile and then
  // computing on it; same roundings, other summation order.
  bool pipelined_splits = false;
  // Decode only: DecodeAttentionCounters(args) device ints, zero, which the
  // kernel leaves zero. With them the last block of each (row, head) merges
  // the key chunks in the same launch (one kernel instead of two, same
  // values); without them a second kernel merges.
  int32_t* counters = nullptr;
  // Decode only: where a (row, head) has at most 8 chunks of 64 keys (caches
  // of up to 512 rows), head_dim 65..128, no head ids or key list, sm_90
  // (DecodeClusterMergeApplies), the chunks run as one cluster and merge
  // through distributed shared memory (scratch and counters unused); other
  // decodes ignore it. Other summation order than the global merge.
  bool cluster_merge = false;
  // Decode with a fused new row (DecodeAttentionWithNewRow), no head ids or
  // key list, programmatic dependent launch: the cached keys and values are
  // loaded before the kernel waits for the one that writes q, k and v.
  bool early_kv_loads = false;
  // Decode only, head-subset attention (DejaVu): q and out hold num_heads
  // compact heads; compact head j of row r is query head
  // head_ids[r * num_heads + j], reading kv head head_ids / head_group.
  // num_kv_heads is the cache's kv head count.
  const int32_t* head_ids = nullptr;
  int64_t head_group = 0;
  // Decode only: keys per chunk (one block each), 16, 32 or 64; shorter
  // chunks only for head_dim 65..128, else 64 (DecodeChunkKeys); an f16
  // cache of more than 2048 rows and head_dim <= 128 takes 128-key chunks
  // for 64.
  int64_t decode_chunk_keys = kDecodeKeysPerChunk;
};

// `max_keys` bounds the keys any row may see (<= capacity); prefill only,
// since it sizes the loop, not the grid.
absl::Status PrefillAttention(DeviceContext& ctx,
                              const DeviceAttentionArgs& args,
                              int64_t max_keys);

// Key splits that fill `sm_count` SMs about twice for a prefill of `rows`
// query rows over `max_keys` keys; 1 when the (tile, head) grid alone does.
int64_t PrefillKeySplits(int64_t rows, int64_t heads, int64_t max_keys,
                         int sm_count);
// Floats of split_scratch a prefill with args.key_splits needs.
int64_t PrefillSplitScratchFloats(const DeviceAttentionArgs& args);

// The keys per decode chunk these arguments run with.
int64_t DecodeChunkKeys(const DeviceAttentionArgs& args);
// Whether a decode with these arguments merges its chunks in a cluster
// (DeviceAttentionArgs::cluster_merge asked for, and it applies).
bool DecodeClusterMergeApplies(const DeviceContext& ctx,
                               const DeviceAttentionArgs& args);
// Floats of scratch DecodeAttention needs for these arguments.
int64_t DecodeAttentionScratchFloats(const DeviceAttentionArgs& args);
// Ints of DeviceAttentionArgs::counters these arguments need (rows x heads).
inline int64_t DecodeAttentionCounters(const DeviceAttentionArgs& args) {
  return (args.q == nullptr ? 0 : args.q->dim(0)) * args.num_heads;
}
// `scratch` is a device f32 buffer of DecodeAttentionScratchFloats(args).
// With a key list the grid covers args.num_keys keys, not the capacity.
absl::Status DecodeAttention(DeviceContext& ctx,
                             const DeviceAttentionArgs& args, float* scratch);

// The new row of a decode step, as RopeWriteKv (rope.h) takes it.
struct DecodeNewRow {
  const Tensor* inv_freq = nullptr;  // f32 [head_dim / 2]; null/empty: no RoPE
  const Tensor* k = nullptr;  // f32 [1, kv_heads * head_dim], before RoPE
  const Tensor* v = nullptr;  // f32 [1, kv_heads * head_dim]
  Tensor* k_cache = nullptr;  // args.k_cache and args.v_cache, written at
  Tensor* v_cache = nullptr;  // row positions[0] (f16: rounded to nearest)
};
// RopeWriteKv followed by DecodeAttention in one launch, for one query row
// (args.q, before RoPE) without key list or head ids: every block rotates its
// q head itself, and the new key is read from registers where it is needed,
// so no block waits for the cache write (one block per kv head does it).
// q and k stay unrotated in memory; the output and the cache rows are
// bit-identical to the unfused ops (on an f16 cache the attention uses the
// new key and value as rounded into the cache, as the unfused decode reads
// them).
absl::Status DecodeAttentionWithNewRow(DeviceContext& ctx,
                                       const DeviceAttentionArgs& args,
                                       const DecodeNewRow& row, float* scratch);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_ATTENTION_H_
