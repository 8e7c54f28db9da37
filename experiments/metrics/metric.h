// Metric: one measurement a harness job runs on an opened model (perplexity,
// zeroshot, longctx, latency). The harness (experiments/harness) expands a
// YAML config into jobs, opens the model + method of each job and runs every
// metric the config names through this interface; metrics/registry.cc is the
// one explicit table of metrics.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_METRIC_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_METRIC_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/backend.h"
#include "core/graph/method.h"
#include "core/io/model_loader.h"
#include "core/tokenizer/tokenizer.h"
#include "experiments/metrics/metric_params.h"
#include "nlohmann/json.hpp"

namespace dynsparse {

// What a metric may use. Everything is owned by the caller and outlives Run.
// A metric builds its own Sessions from these (one per sequence it needs).
struct MetricModel {
  const LoadedModel* model = nullptr;
  const Tokenizer* tokenizer = nullptr;
  Backend* backend = nullptr;
  Method* method = nullptr;
  std::string device;  // "cpu" | "cuda"
  std::string dtype;   // weights dtype name
};

// One number of the results table. A metric returns one row per value it
// measures (e.g. zeroshot: acc and acc_norm per task).
struct MetricRow {
  std::string metric;  // "perplexity", "acc", "acc_norm", "ttft_ms", ...
  std::string task;    // Task / corpus / setting the row is about; may be "".
  double value = 0.0;
  std::optional<double> stderr_value;
  int64_t n = 0;        // Examples (or tokens) behind the value.
  nlohmann::json details = nlohmann::json::object();  // Protocol etc.
};

// Called as work advances: (done, total) in the metric's own units.
using ProgressFn = std::function<void(int64_t done, int64_t total)>;

class Metric {
 public:
  virtual ~Metric() = default;
  // A one-line description of the protocol, printed in report table headers
  // (e.g. "token ppl, sliding window context 1024 stride 512").
  virtual std::string Protocol() const = 0;
  virtual absl::StatusOr<std::vector<MetricRow>> Run(
      const MetricModel& model, const ProgressFn& progress) = 0;
};

struct MetricInfo {
  std::string name;
  std::string summary;
  std::vector<std::string> parameters;  // Valid keys of the metric's entry.
  // Validates the parameters (errors name params.path() + key) and builds the
  // metric. Must not touch the model; file existence checks are welcome.
  std::function<absl::StatusOr<std::unique_ptr<Metric>>(const MetricParams&)>
      create;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_METRIC_H_
