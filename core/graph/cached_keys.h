// The attention keys of Method::AttendsToCachedTokens (LazyLLM keys=cached):
// at layer l, the live tokens T_l plus every token an earlier step left K/V
// for at l. The lists of the layers up to the next selection are built
// together and handed to Backend::StageAhead at once: a backend that copies
// indices to its device then copies them where the step already waits for
// the selection, instead of between each layer's RoPE and its attention
// (where the copy keeps the attention from starting under the RoPE kernel).
#ifndef DYNSPARSE_CORE_GRAPH_CACHED_KEYS_H_
#define DYNSPARSE_CORE_GRAPH_CACHED_KEYS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/types/span.h"

namespace dynsparse {

class CachedKeys {
 public:
  // Presence flags of a layer's positions (TokenState::present_row).
  using PresentRow = std::function<const uint8_t*(int64_t layer)>;

  // Layers [first, last) with `live` as their live set (ascending) over
  // positions below `end`. A layer's K/V presence must not change between
  // this call and its Keys() except for rows of `live`.
  void Build(int64_t first, int64_t last, absl::Span<const int32_t> live,
             int32_t end, const PresentRow& present);
  // True when Build covered `layer` and nothing invalidated it since.
  bool Covers(int64_t layer) const {
    return layer >= first_ && layer < first_ + num_layers();
  }
  // Layer `layer`'s keys; empty when they are every position below `end`.
  absl::Span<const int32_t> Keys(int64_t layer) const;
  // Every list Build made, one after another.
  absl::Span<const int32_t> all() const { return all_; }
  void Clear();

 private:
  int64_t num_layers() const {
    return static_cast<int64_t>(offsets_.size()) - 1;
  }

  int64_t first_ = 0;
  int32_t end_ = 0;
  std::vector<int32_t> all_;
  std::vector<size_t> offsets_;  // Layer first_ + i: [offsets_[i], [i + 1]).
  std::vector<uint8_t> mask_;    // Build's scratch.
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_CACHED_KEYS_H_
