#include "core/tokenizer/text_split.h"

#include <algorithm>

#include "core/tokenizer/utf8.h"

namespace dynsparse::tok {

std::vector<Segment> SegmentsFromMatches(
    size_t size, const std::vector<ByteRange>& matches) {
  std::vector<Segment> segments;
  segments.reserve(matches.size() * 2 + 1);
  size_t prev = 0;
  for (const auto& [start, end] : matches) {
    if (prev != start) segments.push_back({prev, start, false});
    segments.push_back({start, end, true});
    prev = end;
  }
  if (prev != size) segments.push_back({prev, size, false});
  return segments;
}

std::vector<Segment> SegmentsByChar(std::string_view text,
                                    absl::FunctionRef<bool(char32_t)> pred) {
  std::vector<Segment> segments;
  size_t last = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const DecodedChar c = DecodeUtf8(text, pos);
    if (pred(c.cp)) {
      if (last < pos) segments.push_back({last, pos, false});
      segments.push_back({pos, pos + c.len, true});
      last = pos + c.len;
    }
    pos += c.len;
  }
  if (last < text.size()) segments.push_back({last, text.size(), false});
  return segments;
}

std::vector<Segment> SegmentsBySubstring(std::string_view text,
                                         std::string_view pattern) {
  std::vector<ByteRange> matches;
  if (!pattern.empty()) {
    size_t pos = text.find(pattern);
    while (pos != std::string_view::npos) {
      matches.emplace_back(pos, pos + pattern.size());
      pos = text.find(pattern, pos + pattern.size());
    }
  }
  return SegmentsFromMatches(text.size(), matches);
}

void InvertSegments(std::vector<Segment>* segments) {
  for (Segment& s : *segments) s.is_match = !s.is_match;
}

std::vector<ByteRange> ApplySplitBehavior(const std::vector<Segment>& segments,
                                          SplitBehavior behavior) {
  std::vector<ByteRange> out;
  out.reserve(segments.size());
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Segment& s : segments) out.emplace_back(s.start, s.end);
      break;
    case SplitBehavior::kRemoved:
      for (const Segment& s : segments) {
        if (!s.is_match) out.emplace_back(s.start, s.end);
      }
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Segment& s : segments) {
        if (s.is_match == previous_match && !out.empty()) {
          out.back().second = s.end;
        } else {
          out.emplace_back(s.start, s.end);
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Segment& s : segments) {
        if (s.is_match && !previous_match && !out.empty()) {
          out.back().second = s.end;
        } else {
          out.emplace_back(s.start, s.end);
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      // Same as kMergedWithPrevious, walking from the end.
      bool previous_match = false;
      for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) {
          out.back().first = it->start;
        } else {
          out.emplace_back(it->start, it->end);
        }
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
  }
  return out;
}

}  // namespace dynsparse::tok
