// Rotary position embedding tables with HF's scaling variants.
#ifndef DYNSPARSE_CORE_GRAPH_ROPE_H_
#define DYNSPARSE_CORE_GRAPH_ROPE_H_

#include <cstdint>
#include <vector>

#include "core/model_config.h"

namespace dynsparse {

// HF "rotate_half" convention: dimension i of a head pairs with i + head_dim/2
// and rotates by angle position * inv_freq[i].
struct RopeTable {
  int64_t head_dim = 0;
  std::vector<double> inv_freq;  // head_dim / 2 entries, scaling applied

  bool enabled() const { return head_dim > 0; }
};

// Builds inv_freq = theta^(-2i/d), then applies linear or llama3 scaling
// exactly as transformers' rope initialisation functions define them.
RopeTable MakeRopeTable(const ModelConfig& config);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_ROPE_H_
