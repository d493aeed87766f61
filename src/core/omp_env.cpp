// loom's default OpenMP wait policy (loom/omp_env.h: omp_env_defaults,
// apply_omp_env_defaults). GNU libgomp reads OMP_WAIT_POLICY and
// GOMP_SPINCOUNT once, in its load-time constructor (libgomp/env.c,
// initialize_env), before any code of the program runs; so a process that
// wants a different spin limit must start with it in its environment. loom
// therefore re-executes itself once (/proc/self/exe, same argv, the one
// variable added) when the user has set neither variable. A marker variable
// stops a second exec; a failed exec leaves the process running unchanged.
// Assumes Linux (/proc/self/exe).
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "loom/omp_env.h"

namespace loom {

std::vector<std::pair<std::string, std::string>> omp_env_defaults(
    const std::function<const char*(const char*)>& lookup) {
  auto set = [&](const char* name) {
    const char* v = lookup(name);
    return v != nullptr;
  };
  // The user's choice wins; LOOM_OMP_DEFAULTS=0 keeps OpenMP's own default.
  if (set("OMP_WAIT_POLICY") || set("GOMP_SPINCOUNT") || set(kOmpEnvAppliedVar)) return {};
  const char* opt = lookup("LOOM_OMP_DEFAULTS");
  if (opt && std::string(opt) == "0") return {};
  return {{"GOMP_SPINCOUNT", kLoomGompSpinCount}};
}

bool apply_omp_env_defaults(char** argv) {
  auto env = omp_env_defaults([](const char* name) { return std::getenv(name); });
  if (env.empty() || argv == nullptr || argv[0] == nullptr) return false;
  for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
  setenv(kOmpEnvAppliedVar, "1", 1);
  execv("/proc/self/exe", argv);
  // exec failed (no /proc, seccomp, ...): carry on with OpenMP's defaults.
  for (const auto& [name, value] : env) unsetenv(name.c_str());
  return false;
}

}  // namespace loom
