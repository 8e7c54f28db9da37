// Validation metrics of a unit predictor: how many labelled units each rank
// of the predictor's logits holds, summed over rows, and the recall /
// precision JSON that the trainers (CPU and CUDA) and predictors.json share.
#ifndef DYNSPARSE_METHODS_DEJAVU_RECALL_CURVE_H_
#define DYNSPARSE_METHODS_DEJAVU_RECALL_CURVE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace dynsparse {

// Recall as a function of K: hits[k] = positives ranked k-th by the
// predictor's logits (0-based), summed over rows.
struct RecallCurve {
  std::vector<int64_t> hits;
  int64_t positives = 0;
  int64_t rows = 0;
  double RecallAt(int64_t k) const;
  double PrecisionAt(int64_t k) const;
  int64_t KForRecall(double recall) const;  // Smallest K reaching it.
};

// Rank of every labelled unit in each row's logits (ties to the lower id).
// Rows are ranked in parallel (OpenMP): a large model's validation sorts
// tens of thousands of rows of tens of thousands of logits.
void AddToRecallCurve(const float* logits, const uint8_t* labels, int64_t rows,
                      int64_t units, RecallCurve* curve);

// {rows, label_density, k_for_recall_0.95/0.99, at_keep: [{keep, k, recall,
// precision}]}, K = LabelCount(keep, units).
nlohmann::json RecallCurveMetrics(const RecallCurve& curve, int64_t units,
                                  const std::vector<double>& keeps);

}  // namespace dynsparse

#endif  // DYNSPARSE_METHODS_DEJAVU_RECALL_CURVE_H_
