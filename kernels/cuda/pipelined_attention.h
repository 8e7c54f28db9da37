// Few query rows over many cached keys on tensor cores, for the attention of
// a LazyLLM decode step's revived rows (9-256 rows against every cached key
// with keys=cached). PrefillAttention (attention.h) calls it for split,
// tensor-core prefills when DeviceAttentionArgs::pipelined_splits is set.
//
// Why a kernel of its own: the split prefill kernel stages each 64-key tile
// with plain loads and then computes on it, so HBM idles while its two or
// three blocks per SM compute, and the f32 cache ran at about half the
// bandwidth a one-row decode reaches (h200_run71: 60-120 us a layer more than
// the same rows over a quarter of the keys). Here cp.async streams 32-key
// stages of K and V into a three-stage ring, so loads for the next tiles are
// in flight during the mma work. The stages hold the cache's elements as
// they are (no second staging pass): an f32 cache's are packed to f16
// fragments by the warps, an f16 cache's go to the tensor cores unchanged.
//
// Output: one partial per (row, head, split) in the layout of DecodeAttention's
// chunk entries (max, sum, then head_dim weighted values), which
// PrefillAttention's combine kernel merges.
#ifndef DYNSPARSE_KERNELS_CUDA_PIPELINED_ATTENTION_H_
#define DYNSPARSE_KERNELS_CUDA_PIPELINED_ATTENTION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/pipelined_split_plan.h"  // the splits to ask for

namespace dynsparse::cuda {

struct PipelinedSplitArgs {
  const float* q = nullptr;  // [n, heads * head_dim]
  const void* k = nullptr;   // [capacity, kv_heads * head_dim], f32 or f16
  const void* v = nullptr;
  bool kv_half = false;                // k and v are f16 (__half), else f32
  const int32_t* positions = nullptr;  // device i32 [n]
  // Ascending cache rows of the keys (device i32 [max_keys]); null: key j is
  // cache row j. Key j is visible to row i iff its row <= positions[i].
  const int32_t* key_rows = nullptr;
  float* partials = nullptr;  // [n, heads, splits, head_dim + 2]
  int n = 0;
  int heads = 0;
  int group = 1;       // query heads per kv head
  int head_dim = 0;    // 64 or 128
  int max_keys = 0;    // keys of the list (or cache rows) any row may see
  int splits = 1;      // blocks along the keys; split s covers keys
  int split_keys = 0;  // [s * split_keys, (s + 1) * split_keys), a multiple
                       // of kPipelinedStageKeys
  float scale = 1.0f;
};

// True for the head dims the kernel is built for.
inline bool PipelinedSplitSupported(int64_t head_dim) {
  return head_dim == 64 || head_dim == 128;
}

// Writes every (row, head, split) partial; q, k, v 16-byte aligned.
absl::Status PipelinedSplitAttention(DeviceContext& ctx,
                                     const PipelinedSplitArgs& args);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_PIPELINED_ATTENTION_H_
