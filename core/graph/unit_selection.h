// UnitSelection: which units (attention heads or MLP neurons) each token row
// keeps. Methods return it; the graph executes it (masked or sparse).
#ifndef DYNSPARSE_CORE_GRAPH_UNIT_SELECTION_H_
#define DYNSPARSE_CORE_GRAPH_UNIT_SELECTION_H_

#include <cstdint>
#include <vector>

namespace dynsparse {

struct UnitSelection {
  // true: every row keeps every unit (the dense fast path; no mask applied).
  bool all = true;
  // Units kept per row (K); `indices` holds rows * per_row unit ids, row-major,
  // each row's ids distinct and in [0, num_units).
  int64_t per_row = 0;
  std::vector<int32_t> indices;

  static UnitSelection All() { return UnitSelection{}; }
};

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_GRAPH_UNIT_SELECTION_H_
