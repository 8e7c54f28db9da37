// The `count` largest of a score vector, as LazyLLM keeps tokens: the
// ascending indices of every score above the count-th largest and of the
// earliest scores equal to it. Session runs it next to the scoring probe
// (Backend::TopCount, on the device where the backend can) so that the host
// downloads the chosen indices, not every score; this is the host reference
// both sides must match index for index.
#ifndef DYNSPARSE_CORE_GRAPH_TOP_COUNT_H_
#define DYNSPARSE_CORE_GRAPH_TOP_COUNT_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace dynsparse {

// Scores are finite; -0 and +0 are equal. 0 <= count <= scores.size().
std::vector<int32_t> TopCountIndices(absl::Span<const float> scores,
                                     int64_t count);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_TOP_COUNT_H_
