#include "experiments/report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dynsparse {
namespace {

// Okabe-Ito colours: distinguishable with common colour-vision deficiencies.
constexpr const char* kColors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                   "#E69F00", "#56B4E9", "#000000", "#F0E442"};
constexpr double kWidth = 760, kHeight = 460;
constexpr double kLeft = 78, kRight = 230, kTop = 62, kBottom = 58;

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string TickText(double v, double step) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e5 || a < 1e-3) return absl::StrFormat("%.2g", v);
  // As many decimals as the step needs (2.5 -> 1, 0.25 -> 2, 50 -> 0).
  int decimals = 0;
  while (decimals < 10) {
    const double scaled = step * std::pow(10.0, decimals);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * scaled) break;
    ++decimals;
  }
  return absl::StrFormat("%.*f", decimals, v);
}

// Markers differ in shape too, so series stay apart in grey print.
std::string Marker(int series, double x, double y, const char* color) {
  switch (series % 4) {
    case 0:
      return absl::StrFormat(
          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>", x, y, color);
    case 1:
      return absl::StrFormat(
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"%s\"/>",
          x - 4, y - 4, color);
    case 2:
      return absl::StrFormat(
          "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\"/>", x, y - 5,
          x + 5, y + 4, x - 5, y + 4, color);
    default:
      return absl::StrFormat(
          "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\"/>",
          x, y - 5, x + 5, y, x, y + 5, x - 5, y, color);
  }
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  double raw = (hi - lo) / std::max(1, target);
  if (!std::isfinite(raw) || raw <= 1e-300) raw = 1;  // Degenerate ranges.
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step) * step;
  const double last = std::ceil(hi / step - 1e-9) * step;
  for (int i = 0; first + i * step <= last + step * 1e-9 && i <= 50; ++i) {
    const double v = first + i * step;
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  }
  if (ticks.size() < 2) ticks.push_back(ticks.empty() ? lo : ticks[0] + step);
  return ticks;
}

