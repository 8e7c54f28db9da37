#include "experiments/metrics/sample_stats.h"

#include <algorithm>
#include <cmath>

namespace dynsparse {

std::pair<double, double> MeanStderr(const std::vector<double>& x) {
  const double n = static_cast<double>(x.size());
  if (x.empty()) return {0.0, 0.0};
  double mean = 0;
  for (double v : x) mean += v;
  mean /= n;
  if (x.size() < 2) return {mean, 0.0};
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  return {mean, std::sqrt(ss / (n - 1)) / std::sqrt(n)};
}

std::pair<double, double> WilsonInterval(int64_t successes, int64_t trials,
                                         double z) {
  if (trials <= 0) return {0.0, 1.0};
  const double n = static_cast<double>(trials);
  const double p = static_cast<double>(successes) / n;
  const double z2 = z * z;
  const double center = (p + z2 / (2 * n)) / (1 + z2 / n);
  const double half =
      z / (1 + z2 / n) * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n));
  // At 0 or n successes a bound is exactly the end of [0, 1].
  return {successes <= 0 ? 0.0 : std::max(0.0, center - half),
          successes >= trials ? 1.0 : std::min(1.0, center + half)};
}

}  // namespace dynsparse
