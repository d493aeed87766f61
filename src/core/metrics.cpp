// The metrics registry: counters, timers (total, count and a window of the
// last samples for percentiles), recompile causes and executables' memory
// plans behind one mutex; the JSON report (the text report, report() and format_report(), is
// lazy/metrics_report.cpp's, made from it). In core/ so that backends can count
// launches and transfers.
#include <algorithm>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "loom/metrics.h"

namespace loom::metrics {
namespace {
struct Timer {
  int64_t total_ns = 0;
  int64_t count = 0;
  std::vector<int64_t> window;  ///< the last kTimerWindow samples, a ring from `next`
  size_t next = 0;
};
struct Registry {
  std::mutex mu;
  std::map<std::string, int64_t> counters;
  std::map<std::string, Timer> timers;
  std::vector<std::string> causes;
  std::map<std::string, std::vector<std::pair<std::string, int64_t>>> executables;
};
std::string percentile_key(double p) { return std::to_string(static_cast<int>(p)) + "%"; }
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

int64_t counter(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.counters.find(name);
  return it == r.counters.end() ? 0 : it->second;
}
int64_t timer_total_ns(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.timers.find(name);
  return it == r.timers.end() ? 0 : it->second.total_ns;
}
int64_t timer_count(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.timers.find(name);
  return it == r.timers.end() ? 0 : it->second.count;
}
std::vector<std::string> recompile_causes() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.causes;
}
void add_counter(const std::string& name, int64_t delta) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.counters[name] += delta;
}
void add_time(const std::string& name, int64_t ns) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  Timer& t = r.timers[name];
  t.total_ns += ns;
  t.count += 1;
  if (t.window.size() < kTimerWindow) {
    t.window.push_back(ns);
  } else {
    t.window[t.next] = ns;
    t.next = (t.next + 1) % kTimerWindow;
  }
}
std::vector<int64_t> timer_samples(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.timers.find(name);
  if (it == r.timers.end()) return {};
  const Timer& t = it->second;
  std::vector<int64_t> out(t.window.begin() + static_cast<std::ptrdiff_t>(t.next), t.window.end());
  out.insert(out.end(), t.window.begin(), t.window.begin() + static_cast<std::ptrdiff_t>(t.next));
  return out;
}
std::vector<std::pair<double, int64_t>> percentiles(std::vector<int64_t> samples) {
  std::vector<std::pair<double, int64_t>> out;
  if (samples.empty()) return out;
  std::sort(samples.begin(), samples.end());
  for (double p : kPercentiles) {
    const size_t i = std::min(samples.size() - 1, static_cast<size_t>(p / 100 * samples.size()));
    out.emplace_back(p, samples[i]);
  }
  return out;
}
void add_recompile_cause(const std::string& cause) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.causes.push_back(cause);
}
void record_executable(const std::string& key,
                       const std::vector<std::pair<std::string, int64_t>>& stats) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.executables[key] = stats;
}
int64_t max_planned_peak_bytes() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  int64_t best = 0;
  for (const auto& [k, stats] : r.executables)
    for (const auto& [name, v] : stats)
      if (name == "planned_peak_bytes") best = std::max(best, v);
  return best;
}
void reset() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.executables.clear();
  r.counters.clear();
  r.timers.clear();
  r.causes.clear();
}

std::string report_json() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  nlohmann::json j;
  j["counters"] = nlohmann::json::object();
  for (const auto& [k, v] : r.counters) j["counters"][k] = v;
  j["timers"] = nlohmann::json::object();
  for (const auto& [k, t] : r.timers) {
    nlohmann::json pct = nlohmann::json::object();
    for (const auto& [p, v] : percentiles(t.window)) pct[percentile_key(p)] = v;
    j["timers"][k] = {{"total_ns", t.total_ns}, {"count", t.count}, {"percentiles", pct}};
  }
  j["recompile_causes"] = r.causes;
  j["executables"] = nlohmann::json::object();
  for (const auto& [k, stats] : r.executables)
    for (const auto& [name, v] : stats) j["executables"][k][name] = v;
  return j.dump(2);
}


}  // namespace loom::metrics
