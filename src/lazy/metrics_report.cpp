// The text metrics report (loom::metrics::format_report): lazy_metrics.json
// printed the way PyTorch/XLA's torch_xla.debug.metrics.metrics_report()
// prints its metrics and counters (torch_xla/csrc/runtime/metrics.cc: a
// "Metric:" block with TotalSamples, Accumulator and Percentiles per metric,
// a "Counter:" block with Value per counter), plus loom's recompile causes.
// Used for lazy_metrics.json files of earlier runs too, so every field but
// the counters and timers' total and count is optional.
#include <cmath>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/json_parse.h"
#include "loom/error.h"
#include "loom/metrics.h"

namespace loom::metrics {
namespace {

bool is_time(const std::string& name) {
  return name.size() >= 4 && name.compare(name.size() - 4, 4, "Time") == 0;
}

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, v == std::floor(v) && std::fabs(v) < 1e15 ? "%.0f" : "%.2f", v);
  return buf;
}

int64_t integer(const nlohmann::json& j, const char* key, const std::string& where,
                const std::string& name) {
  LOOM_CHECK(j.contains(key) && j[key].is_number_integer(), "[metrics] ", where, ": timer '",
             name, "' has no integer '", key, "'");
  return j[key].get<int64_t>();
}

void format_timer(std::ostringstream& out, const std::string& name, const nlohmann::json& t,
                  const std::string& where) {
  LOOM_CHECK(t.is_object(), "[metrics] ", where, ": timer '", name, "' is not an object");
  const int64_t total = integer(t, "total_ns", where, name),
                count = integer(t, "count", where, name);
  auto fmt = [&](double v) { return is_time(name) ? format_duration_ns(v) : format_number(v); };
  out << "Metric: " << name << "\n  TotalSamples: " << count << "\n  Accumulator: " << fmt(total)
      << "\n";
  if (count > 0) out << "  Mean: " << fmt(static_cast<double>(total) / count) << "\n";
  if (!t.contains("percentiles") || !t["percentiles"].is_object() || t["percentiles"].empty())
    return;
  out << "  Percentiles: ";
  bool first = true;
  for (double p : kPercentiles) {
    const std::string key = std::to_string(static_cast<int>(p)) + "%";
    const auto it = t["percentiles"].find(key);
    if (it == t["percentiles"].end() || !it->is_number_integer()) continue;
    out << (first ? "" : "; ") << key << "=" << fmt(it->get<double>());
    first = false;
  }
  out << "\n";
}

}  // namespace

std::string format_duration_ns(double ns) {
  const bool negative = ns < 0;
  double left = std::fabs(ns);
  const double h = std::floor(left / 3.6e12);
  left -= h * 3.6e12;
  const double m = std::floor(left / 6e10);
  left -= m * 6e10;
  const double s = std::floor(left / 1e9);
  left -= s * 1e9;
  const double ms = std::floor(left / 1e6);
  left -= ms * 1e6;
  char buf[96];
  std::string out = negative ? "-" : "";
  bool lead = false;  // a larger unit was written: pad the rest
  auto unit = [&](double v, const char* fmt_pad, const char* suffix) {
    if (v == 0 && !lead) return;
    std::snprintf(buf, sizeof buf, fmt_pad, v);
    out += buf;
    out += suffix;
    lead = true;
  };
  unit(h, "%02.0f", "h");
  unit(m, "%02.0f", "m");
  unit(s, "%02.0f", "s");
  unit(ms, "%03.0f", "ms");
  std::snprintf(buf, sizeof buf, "%07.3f", left / 1e3);
  return out + buf + "us";
}

std::string format_report(const std::string& json_text, const std::string& where) {
  // Depth first: a deeply nested file would overflow the stack while parsed,
  // copied or dumped.
  io::check_json_depth(json_text, "[metrics] " + where);
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  LOOM_CHECK(!j.is_discarded() && j.is_object(), "[metrics] ", where,
             ": not a JSON object (expected lazy_metrics.json)");
  std::ostringstream out;
  if (j.contains("timers") && j["timers"].is_object())
    for (const auto& [name, t] : j["timers"].items()) format_timer(out, name, t, where);
  if (j.contains("counters") && j["counters"].is_object())
    for (const auto& [name, v] : j["counters"].items()) {
      LOOM_CHECK(v.is_number_integer(), "[metrics] ", where, ": counter '", name,
                 "' is not an integer");
      out << "Counter: " << name << "\n  Value: " << v.get<int64_t>() << "\n";
    }
  static const nlohmann::json kNone = nlohmann::json::array();
  const nlohmann::json& causes = j.contains("recompile_causes") ? j["recompile_causes"] : kNone;
  LOOM_CHECK(causes.is_array(), "[metrics] ", where, ": recompile_causes is not a list");
  out << "Recompile causes:" << (causes.empty() ? " none" : "") << "\n";
  for (size_t i = 0; i < causes.size(); ++i)
    out << "  " << i + 1 << ". "
        << (causes[i].is_string() ? causes[i].get<std::string>() : causes[i].dump()) << "\n";
  return out.str();
}

std::string report() { return format_report(report_json()); }

}  // namespace loom::metrics
