// The `perplexity` metric of experiment configs: token-level sliding-window
// perplexity (experiments/metrics/perplexity.h) of a registered corpus or a
// text file.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_PERPLEXITY_METRIC_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_PERPLEXITY_METRIC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "experiments/metrics/metric.h"

namespace dynsparse {

struct PerplexityMetricOptions {
  std::string corpus;  // Registered corpus name or a UTF-8 text file.
  int64_t context = 1024;
  int64_t stride = 512;
  int64_t max_tokens = 0;  // Score only the first N tokens (0 = all).
  bool add_special =
      true;  // BOS (once, at the start) when the tokenizer adds one.
};

class PerplexityMetric : public Metric {
 public:
  explicit PerplexityMetric(PerplexityMetricOptions options)
      : options_(std::move(options)) {}
  static absl::StatusOr<std::unique_ptr<Metric>> Create(
      const MetricParams& params);

  std::string Protocol() const override;
  absl::StatusOr<std::vector<MetricRow>> Run(
      const MetricModel& model, const ProgressFn& progress) override;

 private:
  PerplexityMetricOptions options_;
};

MetricInfo PerplexityMetricInfo();

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_PERPLEXITY_METRIC_H_
