// The `latency` metric of experiment configs: time to first token, decode
// ms/token percentiles, achieved bandwidth and the bandwidth floor of the
// job's model + method on its device, measured by the same code as
// `dynsparse bench` (experiments/bench/bench.h).
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_LATENCY_METRIC_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_LATENCY_METRIC_H_

#include <memory>
#include <string>
#include <vector>

#include "experiments/bench/bench.h"
#include "experiments/metrics/metric.h"

namespace dynsparse {

class LatencyMetric : public Metric {
 public:
  // `options.prompt` is ignored: each of `prompts` is measured in turn.
  LatencyMetric(BenchOptions options, std::vector<int64_t> prompts)
      : options_(options), prompts_(std::move(prompts)) {}
  // Parameters: prompt (128, or a list), new_tokens (32), batch (1),
  // repeats (3), bandwidth_gbps (0 = measure a device copy).
  static absl::StatusOr<std::unique_ptr<Metric>> Create(
      const MetricParams& params);

  std::string Protocol() const override;
  absl::StatusOr<std::vector<MetricRow>> Run(
      const MetricModel& model, const ProgressFn& progress) override;

 private:
  BenchOptions options_;
  std::vector<int64_t> prompts_;
};

MetricInfo LatencyMetricInfo();

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_LATENCY_METRIC_H_
