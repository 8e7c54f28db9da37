#include "experiments/metrics/registry.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "experiments/metrics/latency_metric.h"
#include "experiments/metrics/longctx_metric.h"
#include "experiments/metrics/perplexity_metric.h"
#include "experiments/metrics/zeroshot.h"

namespace dynsparse {

const std::vector<MetricInfo>& MetricRegistry() {
  static const auto* const kMetrics = new std::vector<MetricInfo>{
      LatencyMetricInfo(),
      PerplexityMetricInfo(),
      ZeroshotMetricInfo(),
      LongctxMetricInfo(),
  };
  return *kMetrics;
}

absl::StatusOr<const MetricInfo*> FindMetric(absl::string_view name) {
  std::vector<std::string> names;
  for (const MetricInfo& info : MetricRegistry()) {
    if (info.name == name) return &info;
    names.push_back(info.name);
  }
  return absl::NotFoundError(absl::StrCat(
      "unknown metric '", name, "' (valid: ", absl::StrJoin(names, ", "), ")"));
}

absl::StatusOr<std::unique_ptr<Metric>> CreateMetric(
    absl::string_view name, const MetricParams& params) {
  auto info = FindMetric(name);
  if (!info.ok()) {
    return absl::NotFoundError(
        absl::StrCat(params.path(), ": ", info.status().message()));
  }
  auto metric = (*info)->create(params);
  if (!metric.ok()) return metric.status();
  if (absl::Status s = params.CheckAllUsed((*info)->parameters); !s.ok()) {
    return s;
  }
  return metric;
}

}  // namespace dynsparse
