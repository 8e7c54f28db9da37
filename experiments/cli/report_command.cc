// dynsparse report: merge the results of run folders (shards of one sweep,
// or several sweeps) into tables and plots.
#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "experiments/cli/commands.h"
#include "experiments/harness/config.h"
#include "experiments/harness/json_fields.h"
#include "experiments/harness/yaml_json.h"
#include "experiments/report/report.h"

namespace dynsparse {
namespace {

// The report options the run recorded in its resolved.yaml, else defaults.
ReportOptions RecordedOptions(const std::string& dir) {
  ReportOptions options;
  const std::string path =
      (std::filesystem::path(dir) / "resolved.yaml").string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return options;
  auto tree = ReadYamlFile(path);
  if (!tree.ok() || !tree->contains("report")) return options;
  const auto& report = (*tree)["report"];
  auto strings = [](const nlohmann::json& v, std::vector<std::string>& out) {
    if (!v.is_array()) return;
    out.clear();
    for (const auto& s : v) {
      if (s.is_string()) out.push_back(s.get<std::string>());
    }
  };
  if (report.contains("tables")) strings(report["tables"], options.tables);
  if (report.contains("plots")) strings(report["plots"], options.plots);
  if (report.contains("pareto") && report["pareto"].is_object()) {
    options.pareto_quality = StrField(report["pareto"], "quality");
    options.pareto_cost = StrField(report["pareto"], "cost");
  }
  return options;
}

}  // namespace

int RunReport(const CommandArgs& args) {
  const std::vector<FlagSpec> specs = {
      {"out", FlagKind::kValue,
       "folder for the report (default: the first DIR)"},
      {"tables", FlagKind::kValue,
       "comma-separated table formats: md,csv,tex (default: the run's "
       "report.tables)"},
      {"plots", FlagKind::kValue,
       "comma-separated plots: metric-vs-sparsity, NAME-vs-sparsity, pareto "
       "(default: the run's report.plots)"},
  };
  if (WantsHelp(args)) {
    PrintCommandHelp("report",
                     "dynsparse report DIR [DIR...] [flags]: merge run folders "
                     "(shards, sweeps) into Markdown/CSV/LaTeX tables and SVG "
                     "plots.",
                     specs);
    return 0;
  }
  auto flags = ParseFlags(args, specs, Positional::kAllowed);
  if (!flags.ok()) return ReportError("report", flags.status());
  const std::vector<std::string>& dirs = flags->positional();
  if (dirs.empty()) {
    return ReportError("report", absl::InvalidArgumentError(
                                     "expected at least one results folder"));
  }
  ReportOptions options = RecordedOptions(dirs[0]);
  // Checked like the config's report: section, so typos fail the same way.
  nlohmann::json report = nlohmann::json::object();
  if (flags->Has("tables")) {
    report["tables"] = std::vector<std::string>(
        absl::StrSplit(flags->Get("tables"), ',', absl::SkipEmpty()));
  }
  if (flags->Has("plots")) {
    report["plots"] = std::vector<std::string>(
        absl::StrSplit(flags->Get("plots"), ',', absl::SkipEmpty()));
  }
  if (!report.empty()) {
    auto checked = ParseReportOptions(report);
    if (!checked.ok()) return ReportError("report", checked.status());
    if (report.contains("tables")) options.tables = checked->tables;
    if (report.contains("plots")) options.plots = checked->plots;
  }
  const std::string out = flags->Has("out") ? flags->Get("out") : dirs[0];
  auto summary = WriteReport(dirs, out, options);
  if (!summary.ok()) return ReportError("report", summary.status());
  for (const std::string& file : summary->files) {
    std::cerr << "wrote " << file << "\n";
  }
  std::cerr << "dynsparse report: " << summary->results << " result(s), "
            << summary->errors << " failed (job, metric) pair(s)\n";
  return 0;
}

}  // namespace dynsparse
