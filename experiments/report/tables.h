// The results pivot as Markdown, CSV and LaTeX: one row per job (model,
// method and every swept parameter), one column per metric; each metric's
// protocol is listed in the header (Markdown, LaTeX caption).
#ifndef DYNSPARSE_EXPERIMENTS_REPORT_TABLES_H_
#define DYNSPARSE_EXPERIMENTS_REPORT_TABLES_H_

#include <string>

#include "experiments/report/report_data.h"

namespace dynsparse {

std::string RenderMarkdown(const ReportData& data, const std::string& title);
std::string RenderCsv(const ReportData& data);
std::string RenderLatex(const ReportData& data, const std::string& title);

// "12.35", "0.6512 ± 0.0123": 4 significant digits.
std::string FormatValue(double value);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_REPORT_TABLES_H_
