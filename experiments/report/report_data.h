// The merged results of one or more run folders, as a pivot: one row per job
// (config x model x method point), one column per metric row kind
// (metric entry x metric x task). The latest complete group of each
// (config, job, metric) wins, so re-runs and shard overlaps count once.
#ifndef DYNSPARSE_EXPERIMENTS_REPORT_REPORT_DATA_H_
#define DYNSPARSE_EXPERIMENTS_REPORT_REPORT_DATA_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace dynsparse {

struct ReportColumn {
  std::string key;    // "metric_index|metric|task"
  std::string label;  // "perplexity wikitext2"
  std::string metric_entry;
  std::string metric;
  std::string task;
  std::string protocol;
  bool lower_is_better = false;
};

struct ReportCell {
  bool ok = false;
  double value = 0;
  std::optional<double> stderr_value;
  int64_t n = 0;
  std::string error;
};

struct ReportRow {
  std::string config;
  std::string config_hash;
  std::string model;
  std::string method;
  std::string device;
  std::string dtype;
  nlohmann::json params = nlohmann::json::object();
  int64_t job_index = 0;
  std::map<std::string, ReportCell> cells;  // By column key.
};

struct ReportError {
  std::string job;
  std::string metric;
  std::string message;
};

struct ReportData {
  std::vector<ReportColumn> columns;
  std::vector<ReportRow> rows;
  std::vector<std::string> param_names;  // Union over rows, sorted.
  std::vector<ReportError> errors;
  std::vector<std::string> configs;  // "name (hash)", in order seen.
  std::vector<std::string> git_shas;
  std::vector<std::string> files;
  size_t interrupted = 0;  // Jobs recorded as interrupted (then re-run).
  size_t dropped_lines = 0;
};

absl::StatusOr<ReportData> LoadReportData(const std::vector<std::string>& dirs);

// Perplexity, bits, losses, times and computed fractions are better low;
// accuracies, log-likelihoods and speedups high.
bool LowerIsBetter(const std::string& metric);

// "dejavu mlp_keep=0.5" for a row.
std::string RowMethodLabel(const ReportRow& row);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_REPORT_REPORT_DATA_H_
