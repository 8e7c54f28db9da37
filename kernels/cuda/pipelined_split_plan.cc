#include "kernels/cuda/pipelined_split_plan.h"

#include <algorithm>

namespace dynsparse::cuda {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Splits shorter than this leave a block too little to pipeline.
constexpr int64_t kMinSplitKeys = 128;

}  // namespace

int64_t PipelinedTileRows(int64_t rows) {
  return rows <= 16 ? 16 : rows <= 32 ? 32 : 64;
}

std::vector<int64_t> PipelinedTileKeys(absl::Span<const int32_t> positions,
                                       absl::Span<const int32_t> key_rows,
                                       int64_t max_keys) {
  const int64_t n = static_cast<int64_t>(positions.size());
  const int64_t tile = PipelinedTileRows(n);
  const int64_t listed =
      std::min<int64_t>(max_keys, static_cast<int64_t>(key_rows.size()));
  std::vector<int64_t> keys;
  keys.reserve(static_cast<size_t>(CeilDiv(n, tile)));
  for (int64_t first = 0; first < n; first += tile) {
    const auto rows = positions.subspan(first, std::min(tile, n - first));
    const int64_t last = *std::max_element(rows.begin(), rows.end());
    keys.push_back(key_rows.empty()
                       ? std::clamp<int64_t>(last + 1, 0, max_keys)
                       : std::upper_bound(key_rows.begin(),
                                          key_rows.begin() + listed, last) -
                             key_rows.begin());
  }
  return keys;
}

int64_t KeySplitSpan(int64_t max_keys, int64_t splits) {
  return CeilDiv(CeilDiv(max_keys, splits), kPipelinedStageKeys) *
         kPipelinedStageKeys;
}

int64_t PipelinedSplitCount(absl::Span<const int64_t> tile_keys, int64_t heads,
                            int64_t max_keys, int sm_count) {
  const int64_t resident = int64_t{2} * sm_count;
  // Every tile has a block even when it sees no key.
  const int64_t tiles = static_cast<int64_t>(tile_keys.size());
  if (tiles == 0 || tiles * heads >= resident) return 1;
  for (int64_t splits = CeilDiv(max_keys, kMinSplitKeys); splits > 1;
       --splits) {
    const int64_t span = KeySplitSpan(max_keys, splits);
    int64_t blocks = 0;
    for (const int64_t keys : tile_keys) {
      blocks += std::max<int64_t>(1, CeilDiv(std::min(keys, max_keys), span));
    }
    if (blocks * heads <= resident) return splits;
  }
  return 1;
}

}  // namespace dynsparse::cuda
