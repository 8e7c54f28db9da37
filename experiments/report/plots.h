// The report's plots, as SVG files: each metric against each swept numeric
// method parameter (one line per model x method x other parameters; methods
// without the parameter, like dense, as dashed reference lines), and quality
// against cost (latency) with the Pareto frontier.
#ifndef DYNSPARSE_EXPERIMENTS_REPORT_PLOTS_H_
#define DYNSPARSE_EXPERIMENTS_REPORT_PLOTS_H_

#include <string>
#include <utility>
#include <vector>

#include "experiments/harness/config.h"
#include "experiments/report/report_data.h"

namespace dynsparse {

struct PlotFile {
  std::string name;  // "plot-perplexity-wikitext2-vs-mlp_keep.svg"
  std::string svg;
};

// `plot` is a report.plots entry: "metric-vs-sparsity", "NAME-vs-sparsity"
// (columns whose metric or metric entry is NAME) or "pareto".
std::vector<PlotFile> MakePlots(const ReportData& data, const std::string& plot,
                                const ReportOptions& options,
                                std::vector<std::string>* notes);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_REPORT_PLOTS_H_
