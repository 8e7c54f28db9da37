// CUDA kernels of sparse execution (DejaVu, core/graph/sparse_blocks.h):
// top-K and unit norms for predictors and the oracle, gather GEMVs over kept
// neurons and heads, and lazy K/V completion. Every index argument is device
// memory and no kernel takes a data-dependent size from the host, so a
// sparse decode step is captured and replayed as one CUDA graph.
#ifndef DYNSPARSE_KERNELS_CUDA_SPARSE_OPS_H_
#define DYNSPARSE_KERNELS_CUDA_SPARSE_OPS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/model_config.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

// ids[r, :] = the k largest of scores[r, :] (f32 [rows, n]), ascending by id,
// ties to the lower id (as Backend::TopK). Rows of up to 256 scores by
// pairwise ranks in one block, longer ones by a histogram over equal-width
// value bins of the row's range, an exact select inside the threshold bin
// and an ordered compaction (topk.cu): in one block a row, or with
// `cluster` (sm_90, rows of >= 4096 scores) in a cluster of 8 blocks
// sharing the row, with the same result.
absl::Status TopKRows(DeviceContext& ctx, const Tensor& scores, int64_t k,
                      Tensor* ids, bool cluster = true);
// norms[r, u] = L2 norm of x[r, u * uw, (u + 1) * uw) (double accumulation).
absl::Status UnitNormsRows(DeviceContext& ctx, const Tensor& x,
                           int64_t unit_width, Tensor* norms);

// y[r, j * uw + i] = act(x[r] . w[ids[r, j] * uw + i] + bias) (Backend::
// GatherLinear); with w_gate: y = act(x . w_gate[id] + b_gate) * (x . w[id]
// + bias) (unit width 1). A warp per output, 16-byte weight loads.
absl::Status GatherGemv(DeviceContext& ctx, const Tensor& x, const Tensor& w,
                        const Tensor& bias, const Tensor* w_gate,
                        const Tensor* b_gate, const int32_t* ids, int64_t k,
                        int64_t unit_width, bool activate,
                        Activation activation, Tensor* y);
// Floats of scratch GatherGemvT needs (shared_ids: ids null).
int64_t GatherGemvTScratchFloats(const DeviceContext& ctx, int64_t rows,
                                 int64_t k, int64_t out, bool shared_ids);
// y[r, :] = sum_j x[r, j] w_t[ids[r, j], :] + bias (ids null: unit j).
// Split over the kept rows (partials in `scratch`), then a reduction. With
// ids null a block serves 8 rows of x per weight read (prefill).
absl::Status GatherGemvT(DeviceContext& ctx, const Tensor& x, const Tensor& w_t,
                         const Tensor& bias, const int32_t* ids, int64_t k,
                         float* scratch, Tensor* y);
// y[r, :] = sum_s partial[r, s, :] + bias, the splits added in a fixed order
// (GatherGemvT's second launch; FusedSparseMlp's too).
absl::Status ReduceSplits(DeviceContext& ctx, const float* partial, int splits,
                          int64_t out, int64_t rows, const Tensor& bias,
                          Tensor* y);
// y[r, o] = sum_j x[r, j*uw..] . w[o, ids[r, j]*uw..] + bias[o].
// A warp computes 1, 2 or 4 output rows: rows_per_warp 0 picks the fewest
// whose warps all fit on the GPU at once (a partial second wave of blocks
// left the SMs idle; more rows a warp lengthen each warp's chain of loads).
absl::Status GatherColumnsGemv(DeviceContext& ctx, const Tensor& x,
                               const Tensor& w, const Tensor& bias,
                               const int32_t* ids, int64_t k,
                               int64_t unit_width, Tensor* y,
                               int rows_per_warp = 0);
// y[r, j*uw + i] = x[r, ids[r, j]*uw + i].
absl::Status GatherColumnsCopy(DeviceContext& ctx, const Tensor& x,
                               const int32_t* ids, int64_t k,
                               int64_t unit_width, Tensor* y);
// w_t = w^T ([out, in] -> [in, out], same dtype).
absl::Status TransposeMatrix(DeviceContext& ctx, const Tensor& w, Tensor* w_t);

struct DeviceLazyKvArgs {
  const float* h = nullptr;           // [hidden] or null (flush only)
  const int32_t* head_ids = nullptr;  // [k] query heads (null when flushing)
  int64_t k = 0;
  const int32_t* step = nullptr;  // device {position, slot, flush}
  float* ring_x = nullptr;        // [slots, hidden]
  int32_t* ring_pos = nullptr;    // [slots]
  int32_t* pending = nullptr;     // [slots, kv_heads]
  int64_t slots = 0;
  const Tensor* wk = nullptr;
  const Tensor* wv = nullptr;
  const Tensor* bk = nullptr;
  const Tensor* bv = nullptr;
  const float* inv_freq = nullptr;  // [head_dim / 2] or null (no RoPE)
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0, hidden = 0;
  // f32 or f16 (both the same) [capacity, kv_heads * head_dim]; f16 rows
  // hold the f32 results rounded to nearest once.
  Tensor* k_cache = nullptr;
  Tensor* v_cache = nullptr;
  // f16 weights (head_dim % 16 == 0, hidden % 256 == 0): K/V on tensor
  // cores, up to 8 tokens a weight read (lazy_kv_mma.cu). Otherwise, and
  // when false, on CUDA cores, where a warp computes rows_per_warp rows of
  // W_K / W_V: 2 or 4 (0: 2, lazy_kv.cu says why).
  bool tensor_cores = true;
  int rows_per_warp = 0;
  // Tensor cores: blocks an SM holds (3, or 2 with more loads in flight
  // when a head owes 9-16 tokens; 0 picks; lazy_kv_mma.cu).
  int mma_blocks_per_sm = 0;
};
// Backend::LazyKv: K/V of pending ring slots for active kv heads (one
// kernel), then RoPE of those K rows (f32 caches; an f16 cache gets its K
// rotated before the one rounding store) and the ring bookkeeping (a second).
absl::Status LazyKvDevice(DeviceContext& ctx, const DeviceLazyKvArgs& args);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_SPARSE_OPS_H_
