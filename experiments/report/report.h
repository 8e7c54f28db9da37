// `dynsparse report`: merges the results*.jsonl of one or more run folders
// (shards of one sweep, or several sweeps) into tables (Markdown, CSV,
// LaTeX) and SVG plots.
#ifndef DYNSPARSE_EXPERIMENTS_REPORT_REPORT_H_
#define DYNSPARSE_EXPERIMENTS_REPORT_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/harness/config.h"

namespace dynsparse {

struct ReportSummary {
  std::vector<std::string> files;  // Written, in order.
  size_t results = 0;              // (job, metric) rows in the tables.
  size_t errors = 0;               // Failed (job, metric) pairs.
};

// Writes report.md / report.csv / report.tex and plot-*.svg into `out_dir`.
absl::StatusOr<ReportSummary> WriteReport(const std::vector<std::string>& dirs,
                                          const std::string& out_dir,
                                          const ReportOptions& options);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_REPORT_REPORT_H_
