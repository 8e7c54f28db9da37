#include "experiments/report/report_data.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "experiments/harness/config.h"
#include "experiments/harness/json_fields.h"
#include "experiments/harness/results_log.h"

namespace dynsparse {
namespace {

using nlohmann::json;

void AddUnique(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) {
    list.push_back(value);
  }
}

}  // namespace

bool LowerIsBetter(const std::string& metric) {
  if (metric.find("per_s") != std::string::npos ||
      metric.find("throughput") != std::string::npos ||
      metric.find("speedup") != std::string::npos) {
    return false;  // tokens_per_s, ideal_ttft_speedup
  }
  for (const char* word : {"perplexity", "ppl", "bits", "loss", "nll", "_ms",
                           "_s", "latency", "time", "bytes", "fraction"}) {
    if (metric.find(word) != std::string::npos) return true;
  }
  return false;
}

std::string RowMethodLabel(const ReportRow& row) {
  std::string out = row.method;
  for (const auto& [key, value] : row.params.items()) {
    absl::StrAppend(&out, " ", key, "=", ParamText(value));
  }
  return out;
}

absl::StatusOr<ReportData> LoadReportData(
    const std::vector<std::string>& dirs) {
  ReportData data;
  // (config_hash, pair) -> latest ok group / latest error group.
  std::map<std::string, std::vector<json>> ok_groups, error_groups;
  std::vector<std::string> order;  // Group keys in first-seen order.
  for (const std::string& dir : dirs) {
    const std::vector<std::string> files = ListResultsFiles(dir);
    if (files.empty()) {
      return absl::NotFoundError(
          absl::StrCat(dir, ": no results*.jsonl files (is it a run folder?)"));
    }
    for (const std::string& file : files) {
      int dropped = 0;
      auto lines = ReadResultsFile(file, &dropped);
      if (!lines.ok()) return lines.status();
      data.files.push_back(file);
      data.dropped_lines += dropped;
      std::vector<json> group;
      for (json& line : *lines) {
        const std::string kind = StrField(line, "kind");
        if (kind == "interrupted") ++data.interrupted;
        if (kind != "result") continue;
        if (IntField(line, "row", 0) == 0) group.clear();
        group.push_back(std::move(line));
        if (static_cast<int64_t>(group.size()) <
            IntField(group[0], "rows", 1)) {
          continue;
        }
        const std::string key = absl::StrCat(StrField(group[0], "config_hash"),
                                             "\n", StrField(group[0], "pair"));
        if (!ok_groups.count(key) && !error_groups.count(key)) {
          order.push_back(key);
        }
        if (StrField(group[0], "status") == "ok") {
          ok_groups[key] = std::move(group);
        } else {
          error_groups[key] = std::move(group);
        }
        group.clear();
      }
    }
  }

  std::map<std::string, size_t> row_of;  // config_hash + job -> row
  std::map<std::string, size_t> column_of;
  std::map<std::string, size_t> config_rank;
  // Ok groups first, so error cells can land in the columns they fill.
  std::vector<std::pair<std::string, bool>> passes;
  for (const std::string& key : order) {
    if (ok_groups.count(key)) passes.push_back({key, true});
  }
  for (const std::string& key : order) {
    if (!ok_groups.count(key)) passes.push_back({key, false});
  }
  for (const auto& [key, ok] : passes) {
    const std::vector<json>& group = ok ? ok_groups[key] : error_groups[key];
    const json& head = group[0];
    const std::string hash = StrField(head, "config_hash");
    const std::string config = StrField(head, "config");
    AddUnique(data.configs, absl::StrCat(config, " (", hash, ")"));
    AddUnique(data.git_shas, StrField(head, "git_sha", "unknown"));
    if (!config_rank.count(hash)) config_rank[hash] = config_rank.size();
    const std::string row_key = absl::StrCat(hash, "\n", StrField(head, "job"));
    if (!row_of.count(row_key)) {
      ReportRow row;
      row.config = config;
      row.config_hash = hash;
      row.model = StrField(head, "model");
      row.method = StrField(head, "method");
      row.device = StrField(head, "device");
      row.dtype = StrField(head, "dtype");
      row.params = ObjField(head, "params");
      row.job_index = IntField(head, "job_index", int64_t{0});
      for (const auto& [name, v] : row.params.items()) {
        AddUnique(data.param_names, name);
      }
      row_of[row_key] = data.rows.size();
      data.rows.push_back(std::move(row));
    }
    ReportRow& row = data.rows[row_of[row_key]];
    const int64_t metric_index = IntField(head, "metric_index", int64_t{0});
    if (!ok) {
      const std::string message = StrField(head, "error");
      data.errors.push_back({absl::StrCat(row.model, " ", RowMethodLabel(row)),
                             StrField(head, "metric_entry"), message});
      ReportCell cell;
      cell.error = message;
      bool placed = false;
      for (const ReportColumn& c : data.columns) {
        if (c.key.starts_with(absl::StrCat(metric_index, "|"))) {
          row.cells[c.key] = cell;
          placed = true;
        }
      }
      if (placed) continue;  // Else: a column of its own (every job failed).
    }
    for (const json& line : group) {
      const std::string metric = StrField(line, "metric");
      const std::string task = StrField(line, "task");
      const std::string column_key =
          absl::StrCat(metric_index, "|", metric, "|", task);
      if (!column_of.count(column_key)) {
        ReportColumn c;
        c.key = column_key;
        c.metric_entry = StrField(line, "metric_entry");
        c.metric = metric;
        c.task = task;
        c.label = task.empty() ? metric : absl::StrCat(metric, " ", task);
        c.lower_is_better = LowerIsBetter(metric);
        column_of[column_key] = data.columns.size();
        data.columns.push_back(std::move(c));
      }
      ReportColumn& column = data.columns[column_of[column_key]];
      if (column.protocol.empty()) column.protocol = StrField(line, "protocol");
      ReportCell cell;
      cell.ok = ok;
      if (ok) {
        cell.value = NumField(line, "value");
        if (line.contains("stderr") && line["stderr"].is_number()) {
          cell.stderr_value = line["stderr"].get<double>();
        }
        cell.n = IntField(line, "n", int64_t{0});
      } else {
        cell.error = StrField(line, "error");
      }
      row.cells[column_key] = cell;
    }
  }
  std::sort(data.param_names.begin(), data.param_names.end());
  std::stable_sort(data.columns.begin(), data.columns.end(),
                   [](const ReportColumn& a, const ReportColumn& b) {
                     return std::stoll(a.key) < std::stoll(b.key);
                   });
  // Two entries of one metric (say perplexity at two contexts) share a
  // label; tell them apart by their config index.
  for (ReportColumn& c : data.columns) {
    size_t same = 0;
    for (const ReportColumn& d : data.columns) {
      same += d.label == c.label && d.metric_entry == c.metric_entry;
    }
    if (same > 1) {
      absl::StrAppend(&c.label, " [metrics[", c.key.substr(0, c.key.find('|')),
                      "]]");
    }
  }
  std::stable_sort(data.rows.begin(), data.rows.end(),
                   [&](const ReportRow& a, const ReportRow& b) {
                     const size_t ra = config_rank[a.config_hash];
                     const size_t rb = config_rank[b.config_hash];
                     if (ra != rb) return ra < rb;
                     return a.job_index < b.job_index;
                   });
  return data;
}

}  // namespace dynsparse