std::string RenderSvg(const PlotSpec& spec) {
  const bool categorical = !spec.x_categories.empty();
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo;
  double ylo = xlo, yhi = -xlo;
  for (const PlotSeries& s : spec.series) {
    for (const PlotPoint& p : s.points) {
      if (!std::isfinite(p.y)) continue;
      if (!s.horizontal) {
        xlo = std::min(xlo, p.x);
        xhi = std::max(xhi, p.x);
      }
      ylo = std::min(ylo, p.y);
      yhi = std::max(yhi, p.y);
    }
  }
  if (categorical) {
    xlo = -0.5;
    xhi = spec.x_categories.size() - 0.5;
  }
  if (!std::isfinite(xlo)) xlo = 0, xhi = 1;
  if (!std::isfinite(ylo)) ylo = 0, yhi = 1;
  // Pad so markers never sit on the frame.
  if (!categorical) {
    const double xpad = xhi > xlo ? (xhi - xlo) * 0.05 : 0.5;
    xlo -= xpad;
    xhi += xpad;
  }
  const double ypad =
      yhi > ylo ? (yhi - ylo) * 0.08 : std::max(1e-3, std::fabs(yhi) * 0.05);
  ylo -= ypad;
  yhi += ypad;
  const std::vector<double> yticks = NiceTicks(ylo, yhi, 6);
  ylo = std::min(ylo, yticks.front());
  yhi = std::max(yhi, yticks.back());
  std::vector<double> xticks;
  if (categorical) {
    for (size_t i = 0; i < spec.x_categories.size(); ++i) xticks.push_back(i);
  } else {
    xticks = NiceTicks(xlo, xhi, 6);
    xlo = std::min(xlo, xticks.front());
    xhi = std::max(xhi, xticks.back());
  }

  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto X = [&](double x) { return kLeft + (x - xlo) / (xhi - xlo) * pw; };
  auto Y = [&](double y) { return kTop + ph - (y - ylo) / (yhi - ylo) * ph; };

  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
      "font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      kWidth, kHeight, kWidth, kHeight);
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.0f\" y=\"22\" font-size=\"15\" "
                        "font-weight=\"bold\">%s</text>\n",
                        kLeft, Escape(spec.title));
  if (!spec.subtitle.empty()) {
    absl::StrAppendFormat(&svg,
                          "<text x=\"%.0f\" y=\"40\" font-size=\"11\" "
                          "fill=\"#555\">%s</text>\n",
                          kLeft, Escape(spec.subtitle));
  }
  // Grid and ticks.
  const double ystep = yticks.size() > 1 ? yticks[1] - yticks[0] : 1;
  for (double t : yticks) {
    if (t < ylo - 1e-12 || t > yhi + 1e-12) continue;
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                          "y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">"
                          "%s</text>\n",
                          kLeft, Y(t), kLeft + pw, Y(t), kLeft - 6, Y(t) + 4,
                          TickText(t, ystep));
  }
  const double xstep = xticks.size() > 1 ? xticks[1] - xticks[0] : 1;
  for (size_t i = 0; i < xticks.size(); ++i) {
    const double t = xticks[i];
    const std::string text =
        categorical ? spec.x_categories[i] : TickText(t, xstep);
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                          "y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n",
                          X(t), kTop, X(t), kTop + ph);
    if (categorical && spec.x_categories.size() > 4) {
      absl::StrAppendFormat(
          &svg,
          "<text transform=\"translate(%.1f %.1f) rotate(-25)\" "
          "text-anchor=\"end\" font-size=\"10\">%s</text>\n",
          X(t), kTop + ph + 14, Escape(text));
    } else {
      absl::StrAppendFormat(&svg,
                            "<text x=\"%.1f\" y=\"%.1f\" "
                            "text-anchor=\"middle\">%s</text>\n",
                            X(t), kTop + ph + 16, Escape(text));
    }
  }
  absl::StrAppendFormat(&svg,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                        "height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n",
                        kLeft, kTop, pw, ph);
  if (!categorical) {  // Category names label themselves.
    absl::StrAppendFormat(&svg,
                          "<text x=\"%.1f\" y=\"%.1f\" "
                          "text-anchor=\"middle\" font-size=\"13\">%s</text>\n",
                          kLeft + pw / 2, kHeight - 12, Escape(spec.x_label));
  }
  absl::StrAppendFormat(&svg,
                        "<text transform=\"translate(18 %.1f) rotate(-90)\" "
                        "text-anchor=\"middle\" font-size=\"13\">%s</text>\n",
                        kTop + ph / 2, Escape(spec.y_label));

  // Series, clipped to the plot area.
  absl::StrAppendFormat(&svg,
                        "<clipPath id=\"area\"><rect x=\"%.1f\" y=\"%.1f\" "
                        "width=\"%.1f\" height=\"%.1f\"/></clipPath>\n"
                        "<g clip-path=\"url(#area)\">\n",
                        kLeft, kTop, pw, ph);
  std::string labels;
  for (size_t s = 0; s < spec.series.size(); ++s) {
    const PlotSeries& series = spec.series[s];
    const char* color = kColors[s % std::size(kColors)];
    const std::string stroke =
        absl::StrFormat("fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s",
                        color, series.highlight ? "2.5" : "1.6",
                        series.dashed ? " stroke-dasharray=\"6 4\"" : "");
    if (series.horizontal && !series.points.empty() &&
        std::isfinite(series.points[0].y)) {
      const double y = Y(series.points[0].y);
      absl::StrAppendFormat(&svg,
                            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                            "y2=\"%.1f\" %s/>\n",
                            kLeft, y, kLeft + pw, y, stroke);
      continue;
    }
    if (series.line && series.points.size() > 1) {
      std::string d;
      bool pen_down = false;  // A NaN (failed) point breaks the line.
      for (const PlotPoint& p : series.points) {
        if (!std::isfinite(p.y)) {
          pen_down = false;
          continue;
        }
        absl::StrAppendFormat(&d, "%s%.1f %.1f", pen_down ? " L" : "M", X(p.x),
                              Y(p.y));
        pen_down = true;
      }
      absl::StrAppendFormat(&svg, "<path d=\"%s\" %s/>\n", d, stroke);
    }
    for (const PlotPoint& p : series.points) {
      if (!std::isfinite(p.y)) continue;
      if (series.markers) {
        absl::StrAppend(
            &svg, Marker(static_cast<int>(s), X(p.x), Y(p.y), color), "\n");
      }
      if (!p.label.empty()) {
        // Outside the clip, and to the left when it would run off the plot
        // (about 6 px per character at this size).
        const bool left = X(p.x) + 7 + 6.0 * p.label.size() > kLeft + pw;
        absl::StrAppendFormat(&labels,
                              "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" "
                              "fill=\"#333\" text-anchor=\"%s\">%s</text>\n",
                              left ? X(p.x) - 7 : X(p.x) + 7, Y(p.y) - 6,
                              left ? "end" : "start", Escape(p.label));
      }
    }
  }
  svg += "</g>\n";
  svg += labels;

  // Legend.
  double ly = kTop + 8;
  for (size_t s = 0; s < spec.series.size(); ++s) {
    const PlotSeries& series = spec.series[s];
    const char* color = kColors[s % std::size(kColors)];
    const double lx = kLeft + pw + 16;
    if (series.line || series.horizontal) {
      absl::StrAppendFormat(
          &svg,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
          "stroke=\"%s\" stroke-width=\"%s\"%s/>\n",
          lx, ly, lx + 24, ly, color, series.highlight ? "2.5" : "2",
          series.dashed ? " stroke-dasharray=\"6 4\"" : "");
    }
    if (series.markers && !series.horizontal) {
      absl::StrAppend(&svg, Marker(static_cast<int>(s), lx + 12, ly, color),
                      "\n");
    }
    std::string name = series.name;
    if (name.size() > 30) name = name.substr(0, 29) + "…";
    absl::StrAppendFormat(&svg,
                          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s"
                          "</text>\n",
                          lx + 30, ly + 4, Escape(name));
    ly += 18;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace dynsparse
