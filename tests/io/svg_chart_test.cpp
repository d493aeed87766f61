// SVG line charts, structurally: nice and log ticks, tick labels, and a
// rendered page with its axes, one path per series, every point inside its
// plot area and placed by its value (larger y higher up).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "io/svg_chart.h"

namespace loom::testing {
namespace {

using io::nice_ticks;

TEST(SvgChart, NiceTicksAreRoundStepsThatBoundTheData) {
  EXPECT_EQ(nice_ticks(0, 160, 6), (std::vector<double>{0, 20, 40, 60, 80, 100, 120, 140, 160}));
  EXPECT_EQ(nice_ticks(5.61, 9.64, 5), (std::vector<double>{5, 6, 7, 8, 9, 10}));
  // Values a few ulps apart (a flat loss) once made an endless tick loop.
  std::vector<double> flat = nice_ticks(1.0, 1.0000000000000002, 5);
  EXPECT_LE(flat.size(), 1000u);
  EXPECT_FALSE(flat.empty());
  std::vector<double> small = nice_ticks(1e-5, 9.5e-4, 5);
  EXPECT_DOUBLE_EQ(small.front(), 0);
  EXPECT_NEAR(small.back(), 1e-3, 1e-12);
  EXPECT_NEAR(small[1], 2e-4, 1e-12);
  EXPECT_EQ(nice_ticks(3, 3, 5).size() >= 2, true);  // a flat series still gets a range
  EXPECT_EQ(io::log_ticks(300, 17000), (std::vector<double>{100, 1000, 10000, 100000}));
  EXPECT_EQ(io::log_ticks(3, 40), (std::vector<double>{2, 5, 10, 20, 50}));
}

TEST(SvgChart, TickLabelsAreShort) {
  EXPECT_EQ(io::tick_label(0), "0");
  EXPECT_EQ(io::tick_label(0.001), "0.001");
  EXPECT_EQ(io::tick_label(2e-5), "2e-05");
  EXPECT_EQ(io::tick_label(20000), "20000");
  EXPECT_EQ(io::tick_label(1.5), "1.5");
}

struct Path {
  std::string label;
  std::vector<std::pair<double, double>> points;
};

std::vector<Path> paths_of(const std::string& svg) {
  std::vector<Path> out;
  const std::regex path_re("<path class=\"series\" data-label=\"([^\"]*)\" d=\"([^\"]*)\"");
  const std::regex point_re("[ML]([-0-9.]+),([-0-9.]+)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), path_re);
       it != std::sregex_iterator(); ++it) {
    Path p{(*it)[1], {}};
    const std::string d = (*it)[2];
    for (auto m = std::sregex_iterator(d.begin(), d.end(), point_re); m != std::sregex_iterator();
         ++m)
      p.points.emplace_back(std::stod((*m)[1]), std::stod((*m)[2]));
    out.push_back(p);
  }
  return out;
}

TEST(SvgChart, PageHasAxesOnePathPerSeriesAndPointsInRange) {
  io::ChartPage page{"Run & <title>", "sub", {}, 2};
  io::ChartPanel loss{"Loss", "step", "loss", false, {}};
  loss.series.push_back({"train", {1, 2, 3, 4}, {9.5, 7.0, 6.0, 5.5}, "", false});
  loss.series.push_back({"eval", {2, 4}, {6.5, NAN}, "", true});  // NaN is left out
  io::ChartPanel ppl{"perplexity", "step", "ppl", true, {}};
  ppl.series.push_back({"ppl", {2, 4, 6}, {17000, 600, 300}, "#ff7f0e", true});
  page.panels = {loss, ppl};
  const std::string svg = io::render_svg(page);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<title>Run &amp; &lt;title&gt;</title>"), std::string::npos);
  // Two panels: two plot areas, two x and two y axes.
  const std::regex area_re(
      "<rect class=\"plot-area\" x=\"([0-9.]+)\" y=\"([0-9.]+)\" width=\"([0-9.]+)\" "
      "height=\"([0-9.]+)\"");
  std::vector<std::array<double, 4>> areas;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), area_re);
       it != std::sregex_iterator(); ++it)
    areas.push_back(
        {std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4])});
  ASSERT_EQ(areas.size(), 2u);
  auto count = [&](const std::string& s) {
    size_t n = 0;
    for (size_t p = svg.find(s); p != std::string::npos; p = svg.find(s, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<g class=\"axis x\">"), 2u);
  EXPECT_EQ(count("<g class=\"axis y\">"), 2u);
  EXPECT_GE(count("<text class=\"tick\""), 10u);
  EXPECT_EQ(count("<circle class=\"marker\""), 1u + 3u);

  std::vector<Path> paths = paths_of(svg);
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[0].label, "train");
  ASSERT_EQ(paths[0].points.size(), 4u);
  EXPECT_EQ(paths[1].points.size(), 1u);
  ASSERT_EQ(paths[2].points.size(), 3u);
  for (size_t i = 0; i < paths.size(); ++i) {
    const auto& a = areas[i < 2 ? 0 : 1];
    for (auto [x, y] : paths[i].points) {
      EXPECT_GE(x, a[0] - 0.01);
      EXPECT_LE(x, a[0] + a[2] + 0.01);
      EXPECT_GE(y, a[1] - 0.01);
      EXPECT_LE(y, a[1] + a[3] + 0.01);
    }
  }
  // Larger x further right, larger y higher up (smaller SVG y).
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_GT(paths[0].points[i].first, paths[0].points[i - 1].first);
    EXPECT_GT(paths[0].points[i].second, paths[0].points[i - 1].second);  // loss falls
  }
  // Log axis: 17000 -> 600 -> 300 on ticks 100..100000: equal ratios, equal steps.
  const auto& q = paths[2].points;
  const double per_decade = (q[1].second - q[0].second) / std::log10(17000.0 / 600.0);
  EXPECT_NEAR((q[2].second - q[1].second) / std::log10(600.0 / 300.0), per_decade, 0.1);
  EXPECT_EQ(
      error_of([] {
        io::ChartPage bad{"t", "", {{"p", "x", "y", false, {{"s", {1, 2}, {1}, "", false}}}}, 2};
        io::render_svg(bad);
      }),
      "[svg_chart] series 's': 2 x values but 1 y values");
}

// A log axis with subnormal and near-overflow values (a loss that reached
// 1e-320, a perplexity of 1e308) draws no NaN coordinates: such points are
// left out, the rest is drawn.
TEST(SvgChart, LogAxisSkipsValuesOutsideTheNormalRange) {
  io::ChartPage page{"t", "", {}, 1};
  io::ChartPanel ppl{"perplexity", "step", "ppl", true, {}};
  ppl.series.push_back({"ppl", {1, 2, 3, 4}, {1e-320, 5e-324, 3.0, 1.7e308}, "", true});
  page.panels = {ppl};
  const std::string svg = io::render_svg(page);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  std::vector<Path> paths = paths_of(svg);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].points.size(), 1u);
}

}  // namespace
}  // namespace loom::testing
