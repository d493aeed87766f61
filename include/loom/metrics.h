// Lazy-device metrics, named as PyTorch/XLA names them where they exist:
// counters CachedCompile, UncachedCompile, PersistentCacheHit,
// PersistentCacheMiss, MarkStep, EarlySync, ExecuteCount, InboundData,
// OutboundData (bytes); timers CompileTime, ExecuteTime,
// TransferToDeviceTime, TransferFromDeviceTime (nanoseconds); samples
// TensorsGraphSize (instrs per synced graph); and the cause of every
// recompile (an uncached compile after the first). Timers also keep a window
// of their last samples, for the percentiles of the reports. Memory: counters
// DonatedBytes, DonationVetoed, OutputAllocatedBytes, ArenaAllocatedBytes,
// TransferToDeviceBytes, TransferFromDeviceBytes; eager one-node programs:
// EagerCompile, EagerCachedCompile; per executable its memory
// plan (planned_peak_bytes = arena_bytes + output_bytes, donated_bytes,
// in_place, steps), as XLA's buffer-assignment stats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loom::metrics {

/// Current value of a counter (0 if never touched).
int64_t counter(const std::string& name);
/// Total nanoseconds and number of samples of a timer.
int64_t timer_total_ns(const std::string& name);
int64_t timer_count(const std::string& name);
/// A timer keeps its last kTimerWindow samples for percentiles (PyTorch/XLA
/// keeps a window of 1024 samples per metric too).
inline constexpr size_t kTimerWindow = 1024;
/// The percentiles the reports give, as PyTorch/XLA's metrics_report().
inline constexpr double kPercentiles[] = {1, 5, 10, 20, 50, 80, 90, 95, 99};
/// The last (at most kTimerWindow) samples of a timer, oldest first.
std::vector<int64_t> timer_samples(const std::string& name);
/// (p, value) for each p of kPercentiles over `samples`: the value at index
/// min(n - 1, floor(p / 100 * n)) of the sorted samples (nearest rank, as
/// PyTorch/XLA's report picks them). Empty for no samples.
std::vector<std::pair<double, int64_t>> percentiles(std::vector<int64_t> samples);
/// Recompile causes, oldest first ("input %0 shape f32[8,32] -> f32[8,16]").
std::vector<std::string> recompile_causes();
/// The text report of every timer, counter and recompile cause: format_report(report_json()).
std::string report();
/// The same as a JSON object {"counters": {name: value}, "timers": {name:
/// {"total_ns", "count", "percentiles": {"1%": v, ..., "99%": v}}},
/// "recompile_causes": [...], "executables": {"<key>": {"planned_peak_bytes":
/// ..., ...}}} (written to lazy_metrics.json by `loom train`). Timers hold
/// nanoseconds, except TensorsGraphSize (instructions).
std::string report_json();
/// lazy_metrics.json text as PyTorch/XLA's metrics_report() prints it:
///   Metric: CompileTime
///     TotalSamples: 2
///     Accumulator: 01s204ms163.210us
///     Mean: 602ms081.605us
///     Percentiles: 1%=590ms012.003us; 5%=...; 99%=614ms151.207us
///   Counter: CachedCompile
///     Value: 38
/// then "Recompile causes:" with one numbered line per cause (or "none").
/// Timers whose name ends in "Time" print as times, others as numbers;
/// a file without percentiles (written before they were recorded) prints
/// without them. Throws loom::Error "[metrics] <where>: ..." for text that
/// is not such a JSON object.
std::string format_report(const std::string& json_text, const std::string& where = "<json>");
/// Nanoseconds as PyTorch/XLA writes times: "01m02s003ms004.005us",
/// leading zero units left out ("004.005us", "003ms004.005us").
std::string format_duration_ns(double ns);
/// Clears everything (tests).
void reset();

// Recording (used by the lazy runtime).
void add_counter(const std::string& name, int64_t delta = 1);
void add_time(const std::string& name, int64_t ns);
void add_recompile_cause(const std::string& cause);
/// Records (or replaces) the stats of the executable compiled for `key`
/// (hex graph key): name -> value, e.g. {"planned_peak_bytes", 1048576}.
void record_executable(const std::string& key,
                       const std::vector<std::pair<std::string, int64_t>>& stats);
/// The largest planned_peak_bytes recorded since reset() (0 if none).
int64_t max_planned_peak_bytes();

}  // namespace loom::metrics
