// How PipelinedSplitAttention (pipelined_attention.h) divides a call: query
// rows into tiles of one block each, keys into splits. Plain C++ (no CUDA),
// so that CI tests the choice on machines without nvcc or a GPU.
#ifndef DYNSPARSE_KERNELS_CUDA_PIPELINED_SPLIT_PLAN_H_
#define DYNSPARSE_KERNELS_CUDA_PIPELINED_SPLIT_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace dynsparse::cuda {

// split_keys must be a multiple of it: the longest pipeline stage, in keys.
inline constexpr int kPipelinedStageKeys = 64;

// Query rows per block for a call of `rows` rows: 16 (the block's four warps
// split each stage's keys four ways), 32 (two ways) or 64 (a warp per 16
// rows).
int64_t PipelinedTileRows(int64_t rows);

// The keys each tile of `positions` (one per query row, in call order) may
// see: those among the first `max_keys` at or before the tile's largest
// position. A key is cache row key_rows[j], or row j when key_rows is empty
// (then key j sits at position j); key_rows is ascending.
std::vector<int64_t> PipelinedTileKeys(absl::Span<const int32_t> positions,
                                       absl::Span<const int32_t> key_rows,
                                       int64_t max_keys);

// Keys per split when `max_keys` keys go to `splits` splits: whole 64-key
// tiles, as both split attention kernels (attention.cu) walk them.
int64_t KeySplitSpan(int64_t max_keys, int64_t splits);

// Key splits (of at least 128 keys) for tiles that see tile_keys[t] keys,
// `heads` heads each: the most splits whose blocks fit one wave of two
// blocks an SM, counting only blocks whose split holds keys their tile sees
// (the others exit at once). 1 when the tiles alone fill the wave. One wave
// exactly, since a block more than the SMs hold runs alone after the rest
// (h200_run73: 9 splits of 32 tiles took 297 us, 8 took 191). With causal
// rows spread over the keys, as a LazyLLM step's revived rows are, the
// early tiles need fewer blocks, so the splits get shorter than an even
// division would make them.
int64_t PipelinedSplitCount(absl::Span<const int64_t> tile_keys, int64_t heads,
                            int64_t max_keys, int sm_count);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_PIPELINED_SPLIT_PLAN_H_
