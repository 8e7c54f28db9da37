#include "experiments/report/tables.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/harness/config.h"

namespace dynsparse {
namespace {

using nlohmann::json;

// Several configs or models in one report get their own key columns.
bool ManyConfigs(const ReportData& d) { return d.configs.size() > 1; }

std::vector<std::string> KeyHeader(const ReportData& d) {
  std::vector<std::string> h;
  if (ManyConfigs(d)) h.push_back("config");
  h.push_back("model");
  h.push_back("method");
  for (const std::string& p : d.param_names) h.push_back(p);
  return h;
}

std::vector<std::string> KeyCells(const ReportData& d, const ReportRow& r) {
  std::vector<std::string> c;
  if (ManyConfigs(d)) c.push_back(r.config);
  c.push_back(r.model);
  c.push_back(r.method);
  for (const std::string& p : d.param_names) {
    c.push_back(r.params.contains(p) ? ParamText(r.params[p]) : "");
  }
  return c;
}

std::string CellText(const ReportRow& r, const ReportColumn& c,
                     const char* plus_minus) {
  auto it = r.cells.find(c.key);
  if (it == r.cells.end()) return "";
  if (!it->second.ok) return "error";
  std::string text = FormatValue(it->second.value);
  if (it->second.stderr_value.has_value()) {
    absl::StrAppend(&text, plus_minus, FormatValue(*it->second.stderr_value));
  }
  return text;
}

std::string Arrow(const ReportColumn& c) {
  return c.lower_is_better ? " ↓" : " ↑";
}

std::string MdEscape(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|')
      out += "\\|";
    else if (ch == '\n')
      out += ' ';
    else
      out += ch;
  }
  return out;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string TexEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '_':
      case '%':
      case '&':
      case '#':
      case '$':
      case '{':
      case '}':
        out += '\\';
        out += ch;
        break;
      case '~':
        out += "\\textasciitilde{}";
        break;
      case '^':
        out += "\\textasciicircum{}";
        break;
      case '\\':
        out += "\\textbackslash{}";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

}  // namespace

std::string FormatValue(double value) {
  if (!std::isfinite(value))
    return value > 0 ? "inf" : (value < 0 ? "-inf" : "nan");
  const double a = std::fabs(value);
  if (a != 0 && (a >= 1e6 || a < 1e-3)) return absl::StrFormat("%.3e", value);
  const int digits =
      a < 1 ? 4 : std::max(0, 3 - static_cast<int>(std::floor(std::log10(a))));
  return absl::StrFormat("%.*f", digits, value);
}

std::string RenderMarkdown(const ReportData& d, const std::string& title) {
  std::string md = absl::StrCat("# ", title, "\n\n");
  absl::StrAppend(&md, "- configs: ", absl::StrJoin(d.configs, ", "), "\n");
  absl::StrAppend(&md, "- git: ", absl::StrJoin(d.git_shas, ", "), "\n");
  absl::StrAppend(&md, "- results: ", absl::StrJoin(d.files, ", "), "\n\n");
  md +=
      "Columns (↓ lower is better, ↑ higher is better; ± is the standard "
      "error):\n\n";
  for (const ReportColumn& c : d.columns) {
    absl::StrAppend(&md, "- **", MdEscape(c.label), "**", Arrow(c), ": ",
                    MdEscape(c.protocol.empty() ? c.metric_entry : c.protocol),
                    "\n");
  }
  md += "\n|";
  std::vector<std::string> header = KeyHeader(d);
  for (const std::string& h : header)
    absl::StrAppend(&md, " ", MdEscape(h), " |");
  for (const ReportColumn& c : d.columns) {
    absl::StrAppend(&md, " ", MdEscape(c.label), Arrow(c), " |");
  }
  md += "\n|";
  for (size_t i = 0; i < header.size(); ++i) md += " --- |";
  for (size_t i = 0; i < d.columns.size(); ++i) md += " ---: |";
  md += "\n";
  for (const ReportRow& r : d.rows) {
    md += "|";
    for (const std::string& k : KeyCells(d, r)) {
      absl::StrAppend(&md, " ", MdEscape(k), " |");
    }
    for (const ReportColumn& c : d.columns) {
      absl::StrAppend(&md, " ", CellText(r, c, " ± "), " |");
    }
    md += "\n";
  }
  if (!d.errors.empty()) {
    absl::StrAppend(&md, "\n## Failed (", d.errors.size(), ")\n\n");
    for (const ReportError& e : d.errors) {
      absl::StrAppend(&md, "- ", MdEscape(e.job), " / ", MdEscape(e.metric),
                      ": ", MdEscape(e.message), "\n");
    }
  }
  if (d.interrupted > 0) {
    absl::StrAppend(
        &md, "\n", d.interrupted,
        " job(s) were interrupted by a killed run and run again.\n");
  }
  return md;
}

std::string RenderCsv(const ReportData& d) {
  std::vector<std::string> header = KeyHeader(d);
  header.push_back("device");
  header.push_back("dtype");
  for (const ReportColumn& c : d.columns) {
    header.push_back(c.label);
    header.push_back(absl::StrCat(c.label, " stderr"));
    header.push_back(absl::StrCat(c.label, " n"));
  }
  std::string csv;
  for (size_t i = 0; i < header.size(); ++i) {
    absl::StrAppend(&csv, i ? "," : "", CsvField(header[i]));
  }
  csv += "\n";
  for (const ReportRow& r : d.rows) {
    std::vector<std::string> cells = KeyCells(d, r);
    cells.push_back(r.device);
    cells.push_back(r.dtype);
    for (const ReportColumn& c : d.columns) {
      auto it = r.cells.find(c.key);
      if (it == r.cells.end()) {
        cells.insert(cells.end(), {"", "", ""});
      } else if (!it->second.ok) {
        cells.insert(cells.end(), {"error", "", ""});
      } else {
        cells.push_back(absl::StrFormat("%.10g", it->second.value));
        cells.push_back(it->second.stderr_value.has_value()
                            ? absl::StrFormat("%.10g", *it->second.stderr_value)
                            : "");
        cells.push_back(absl::StrCat(it->second.n));
      }
    }
    for (size_t i = 0; i < cells.size(); ++i) {
      absl::StrAppend(&csv, i ? "," : "", CsvField(cells[i]));
    }
    csv += "\n";
  }
  return csv;
}

std::string RenderLatex(const ReportData& d, const std::string& title) {
  const std::vector<std::string> header = KeyHeader(d);
  std::string tex =
      "% Generated by `dynsparse report`; needs \\usepackage{booktabs}.\n"
      "\\begin{table}[t]\n\\centering\n\\small\n";
  absl::StrAppend(&tex, "\\caption{", TexEscape(title), ". ");
  for (const ReportColumn& c : d.columns) {
    absl::StrAppend(&tex, TexEscape(c.label), ": ",
                    TexEscape(c.protocol.empty() ? c.metric_entry : c.protocol),
                    "; ");
  }
  tex += "$\\downarrow$/$\\uparrow$: lower/higher is better.}\n";
  absl::StrAppend(&tex, "\\begin{tabular}{", std::string(header.size(), 'l'),
                  std::string(d.columns.size(), 'r'), "}\n\\toprule\n");
  std::vector<std::string> cells;
  for (const std::string& h : header) cells.push_back(TexEscape(h));
  for (const ReportColumn& c : d.columns) {
    cells.push_back(absl::StrCat(TexEscape(c.label), c.lower_is_better
                                                         ? " $\\downarrow$"
                                                         : " $\\uparrow$"));
  }
  absl::StrAppend(&tex, absl::StrJoin(cells, " & "), " \\\\\n\\midrule\n");
  for (const ReportRow& r : d.rows) {
    cells.clear();
    for (const std::string& k : KeyCells(d, r)) cells.push_back(TexEscape(k));
    for (const ReportColumn& c : d.columns) {
      cells.push_back(CellText(r, c, " $\\pm$ "));
    }
    absl::StrAppend(&tex, absl::StrJoin(cells, " & "), " \\\\\n");
  }
  tex += "\\bottomrule\n\\end{tabular}\n\\end{table}\n";
  return tex;
}

}  // namespace dynsparse
