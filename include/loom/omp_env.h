// loom's default OpenMP wait policy for its own processes (docs/cpu_backend.md,
// "Threading"): GNU libgomp's idle threads spin 300,000 iterations (about
// 0.2 ms) before they sleep; loom's executables start with a shorter spin
// unless the user chose a policy.
//
//   int main(int argc, char** argv) {
//     loom::apply_omp_env_defaults(argv);  // first line: may re-execute once
//     ...
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace loom {

/// The spin limit (iterations) loom gives GNU OpenMP's idle threads before
/// they sleep, when the user chose no wait policy (bench/history/2026-12-milestone2.md,
/// "Speed, part 2" has the measurements).
inline constexpr const char* kLoomGompSpinCount = "10000";
/// Set in the environment of a process that apply_omp_env_defaults()
/// re-executed (so it happens once).
inline constexpr const char* kOmpEnvAppliedVar = "LOOM_OMP_ENV_APPLIED";

/// The environment variables loom sets for OpenMP, given `lookup` (getenv):
/// {{"GOMP_SPINCOUNT", kLoomGompSpinCount}}, or nothing when OMP_WAIT_POLICY,
/// GOMP_SPINCOUNT or kOmpEnvAppliedVar is set, or LOOM_OMP_DEFAULTS=0.
/// Never throws.
std::vector<std::pair<std::string, std::string>> omp_env_defaults(
    const std::function<const char*(const char*)>& lookup);

/// Call first thing in main(argc, argv): when omp_env_defaults() has
/// something to set, sets it and re-executes /proc/self/exe with `argv`
/// (libgomp reads its environment once, when it loads, so only a new process
/// image sees it). Does not return then; returns false when nothing needed
/// setting, /proc/self/exe is not this program (started through the dynamic
/// loader, `ld-linux-x86-64.so.2 loom ...`: no exec) or the exec failed
/// (the process goes on with OpenMP's defaults, its environment unchanged).
bool apply_omp_env_defaults(char** argv);

}  // namespace loom
