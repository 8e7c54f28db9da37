// Token-axis ops of LazyLLM on CUDA (the CPU references are Backend::CopyRows
// and kernels/cpu/cpu_token_ops.cc). Index arguments are device i32.
// - CopyRowsDevice: dst[dst_rows[i]] = src[src_rows[i]] (compaction into the
//   rows a layer computes, Aux Cache writes and revivals).
// - LastQueryAttentionDevice: the scoring probe, one query row against a
//   key list: scores per (head, key) (a half-warp per key, 16-byte loads)
//   with each 64-key block's max and sum, then per-head max and sum from
//   those (a block per head), then the mean over heads of the probabilities.
//   O(heads x keys) scratch; the n x n matrix never exists.
#ifndef DYNSPARSE_KERNELS_CUDA_TOKEN_OPS_H_
#define DYNSPARSE_KERNELS_CUDA_TOKEN_OPS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

absl::Status CopyRowsDevice(DeviceContext& ctx, const Tensor& src,
                            const int32_t* src_rows, const int32_t* dst_rows,
                            int64_t count, Tensor* dst);

struct DeviceLastQueryArgs {
  const Tensor* q = nullptr;        // f32 [1, heads * head_dim]
  const Tensor* k_cache = nullptr;  // f32/f16 [capacity, kv_heads * head_dim]
  const int32_t* key_rows = nullptr;
  int64_t num_keys = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;
  Tensor* out = nullptr;  // f32 [num_keys]
};

// Blocks the probe's scores take per head (64 keys each).
inline int64_t ProbeScoreBlocks(int64_t num_keys) {
  return (num_keys + 63) / 64;
}
// Floats of scratch the probe needs: the scores, each score block's
// (max, sum) and each head's.
inline int64_t LastQueryScratchFloats(const DeviceLastQueryArgs& a) {
  return a.num_heads * a.num_keys +
         2 * a.num_heads * ProbeScoreBlocks(a.num_keys) + 2 * a.num_heads;
}
absl::Status LastQueryAttentionDevice(DeviceContext& ctx,
                                      const DeviceLastQueryArgs& args,
                                      float* scratch);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_TOKEN_OPS_H_
