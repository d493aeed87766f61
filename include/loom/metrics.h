// Lazy-device metrics, named as PyTorch/XLA names them where they exist:
// counters CachedCompile, UncachedCompile, PersistentCacheHit,
// PersistentCacheMiss, MarkStep, EarlySync, ExecuteCount, InboundData,
// OutboundData (bytes); timers CompileTime, ExecuteTime,
// TransferToDeviceTime, TransferFromDeviceTime (nanoseconds); samples
// TensorsGraphSize (instrs per synced graph); and the cause of every
// recompile (an uncached compile after the first). Memory: counters
// DonatedBytes, DonationVetoed, OutputAllocatedBytes, ArenaAllocatedBytes,
// TransferToDeviceBytes, TransferFromDeviceBytes; eager one-node programs:
// EagerCompile, EagerCachedCompile; per executable its memory
// plan (planned_peak_bytes = arena_bytes + output_bytes, donated_bytes,
// in_place, steps), as XLA's buffer-assignment stats.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::metrics {

/// Current value of a counter (0 if never touched).
int64_t counter(const std::string& name);
/// Total nanoseconds and number of samples of a timer.
int64_t timer_total_ns(const std::string& name);
int64_t timer_count(const std::string& name);
/// Recompile causes, oldest first ("input %0 shape f32[8,32] -> f32[8,16]").
std::vector<std::string> recompile_causes();
/// Multi-line human-readable report of every counter, timer and cause.
std::string report();
/// The same as a JSON object {"counters": {...}, "timers": {...},
/// "recompile_causes": [...], "executables": {"<key>": {"planned_peak_bytes":
/// ..., ...}}} (written to lazy_metrics.json by the Trainer).
std::string report_json();
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
