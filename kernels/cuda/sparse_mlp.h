// DejaVu's sparse MLP for one decode row in one launch on sm_90 (the split
// reduction in it, or as a second launch): the up projection over the kept rows
// of W1 (+ gate) with fused bias and activation, then the transposed gather
// over the same rows of W2^T (sparse_mlp.cu). Same result as GatherGemv then
// GatherGemvT up to f32 summation order.
#ifndef DYNSPARSE_KERNELS_CUDA_SPARSE_MLP_H_
#define DYNSPARSE_KERNELS_CUDA_SPARSE_MLP_H_

#include <cstdint>
#include <initializer_list>

#include "absl/status/status.h"
#include "core/model_config.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/sparse_mlp_timeline.h"  // FusedMlpEvent

namespace dynsparse::cuda {

// FusedSparseMlp's grid: clusters of `cluster` column blocks (4, 8, 12 or 16)
// of one split each, of which `clusters` fit on the GPU at once; clusters == 0
// when the kernel does not apply. `one_block_an_sm`: each block asks for half
// an SM's shared memory, so that no two share an SM (else up to two do): half
// the blocks, other cluster sizes and splits.
struct FusedSparseMlpGrid {
  int cluster = 0;
  int clusters = 0;
  bool one_block_an_sm = false;
};
// Whether the kernel is built for clusters of `cluster` blocks (4, 8, 12, 16).
bool IsFusedSparseMlpClusterSize(int cluster);
// Kept units a split of clusters of `cluster` blocks may hold (its shared
// arrays): 256 up to 8 blocks, 32 a block above.
constexpr int FusedSparseMlpMaxSplitUnits(int cluster) {
  return cluster <= 8 ? 256 : 32 * cluster;
}
// The grid for hidden size d (cudaOccupancyMaxActiveClusters; a host query
// worth caching) with clusters of `cluster` (4, 8, 12 or 16) blocks. Empty
// when the kernel does not apply: not sm_90, f32 weights, d not a multiple
// of 512 or above 12288, another cluster size, or d / 16 threads that do not
// split into cluster / 2 equal groups (clusters of 12: d a multiple of 1536).
FusedSparseMlpGrid FusedSparseMlpClusters(const DeviceContext& ctx, int64_t d,
                                          DType dtype, bool gated,
                                          Activation activation, int cluster,
                                          bool one_block_an_sm = false);
// Splits of the kept units (one wave of the grid's clusters) for
// FusedSparseMlp, or 0 when it does not apply to these tensors: more than
// one row, unaligned data, or more kept units a split than
// FusedSparseMlpMaxSplitUnits. The caller
// then runs the two gathers. Scratch: splits * hidden floats.
int FusedSparseMlpSplits(const FusedSparseMlpGrid& grid, const Tensor& x,
                         const Tensor& w_up, const Tensor* w_gate,
                         const Tensor& w_down_t, int64_t k);

// A grid and its splits for one call; splits == 0: the two gathers.
// `early_copies`: the caller knows the ids were complete before the kernel
// ahead of this launch in the stream began (not its output), so the kernel
// reads them and starts its first weight copies before its PDL wait.
struct FusedSparseMlpLaunch {
  FusedSparseMlpGrid grid;
  int splits = 0;
  bool early_copies = false;
};
// The first of `grids` (in order of preference) whose splits hold the k
// kept units of these tensors.
FusedSparseMlpLaunch FirstFittingGrid(
    std::initializer_list<FusedSparseMlpGrid> grids, const Tensor& x,
    const Tensor& w_up, const Tensor* w_gate, const Tensor& w_down_t,
    int64_t k);

// y = act(x . w_up[ids] + b_up[ids]) (gated: act(x . w_gate[ids] + b_gate)
// * (x . w_up[ids] + b_up)) times w_down_t[ids] + b_down, for x [1, hidden].
// The launch's grid and splits come from FusedSparseMlpClusters and
// FusedSparseMlpSplits (or FirstFittingGrid): the former also opts the
// kernel into the shared memory it stages weights in (up to 96 KB a block)
// and into clusters above 8 blocks. `counters` (device, at least
// launch.grid.cluster ints, zero before the first call; each launch leaves
// them zero): the last block of each column block sums the splits in the
// launch; nullptr: a ReduceSplits launch does. No two launches may run on
// the same counters at once. A `timeline` (device, splits * cluster *
// kFusedMlpStamps) gets each block's event times and SM.
absl::Status FusedSparseMlp(
    DeviceContext& ctx, const Tensor& x, const Tensor& w_up, const Tensor& b_up,
    const Tensor* w_gate, const Tensor* b_gate, const Tensor& w_down_t,
    const Tensor& b_down, const int32_t* ids, int64_t k, Activation activation,
    const FusedSparseMlpLaunch& launch, float* scratch, int32_t* counters,
    Tensor* y, uint64_t* timeline = nullptr);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_SPARSE_MLP_H_
