#include "experiments/report/plots.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "experiments/report/svg_plot.h"
#include "experiments/report/tables.h"

namespace dynsparse {
namespace {

using nlohmann::json;

std::string Slug(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                      c == '.' || c == '-';
    out += keep ? c : '-';
  }
  return out;
}

const ReportCell* OkCell(const ReportRow& row, const ReportColumn& column) {
  auto it = row.cells.find(column.key);
  if (it == row.cells.end() || !it->second.ok) return nullptr;
  return &it->second;
}

std::string ShortLabel(const ReportData& d, const ReportRow& row) {
  std::set<std::string> models;
  for (const ReportRow& r : d.rows) models.insert(r.model);
  const std::string method = RowMethodLabel(row);
  return models.size() > 1 ? absl::StrCat(row.model, " ", method) : method;
}

// Numeric parameters that take at least two values across the rows.
std::vector<std::string> SweptParams(const ReportData& d) {
  std::vector<std::string> out;
  for (const std::string& p : d.param_names) {
    std::set<double> values;
    for (const ReportRow& r : d.rows) {
      if (r.params.contains(p) && r.params[p].is_number()) {
        values.insert(r.params[p].get<double>());
      }
    }
    if (values.size() >= 2) out.push_back(p);
  }
  return out;
}

std::string AxisLabel(const ReportColumn& c) {
  return absl::StrCat(c.label, c.lower_is_better ? " (lower is better)"
                                                 : " (higher is better)");
}

PlotFile MetricVsParam(const ReportData& d, const ReportColumn& c,
                       const std::string& param) {
  PlotSpec spec;
  spec.title = absl::StrCat(c.label, " vs ", param);
  spec.subtitle = c.protocol;
  spec.x_label = param;
  spec.y_label = AxisLabel(c);
  // Series: rows grouped by model + method + every other parameter.
  std::set<std::string> models;
  for (const ReportRow& x : d.rows) models.insert(x.model);
  const bool many_models = models.size() > 1;
  std::map<std::string, size_t> series_of;
  for (const ReportRow& r : d.rows) {
    const ReportCell* cell = OkCell(r, c);
    if (cell == nullptr) continue;
    const bool has = r.params.contains(param) && r.params[param].is_number();
    json others = r.params;
    others.erase(param);
    std::string name = r.method;
    for (const auto& [k, v] : others.items()) {
      absl::StrAppend(&name, " ", k, "=", ParamText(v));
    }
    if (many_models) name = absl::StrCat(r.model, " ", name);
    auto [it, fresh] = series_of.emplace(name, spec.series.size());
    if (fresh) {
      PlotSeries s;
      s.name = name;
      s.horizontal = !has;
      s.dashed = !has;
      s.markers = has;
      spec.series.push_back(std::move(s));
    }
    spec.series[it->second].points.push_back(
        {has ? r.params[param].get<double>() : 0.0, cell->value, ""});
  }
  for (PlotSeries& s : spec.series) {
    std::sort(s.points.begin(), s.points.end(),
              [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
  }
  return {absl::StrCat("plot-", Slug(c.label), "-vs-", Slug(param), ".svg"),
          RenderSvg(spec)};
}

// Without a swept parameter: the jobs on a categorical axis, one series per
// row kind of the metric entry (acc piqa, acc copa, ...).
PlotFile MetricByJob(const ReportData& d,
                     const std::vector<const ReportColumn*>& columns) {
  PlotSpec spec;
  const ReportColumn& first = *columns[0];
  spec.title = columns.size() == 1
                   ? first.label
                   : absl::StrCat(first.metric_entry, " by job");
  spec.subtitle = first.protocol;
  spec.x_label = "job";
  spec.y_label = columns.size() == 1 ? AxisLabel(first) : first.metric_entry;
  bool same_direction = true;
  for (const ReportColumn* c : columns) {
    same_direction =
        same_direction && c->lower_is_better == first.lower_is_better;
  }
  if (columns.size() > 1 && same_direction) {
    absl::StrAppend(&spec.y_label, first.lower_is_better
                                       ? " (lower is better)"
                                       : " (higher is better)");
  }
  for (const ReportRow& r : d.rows)
    spec.x_categories.push_back(ShortLabel(d, r));
  for (const ReportColumn* c : columns) {
    PlotSeries s;
    s.name = c->label;
    s.line = false;
    for (size_t i = 0; i < d.rows.size(); ++i) {
      const ReportCell* cell = OkCell(d.rows[i], *c);
      if (cell == nullptr) continue;
      s.points.push_back({static_cast<double>(i), cell->value,
                          columns.size() == 1 ? FormatValue(cell->value) : ""});
    }
    spec.series.push_back(std::move(s));
  }
  return {
      absl::StrCat("plot-",
                   Slug(columns.size() == 1 ? first.label : first.metric_entry),
                   ".svg"),
      RenderSvg(spec)};
}

const ReportColumn* FindColumn(const ReportData& d, const std::string& metric,
                               bool want_cost) {
  const ReportColumn* first_cost = nullptr;
  for (const ReportColumn& c : d.columns) {
    if (!metric.empty()) {
      if (c.metric == metric || c.label == metric) return &c;
      continue;
    }
    const bool cost = c.metric_entry == "latency";
    if (cost == want_cost) {
      // Decode time per token is the cost sparsity is meant to cut.
      if (!want_cost || c.metric == "decode_ms_median") return &c;
      if (first_cost == nullptr) first_cost = &c;
    }
  }
  return first_cost;
}

PlotFile Pareto(const ReportData& d, const ReportColumn& quality,
                const ReportColumn& cost) {
  PlotSpec spec;
  spec.title = absl::StrCat(quality.label, " vs ", cost.label);
  spec.subtitle = "Pareto frontier: no other point is better on both axes";
  spec.x_label = AxisLabel(cost);
  spec.y_label = AxisLabel(quality);
  struct P {
    double x, y;
    std::string label;
  };
  std::vector<P> points;
  for (const ReportRow& r : d.rows) {
    const ReportCell* q = OkCell(r, quality);
    const ReportCell* k = OkCell(r, cost);
    if (q && k) points.push_back({k->value, q->value, ShortLabel(d, r)});
  }
  // Normalise so "better" is smaller on both axes, then sweep by cost.
  auto qkey = [&](double y) { return quality.lower_is_better ? y : -y; };
  auto ckey = [&](double x) { return cost.lower_is_better ? x : -x; };
  std::vector<P> sorted = points;
  std::sort(sorted.begin(), sorted.end(), [&](const P& a, const P& b) {
    if (ckey(a.x) != ckey(b.x)) return ckey(a.x) < ckey(b.x);
    return qkey(a.y) < qkey(b.y);
  });
  PlotSeries frontier;
  frontier.name = "Pareto frontier";
  frontier.highlight = true;
  bool any = false;
  double best = 0;
  for (const P& p : sorted) {
    if (!any || qkey(p.y) < best) {
      frontier.points.push_back({p.x, p.y, ""});
      best = qkey(p.y);
      any = true;
    }
  }
  PlotSeries all;
  all.name = "jobs";
  all.line = false;
  for (const P& p : points) all.points.push_back({p.x, p.y, p.label});
  spec.series.push_back(std::move(all));
  spec.series.push_back(std::move(frontier));
  return {absl::StrCat("plot-pareto-", Slug(quality.label), "-vs-",
                       Slug(cost.label), ".svg"),
          RenderSvg(spec)};
}

}  // namespace

std::vector<PlotFile> MakePlots(const ReportData& d, const std::string& plot,
                                const ReportOptions& options,
                                std::vector<std::string>* notes) {
  std::vector<PlotFile> files;
  if (plot == "pareto") {
    const ReportColumn* quality =
        FindColumn(d, options.pareto_quality, /*want_cost=*/false);
    const ReportColumn* cost =
        FindColumn(d, options.pareto_cost, /*want_cost=*/true);
    if (quality == nullptr || cost == nullptr || quality == cost) {
      notes->push_back(
          "pareto: needs a quality metric and a latency metric in the "
          "results (report.pareto names them); skipped");
      return files;
    }
    files.push_back(Pareto(d, *quality, *cost));
    return files;
  }
  const std::string name = plot.substr(0, plot.size() - 12);  // -vs-sparsity
  const std::vector<std::string> params = SweptParams(d);
  std::map<std::string, std::vector<const ReportColumn*>> by_entry;
  std::vector<std::string> entries;  // Metric index prefixes, in order.
  for (const ReportColumn& c : d.columns) {
    if (name != "metric" && c.metric != name && c.metric_entry != name)
      continue;
    if (c.metric_entry == "latency" && name == "metric") continue;
    if (params.empty()) {
      const std::string entry = c.key.substr(0, c.key.find('|'));
      if (!by_entry.count(entry)) entries.push_back(entry);
      by_entry[entry].push_back(&c);
      continue;
    }
    for (const std::string& p : params) files.push_back(MetricVsParam(d, c, p));
  }
  for (const std::string& entry : entries) {
    files.push_back(MetricByJob(d, by_entry[entry]));
  }
  if (files.empty()) {
    notes->push_back(
        absl::StrCat(plot, ": no metric '", name, "' in the results; skipped"));
  }
  return files;
}

}  // namespace dynsparse
