// The registry of metrics: one explicit table (registry.cc) of every metric a
// config may name. Adding a metric = its files + one line in that table.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_REGISTRY_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_REGISTRY_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "experiments/metrics/metric.h"
#include "experiments/metrics/metric_params.h"

namespace dynsparse {

const std::vector<MetricInfo>& MetricRegistry();

// The entry named `name`, or an error "unknown metric 'x' (valid: ...)".
absl::StatusOr<const MetricInfo*> FindMetric(absl::string_view name);

// Creates the named metric from its parameters, then rejects keys it did not
// read. Errors name params.path(), e.g. "metrics[2]: unknown metric 'ppl'
// (valid: latency, perplexity, zeroshot)" or "metrics[0].context: ...".
absl::StatusOr<std::unique_ptr<Metric>> CreateMetric(
    absl::string_view name, const MetricParams& params);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_REGISTRY_H_
