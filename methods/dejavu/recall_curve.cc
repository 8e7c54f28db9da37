#include "methods/dejavu/recall_curve.h"

#include <algorithm>
#include <numeric>

#include "methods/dejavu/calibration.h"
#include "methods/dejavu/labels.h"

namespace dynsparse {
namespace {

// Below this many logits a call ranks on one thread (profile adds a few
// rows at a time; a thread team would cost more than the sort).
constexpr int64_t kParallelLogits = int64_t{1} << 20;

}  // namespace

double RecallCurve::RecallAt(int64_t k) const {
  if (positives == 0) return 1.0;
  int64_t sum = 0;
  for (int64_t i = 0; i < k && i < static_cast<int64_t>(hits.size()); ++i) {
    sum += hits[i];
  }
  return double(sum) / positives;
}

double RecallCurve::PrecisionAt(int64_t k) const {
  if (rows == 0 || k == 0) return 0.0;
  int64_t sum = 0;
  for (int64_t i = 0; i < k && i < static_cast<int64_t>(hits.size()); ++i) {
    sum += hits[i];
  }
  return double(sum) / (double(rows) * k);
}

int64_t RecallCurve::KForRecall(double recall) const {
  int64_t sum = 0;
  for (size_t i = 0; i < hits.size(); ++i) {
    sum += hits[i];
    if (double(sum) >= recall * positives) return static_cast<int64_t>(i) + 1;
  }
  return static_cast<int64_t>(hits.size());
}

void AddToRecallCurve(const float* logits, const uint8_t* labels, int64_t rows,
                      int64_t units, RecallCurve* curve) {
  if (curve->hits.size() < static_cast<size_t>(units)) {
    curve->hits.resize(units, 0);
  }
  const int64_t bytes = BitmapRowBytes(units);
  // Integer counts: the sum is the same in any thread order.
#pragma omp parallel if (rows > 1 && rows * units >= kParallelLogits)
  {
    std::vector<int32_t> order(units);
    std::vector<int64_t> hits(units, 0);
    int64_t positives = 0;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* z = logits + r * units;
      const uint8_t* y = labels + r * bytes;
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [z](int32_t a, int32_t b) {
        return z[a] > z[b] || (z[a] == z[b] && a < b);
      });
      for (int64_t k = 0; k < units; ++k) {
        if (TestBit(y, order[k])) {
          ++hits[k];
          ++positives;
        }
      }
    }
#pragma omp critical(dynsparse_recall_curve)
    {
      for (int64_t k = 0; k < units; ++k) curve->hits[k] += hits[k];
      curve->positives += positives;
    }
  }
  curve->rows += rows;
}

nlohmann::json RecallCurveMetrics(const RecallCurve& curve, int64_t units,
                                  const std::vector<double>& keeps) {
  nlohmann::json out = {
      {"rows", curve.rows},
      {"label_density",
       curve.rows > 0 ? double(curve.positives) / (curve.rows * units) : 0.0},
      {"k_for_recall_0.95", curve.KForRecall(0.95)},
      {"k_for_recall_0.99", curve.KForRecall(0.99)},
  };
  nlohmann::json at = nlohmann::json::array();
  for (double keep : keeps) {
    const int64_t k = LabelCount(keep, units);
    at.push_back({{"keep", keep},
                  {"k", k},
                  {"recall", curve.RecallAt(k)},
                  {"precision", curve.PrecisionAt(k)}});
  }
  out["at_keep"] = at;
  return out;
}

}  // namespace dynsparse
