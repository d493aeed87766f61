// SVG line charts (svg_chart.h). Layout constants are in pixels of the SVG
// user space; the page is sized from the panel grid. Tick choice: the
// "nice numbers" rule (a step of 1, 2 or 5 x 10^k nearest range / target),
// as in Heckbert, "Nice Numbers for Graph Labels", Graphics Gems (1990).
#include "io/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "loom/error.h"

namespace loom::io {
namespace {

constexpr double kPanelW = 480, kPanelH = 300, kPageMargin = 20, kHeaderH = 64;
constexpr double kPlotLeft = 72, kPlotRight = 16, kPlotTop = 34, kPlotBottom = 48;
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Where a panel's plot area lies on the page, and its data ranges.
struct Frame {
  double x0, y0, w, h;        // plot area, pixels
  double xlo, xhi, ylo, yhi;  // data bounds (log10 of y for a log axis)
  bool log_y;
  double px(double x) const { return x0 + (x - xlo) / (xhi - xlo) * w; }
  double py(double y) const {
    const double v = log_y ? std::log10(y) : y;
    return y0 + h - (v - ylo) / (yhi - ylo) * h;
  }
};

// On a log axis only y in [1e-300, 1e300] is drawn: beyond it the decade
// ticks (10^e) leave the normal double range (10^-324 is 0, 10^309 is inf)
// and their log10 would make NaN coordinates.
constexpr double kLogAxisMin = 1e-300, kLogAxisMax = 1e300;

bool plotted(double x, double y, bool log_y) {
  return std::isfinite(x) && std::isfinite(y) && (!log_y || (y >= kLogAxisMin && y <= kLogAxisMax));
}

// Data bounds over every plotted point; {inf, -inf} when there are none.
void bounds(const ChartPanel& p, bool want_x, double& lo, double& hi) {
  lo = std::numeric_limits<double>::infinity();
  hi = -lo;
  for (const ChartSeries& s : p.series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!plotted(s.x[i], s.y[i], p.log_y)) continue;
      const double v = want_x ? s.x[i] : s.y[i];
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (lo > hi) lo = hi = want_x ? 0 : 1;
}

void draw_axes(std::ostringstream& o, const Frame& f, const ChartPanel& p,
               const std::vector<double>& xt, const std::vector<double>& yt) {
  o << "<g class=\"axis x\">\n";
  for (double t : xt) {
    const double x = f.px(t);
    o << "<line class=\"grid\" x1=\"" << num(x) << "\" y1=\"" << num(f.y0) << "\" x2=\"" << num(x)
      << "\" y2=\"" << num(f.y0 + f.h) << "\" stroke=\"#e6e6e6\"/>\n";
    o << "<text class=\"tick\" x=\"" << num(x) << "\" y=\"" << num(f.y0 + f.h + 16)
      << "\" text-anchor=\"middle\">" << tick_label(t) << "</text>\n";
  }
  o << "<line class=\"axis-line\" x1=\"" << num(f.x0) << "\" y1=\"" << num(f.y0 + f.h) << "\" x2=\""
    << num(f.x0 + f.w) << "\" y2=\"" << num(f.y0 + f.h) << "\" stroke=\"#333\"/>\n";
  o << "<text class=\"label\" x=\"" << num(f.x0 + f.w / 2) << "\" y=\"" << num(f.y0 + f.h + 36)
    << "\" text-anchor=\"middle\">" << esc(p.x_label) << "</text>\n</g>\n";
  o << "<g class=\"axis y\">\n";
  for (double t : yt) {
    const double y = f.py(t);
    o << "<line class=\"grid\" x1=\"" << num(f.x0) << "\" y1=\"" << num(y) << "\" x2=\""
      << num(f.x0 + f.w) << "\" y2=\"" << num(y) << "\" stroke=\"#e6e6e6\"/>\n";
    o << "<text class=\"tick\" x=\"" << num(f.x0 - 6) << "\" y=\"" << num(y + 4)
      << "\" text-anchor=\"end\">" << tick_label(t) << "</text>\n";
  }
  o << "<line class=\"axis-line\" x1=\"" << num(f.x0) << "\" y1=\"" << num(f.y0) << "\" x2=\""
    << num(f.x0) << "\" y2=\"" << num(f.y0 + f.h) << "\" stroke=\"#333\"/>\n";
  const double cx = f.x0 - 56, cy = f.y0 + f.h / 2;
  o << "<text class=\"label\" x=\"" << num(cx) << "\" y=\"" << num(cy)
    << "\" text-anchor=\"middle\" transform=\"rotate(-90 " << num(cx) << " " << num(cy) << ")\">"
    << esc(p.y_label) << "</text>\n</g>\n";
}

void draw_series(std::ostringstream& o, const Frame& f, const ChartSeries& s,
                 const std::string& color) {
  std::string d, marks;
  for (size_t i = 0; i < s.x.size(); ++i) {
    if (!plotted(s.x[i], s.y[i], f.log_y)) continue;
    const std::string x = num(f.px(s.x[i])), y = num(f.py(s.y[i]));
    d += (d.empty() ? "M" : " L") + x + "," + y;
    if (s.markers)
      marks += "<circle class=\"marker\" cx=\"" + x + "\" cy=\"" + y + "\" r=\"3\" fill=\"" +
               color + "\"/>\n";
  }
  o << "<path class=\"series\" data-label=\"" << esc(s.label) << "\" d=\"" << d
    << "\" fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.8\"/>\n"
    << marks;
}

void draw_legend(std::ostringstream& o, const Frame& f, const std::vector<std::string>& labels,
                 const std::vector<std::string>& colors) {
  size_t longest = 0;
  for (const std::string& l : labels) longest = std::max(longest, l.size());
  const double w = 36 + 7.2 * static_cast<double>(longest), h = 8 + 16.0 * labels.size();
  const double x = f.x0 + f.w - w - 6, y = f.y0 + 6;
  o << "<g class=\"legend\">\n<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\""
    << num(w) << "\" height=\"" << num(h)
    << "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n";
  for (size_t i = 0; i < labels.size(); ++i) {
    const double ly = y + 12 + 16.0 * i;
    o << "<line x1=\"" << num(x + 6) << "\" y1=\"" << num(ly) << "\" x2=\"" << num(x + 24)
      << "\" y2=\"" << num(ly) << "\" stroke=\"" << colors[i] << "\" stroke-width=\"2.5\"/>\n"
      << "<text x=\"" << num(x + 28) << "\" y=\"" << num(ly + 4) << "\">" << esc(labels[i])
      << "</text>\n";
  }
  o << "</g>\n";
}

void draw_panel(std::ostringstream& o, const ChartPanel& p, double left, double top,
                size_t& color_index) {
  for (const ChartSeries& s : p.series)  // before anything reads the points
    LOOM_CHECK(s.x.size() == s.y.size(), "[svg_chart] series '", s.label, "': ", s.x.size(),
               " x values but ", s.y.size(), " y values");
  double xlo, xhi, ylo, yhi;
  bounds(p, true, xlo, xhi);
  if (std::isfinite(p.x_min)) xlo = std::min(xlo, p.x_min);
  if (std::isfinite(p.x_max)) xhi = std::max(xhi, p.x_max);
  bounds(p, false, ylo, yhi);
  const std::vector<double> xt = nice_ticks(xlo, xhi, 6);
  const std::vector<double> yt = p.log_y ? log_ticks(ylo, yhi) : nice_ticks(ylo, yhi, 5);
  Frame f{left + kPlotLeft,
          top + kPlotTop,
          kPanelW - kPlotLeft - kPlotRight,
          kPanelH - kPlotTop - kPlotBottom,
          xt.front(),
          xt.back(),
          p.log_y ? std::log10(yt.front()) : yt.front(),
          p.log_y ? std::log10(yt.back()) : yt.back(),
          p.log_y};
  o << "<g class=\"panel\">\n<text class=\"panel-title\" x=\"" << num(f.x0 + f.w / 2) << "\" y=\""
    << num(top + 22) << "\" text-anchor=\"middle\" font-weight=\"bold\">" << esc(p.title)
    << "</text>\n<rect class=\"plot-area\" x=\"" << num(f.x0) << "\" y=\"" << num(f.y0)
    << "\" width=\"" << num(f.w) << "\" height=\"" << num(f.h)
    << "\" fill=\"white\" stroke=\"#999\"/>\n";
  draw_axes(o, f, p, xt, yt);
  std::vector<std::string> labels, colors;
  for (const ChartSeries& s : p.series) {
    const std::string color = s.color.empty() ? kPalette[color_index++ % 10] : s.color;
    draw_series(o, f, s, color);
    labels.push_back(s.label);
    colors.push_back(color);
  }
  if (!labels.empty()) draw_legend(o, f, labels, colors);
  o << "</g>\n";
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / mag;
  const double step = (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  // Values a few ulps apart make first ~ 2^53 and beyond, where ++i no longer
  // moves (an endless loop): count the ticks as an integer, and fall back to
  // the two ends when the count is not small and finite.
  const double count = last - first + 1;
  if (!(step > 0) || !std::isfinite(first) || !(count >= 1 && count <= 1000)) return {lo, hi};
  std::vector<double> out;
  for (int64_t k = 0; k < static_cast<int64_t>(count); ++k) {
    const double t = (first + static_cast<double>(k)) * step;
    out.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return out;
}

std::vector<double> log_ticks(double lo, double hi) {
  const int e0 = static_cast<int>(std::floor(std::log10(lo) + 1e-12));
  const int e1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-12));
  const bool fine = e1 - e0 < 3;
  std::vector<double> all;
  for (int e = e0; e <= std::max(e1, e0 + 1); ++e)
    for (double m : {1.0, 2.0, 5.0})
      if (m == 1.0 || fine) all.push_back(m * std::pow(10.0, e));
  // Keep the ticks from the last one <= lo to the first one >= hi.
  size_t a = 0, b = all.size() - 1;
  while (a + 1 < all.size() && all[a + 1] <= lo * (1 + 1e-12)) ++a;
  while (b > a + 1 && all[b - 1] >= hi * (1 - 1e-12)) --b;
  return std::vector<double>(all.begin() + static_cast<std::ptrdiff_t>(a),
                             all.begin() + static_cast<std::ptrdiff_t>(b) + 1);
}

std::string tick_label(double v) {
  char buf[32];
  const double a = std::fabs(v);
  std::snprintf(buf, sizeof buf, a == 0 || (a >= 1e-3 && a < 1e6) ? "%.6g" : "%.3g", v);
  return buf;
}

std::string render_svg(const ChartPage& page) {
  LOOM_CHECK(page.columns >= 1, "[svg_chart] columns must be >= 1, got ", page.columns);
  const size_t n = page.panels.size(), cols = static_cast<size_t>(page.columns);
  const size_t rows = (n + cols - 1) / cols;
  const double width =
      2 * kPageMargin + kPanelW * static_cast<double>(std::min(cols, std::max<size_t>(n, 1)));
  const double height = kHeaderH + kPanelH * static_cast<double>(rows) + kPageMargin;
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << num(width)
    << "\" height=\"" << num(height) << "\" viewBox=\"0 0 " << num(width) << " " << num(height)
    << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
    << "<title>" << esc(page.title) << "</title>\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n"
    << "<text class=\"title\" x=\"" << num(width / 2)
    << "\" y=\"28\" text-anchor=\"middle\" font-size=\"18\" font-weight=\"bold\">"
    << esc(page.title) << "</text>\n<text class=\"subtitle\" x=\"" << num(width / 2)
    << "\" y=\"48\" text-anchor=\"middle\" fill=\"#555\">" << esc(page.subtitle) << "</text>\n";
  size_t color_index = 0;
  for (size_t i = 0; i < n; ++i) {
    const double left = kPageMargin + kPanelW * static_cast<double>(i % cols);
    const double top = kHeaderH + kPanelH * static_cast<double>(i / cols);
    draw_panel(o, page.panels[i], left, top, color_index);
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace loom::io
