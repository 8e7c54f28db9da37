// HF `tokenizers` pattern matching and SplitDelimiterBehavior: how a string
// is cut around the matches of a pattern (Pattern::find_matches +
// NormalizedString::split).
#ifndef DYNSPARSE_CORE_TOKENIZER_TEXT_SPLIT_H_
#define DYNSPARSE_CORE_TOKENIZER_TEXT_SPLIT_H_

#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "core/tokenizer/pieces.h"

namespace dynsparse::tok {

// A run of the input that is (or is not) a match; segments cover the input.
struct Segment {
  size_t start = 0;
  size_t end = 0;
  bool is_match = false;
};

enum class SplitBehavior {
  kRemoved,
  kIsolated,
  kMergedWithPrevious,
  kMergedWithNext,
  kContiguous,
};

// Segments for sorted, non-overlapping `matches` in a text of `size` bytes.
std::vector<Segment> SegmentsFromMatches(size_t size,
                                         const std::vector<ByteRange>& matches);

// Every char for which `pred` holds is a match of its own.
std::vector<Segment> SegmentsByChar(std::string_view text,
                                    absl::FunctionRef<bool(char32_t)> pred);

// Non-overlapping, leftmost occurrences of a literal string. An empty
// pattern matches nothing.
std::vector<Segment> SegmentsBySubstring(std::string_view text,
                                         std::string_view pattern);

void InvertSegments(std::vector<Segment>* segments);

// The byte ranges to keep after applying `behavior` to `segments`.
std::vector<ByteRange> ApplySplitBehavior(const std::vector<Segment>& segments,
                                          SplitBehavior behavior);

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_TEXT_SPLIT_H_
