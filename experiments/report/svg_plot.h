// A small SVG line/scatter plot writer (no plotting library): linear axes
// with rounded ticks, one colour per series, optional dashed reference
// lines, point labels, and a legend to the right of the plot area.
#ifndef DYNSPARSE_EXPERIMENTS_REPORT_SVG_PLOT_H_
#define DYNSPARSE_EXPERIMENTS_REPORT_SVG_PLOT_H_

#include <string>
#include <vector>

namespace dynsparse {

struct PlotPoint {
  double x = 0;
  double y = 0;
  std::string label;  // Drawn beside the point when non-empty.
};

struct PlotSeries {
  std::string name;
  std::vector<PlotPoint> points;
  bool line = true;  // Join the points in order.
  bool markers = true;
  bool dashed = false;      // Reference lines (e.g. dense).
  bool horizontal = false;  // Draw y = points[0].y across the whole x range.
  bool highlight = false;   // Thicker line (e.g. a Pareto frontier).
};

struct PlotSpec {
  std::string title;
  std::string subtitle;  // Small text under the title (the protocol).
  std::string x_label;
  std::string y_label;
  // When set, x values are indexes into these names (categorical axis).
  std::vector<std::string> x_categories;
  std::vector<PlotSeries> series;
};

// Ticks for [lo, hi]: about `target` round values (1, 2, 2.5, 5 x 10^k).
std::vector<double> NiceTicks(double lo, double hi, int target);

std::string RenderSvg(const PlotSpec& spec);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_REPORT_SVG_PLOT_H_
