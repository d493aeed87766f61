// The metrics registry: counters, timers, recompile causes and executables'
// memory plans behind one mutex; text and JSON reports. In core/ so that
// backends can count launches and transfers.
#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "loom/metrics.h"

namespace loom::metrics {
namespace {
struct Timer {
  int64_t total_ns = 0;
  int64_t count = 0;
};
struct Registry {
  std::mutex mu;
  std::map<std::string, int64_t> counters;
  std::map<std::string, Timer> timers;
  std::vector<std::string> causes;
  std::map<std::string, std::vector<std::pair<std::string, int64_t>>> executables;
};
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
  r.timers[name].total_ns += ns;
  r.timers[name].count += 1;
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
  for (const auto& [k, t] : r.timers)
    j["timers"][k] = {{"total_ns", t.total_ns}, {"count", t.count}};
  j["recompile_causes"] = r.causes;
  j["executables"] = nlohmann::json::object();
  for (const auto& [k, stats] : r.executables)
    for (const auto& [name, v] : stats) j["executables"][k][name] = v;
  return j.dump(2);
}

std::string report() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::ostringstream out;
  for (const auto& [k, v] : r.counters) out << "Counter: " << k << " = " << v << "\n";
  for (const auto& [k, t] : r.timers)
    out << "Metric: " << k << " total=" << double(t.total_ns) / 1e6 << "ms count=" << t.count
        << "\n";
  for (const auto& c : r.causes) out << "Recompile: " << c << "\n";
  for (const auto& [k, stats] : r.executables) {
    out << "Executable: " << k;
    for (const auto& [name, v] : stats) out << " " << name << "=" << v;
    out << "\n";
  }
  return out.str();
}

}  // namespace loom::metrics
