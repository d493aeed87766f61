// Line charts as hand-written SVG 1.1: a page of panels in a grid, each with
// a framed plot area, x and y axes with "nice" ticks (1, 2 or 5 times a power
// of ten; decades on a log axis), tick labels, axis labels, a title, a
// legend, and one <path> per series (plus circle markers where asked). For
// training curves (train/training_curves.h), usable for any x-y data.
//
// Structure a reader (or test) can rely on: the plot area of each panel is
// <rect class="plot-area" x y width height>; each series is
// <path class="series" data-label="..." d="M x,y L x,y ..."/> with every
// point inside its plot area; axes are <g class="axis x"> / <g class="axis
// y"> holding one <text class="tick"> per tick. Non-finite points (and
// points <= 0 on a log axis) are left out of a series.
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace loom::io {

struct ChartSeries {
  std::string label;         ///< legend text
  std::vector<double> x, y;  ///< the points, same length
  std::string color;         ///< CSS color; "" picks the next of a 10-color palette
  bool markers = false;      ///< a circle at every point (for sparse series)
};

struct ChartPanel {
  std::string title, x_label, y_label;
  bool log_y = false;  ///< logarithmic y axis (plots only y in [1e-300, 1e300])
  std::vector<ChartSeries> series;
  /// The x range to cover at least (NaN: the data's), e.g. 0..max_steps so
  /// that panels of one run line up.
  double x_min = NAN, x_max = NAN;
};

struct ChartPage {
  std::string title, subtitle;
  std::vector<ChartPanel> panels;
  int columns = 2;
};

/// The page as a standalone SVG document. Throws loom::Error "[svg_chart]
/// ..." for a series whose x and y lengths differ or columns < 1.
std::string render_svg(const ChartPage& page);

/// Tick values covering [lo, hi] about `target` apart in count: multiples of
/// a step 1, 2 or 5 x 10^k, from floor(lo / step) * step to ceil(hi / step)
/// * step (so the first and last tick bound the data). lo == hi gets a unit
/// range around it.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);
/// Ticks of a log axis over [lo, hi] (both > 0): powers of ten, with 2 and 5
/// times them when the range spans fewer than 3 decades; bounds as nice_ticks.
std::vector<double> log_ticks(double lo, double hi);
/// A tick label: plain decimals in [1e-3, 1e6) ("0.001", "1.5", "20000"),
/// else 3 significant digits with an exponent ("2e-05", "1.5e+07").
std::string tick_label(double v);

}  // namespace loom::io
