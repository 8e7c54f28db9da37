#include "kernels/cuda/gemv_split_plan.h"

#include <algorithm>
#include <cmath>

namespace dynsparse::cuda {

int64_t WaveFillingSplits(int64_t blocks, int64_t resident,
                          int64_t max_splits) {
  if (blocks <= 0 || resident <= 0) return 1;
  int64_t best = 1;
  double best_fill = 0.0;
  for (int64_t s = 1; s <= std::min<int64_t>(max_splits, 8); ++s) {
    const double waves =
        static_cast<double>(blocks * s) / static_cast<double>(resident);
    const double fill = waves / std::ceil(waves);
    if (fill >= 0.9) return s;
    if (fill > best_fill + 1e-9) {
      best = s;
      best_fill = fill;
    }
  }
  return best;
}

}  // namespace dynsparse::cuda
