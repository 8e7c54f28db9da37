// UnitSelection: which units (attention heads or MLP neurons) each token row
// keeps. Methods return it; the graph executes it (masked or sparse).
#ifndef DYNSPARSE_CORE_GRAPH_UNIT_SELECTION_H_
#define DYNSPARSE_CORE_GRAPH_UNIT_SELECTION_H_

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace dynsparse {

struct UnitSelection {
  // true: every row keeps every unit (the dense fast path; no mask applied).
  bool all = true;
  // Units kept per row (K).
  int64_t per_row = 0;
  // The kept unit ids, one of three ways (checked in this order):
  // - oracle: the graph computes the units densely and keeps, per row, the
  //   per_row of largest magnitude (heads: L2 norm of the head's output before
  //   W_O; neurons: |activation|, gated MLPs |act(gate) * up|) — DejaVu's
  //   ideal top-K, for ablations;
  // - ids: i32 [rows, per_row] on the backend's device (a predictor's TopK
  //   output; stays on the GPU so a decode step needs no host round trip);
  // - indices: host ids, rows * per_row, row-major.
  // Each row's ids are distinct and in [0, num_units).
  bool oracle = false;
  Tensor ids;
  // Backend::EndSideWork's token of the work that writes `ids` (0: none);
  // Session waits on it before any op reads them.
  int side_work = 0;
  std::vector<int32_t> indices;

  static UnitSelection All() { return UnitSelection{}; }
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_UNIT_SELECTION_H_
