#include "experiments/report/report.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "experiments/report/plots.h"
#include "experiments/report/report_data.h"
#include "experiments/report/tables.h"

namespace dynsparse {
namespace {

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out.good()) {
    return absl::InternalError(absl::StrCat(path, ": cannot write"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReportSummary> WriteReport(const std::vector<std::string>& dirs,
                                          const std::string& out_dir,
                                          const ReportOptions& options) {
  ASSIGN_OR_RETURN(const ReportData data, LoadReportData(dirs));
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat(out_dir, ": cannot create the folder: ", ec.message()));
  }
  std::vector<std::string> names;
  for (const std::string& c : data.configs) {
    names.push_back(c.substr(0, c.find(" (")));
  }
  const std::string title =
      absl::StrCat("Results: ", absl::StrJoin(names, ", "));
  ReportSummary summary;
  summary.errors = data.errors.size();
  for (const ReportRow& r : data.rows) summary.results += r.cells.size();
  auto write = [&](const std::string& name,
                   const std::string& text) -> absl::Status {
    const std::string path = (std::filesystem::path(out_dir) / name).string();
    RETURN_IF_ERROR(WriteText(path, text));
    summary.files.push_back(path);
    return absl::OkStatus();
  };
  for (const std::string& table : options.tables) {
    if (table == "md")
      RETURN_IF_ERROR(write("report.md", RenderMarkdown(data, title)));
    if (table == "csv") RETURN_IF_ERROR(write("report.csv", RenderCsv(data)));
    if (table == "tex")
      RETURN_IF_ERROR(write("report.tex", RenderLatex(data, title)));
  }
  std::vector<std::string> notes;
  for (const std::string& plot : options.plots) {
    for (const PlotFile& file : MakePlots(data, plot, options, &notes)) {
      RETURN_IF_ERROR(write(file.name, file.svg));
    }
  }
  for (const std::string& note : notes) DS_LOG(Info) << "report: " << note;
  return summary;
}

}  // namespace dynsparse
