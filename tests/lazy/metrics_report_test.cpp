// The metrics report: timer percentiles over a window of the last samples
// (nearest rank, as PyTorch/XLA's report), the JSON that lazy_metrics.json
// holds, and its text form in PyTorch/XLA's metrics_report() layout.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "common/error_of.h"
#include "loom/metrics.h"

namespace loom::testing {
namespace {

TEST(MetricsReport, PercentilesAreNearestRankOfTheSortedWindow) {
  std::vector<int64_t> samples;
  for (int64_t v = 100; v >= 1; --v) samples.push_back(v * 10);  // 1000, 990, ..., 10
  auto p = metrics::percentiles(samples);
  ASSERT_EQ(p.size(), 9u);
  // Sorted: 10, 20, ..., 1000; index floor(p/100 * 100) = p -> value (p + 1) * 10.
  EXPECT_EQ(p[0], (std::pair<double, int64_t>{1, 20}));
  EXPECT_EQ(p[4], (std::pair<double, int64_t>{50, 510}));
  EXPECT_EQ(p[8], (std::pair<double, int64_t>{99, 1000}));
  auto one = metrics::percentiles({7});
  for (const auto& [pct, v] : one) EXPECT_EQ(v, 7) << pct;
  EXPECT_TRUE(metrics::percentiles({}).empty());
}

TEST(MetricsReport, TimerKeepsTheLastWindowOfSamples) {
  metrics::reset();
  const int64_t n = static_cast<int64_t>(metrics::kTimerWindow) + 10;
  for (int64_t i = 0; i < n; ++i) metrics::add_time("TestTime", i);
  EXPECT_EQ(metrics::timer_count("TestTime"), n);
  EXPECT_EQ(metrics::timer_total_ns("TestTime"), n * (n - 1) / 2);
  std::vector<int64_t> w = metrics::timer_samples("TestTime");
  ASSERT_EQ(w.size(), metrics::kTimerWindow);
  EXPECT_EQ(w.front(), 10);  // the oldest kept, oldest first
  EXPECT_EQ(w.back(), n - 1);
  const nlohmann::json j = nlohmann::json::parse(metrics::report_json());
  EXPECT_EQ(j["timers"]["TestTime"]["count"], n);
  EXPECT_EQ(j["timers"]["TestTime"]["percentiles"]["50%"], 10 + 512);
  metrics::reset();
}

TEST(MetricsReport, DurationsPrintAsPyTorchXlaWritesThem) {
  EXPECT_EQ(metrics::format_duration_ns(4005), "004.005us");
  EXPECT_EQ(metrics::format_duration_ns(3004005), "003ms004.005us");
  EXPECT_EQ(metrics::format_duration_ns(1204163210), "01s204ms163.210us");
  EXPECT_EQ(metrics::format_duration_ns(62e9 + 3e6), "01m02s003ms000.000us");
  EXPECT_EQ(metrics::format_duration_ns(0), "000.000us");
}

TEST(MetricsReport, TextReportHasTimersCountersAndCauses) {
  const std::string json = R"({
    "counters": {"CachedCompile": 38, "UncachedCompile": 2},
    "timers": {"CompileTime": {"total_ns": 1204163210, "count": 2,
                               "percentiles": {"1%": 590012003, "50%": 614151207, "99%": 614151207}},
               "TensorsGraphSize": {"total_ns": 300, "count": 4}},
    "recompile_causes": ["input %0 shape f32[8,32] -> f32[8,16]"]})";
  const std::string text = metrics::format_report(json, "lazy_metrics.json");
  EXPECT_EQ(text,
            "Metric: CompileTime\n"
            "  TotalSamples: 2\n"
            "  Accumulator: 01s204ms163.210us\n"
            "  Mean: 602ms081.605us\n"
            "  Percentiles: 1%=590ms012.003us; 50%=614ms151.207us; 99%=614ms151.207us\n"
            "Metric: TensorsGraphSize\n"
            "  TotalSamples: 4\n"
            "  Accumulator: 300\n"
            "  Mean: 75\n"
            "Counter: CachedCompile\n"
            "  Value: 38\n"
            "Counter: UncachedCompile\n"
            "  Value: 2\n"
            "Recompile causes:\n"
            "  1. input %0 shape f32[8,32] -> f32[8,16]\n");
  EXPECT_EQ(metrics::format_report(R"({"counters": {}})"), "Recompile causes: none\n");
  EXPECT_EQ(error_of([] { metrics::format_report("[1]", "m.json"); }),
            "[metrics] m.json: not a JSON object (expected lazy_metrics.json)");
  EXPECT_NE(error_of([] {
              metrics::format_report(R"({"timers": {"T": {"count": 1}}})", "m.json");
            }).find("timer 'T' has no integer 'total_ns'"),
            std::string::npos);
}

TEST(MetricsReport, InProcessReportIsTheFormattedJson) {
  metrics::reset();
  metrics::add_counter("MarkStep", 3);
  metrics::add_time("ExecuteTime", 2000);
  metrics::add_recompile_cause("a cause");
  EXPECT_EQ(metrics::report(), metrics::format_report(metrics::report_json()));
  EXPECT_NE(metrics::report().find("  Percentiles: 1%=002.000us;"), std::string::npos)
      << metrics::report();
  metrics::reset();
}

}  // namespace
}  // namespace loom::testing
