#include "core/graph/top_count.h"

#include <algorithm>
#include <functional>

namespace dynsparse {

std::vector<int32_t> TopCountIndices(absl::Span<const float> scores,
                                     int64_t count) {
  const int64_t n = static_cast<int64_t>(scores.size());
  std::vector<int32_t> chosen;
  chosen.reserve(static_cast<size_t>(std::max<int64_t>(count, 0)));
  if (count <= 0) return chosen;
  if (count >= n) {
    for (int32_t i = 0; i < static_cast<int32_t>(n); ++i) chosen.push_back(i);
    return chosen;
  }
  // The count-th highest value by a selection over a copy (no sort, no
  // indirection through indices), then one ascending pass takes every score
  // above it and the earliest of those equal to it.
  std::vector<float> values(scores.begin(), scores.end());
  std::nth_element(values.begin(), values.begin() + (count - 1), values.end(),
                   std::greater<float>());
  const float threshold = values[static_cast<size_t>(count - 1)];
  int64_t above = 0;
  for (const float s : scores) above += s > threshold;
  int64_t equal_left = count - above;
  for (int32_t i = 0; i < static_cast<int32_t>(n); ++i) {
    if (scores[i] > threshold || (scores[i] == threshold && equal_left-- > 0)) {
      chosen.push_back(i);
    }
  }
  return chosen;
}

}  // namespace dynsparse
