// `loom info`: prints the version and how this binary was built, so a bug
// report or a benchmark result can say exactly what ran. Reads only
// compile-time facts, the OpenMP runtime and its environment; touches no
// files.
#include <omp.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "loom/omp_env.h"

namespace loom::cli {
namespace {

// True when the compiler instrumented this file with AddressSanitizer
// (GCC defines __SANITIZE_ADDRESS__; Clang reports it via __has_feature).
constexpr bool built_with_asan() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

// How OpenMP's idle threads wait in this process (loom/omp_env.h:
// apply_omp_env_defaults): the variables in effect and who set them.
std::string openmp_wait() {
  std::string s;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"})
    if (const char* v = std::getenv(name)) s += std::string(s.empty() ? "" : " ") + name + "=" + v;
  if (s.empty()) return "libgomp default";
  return s + (std::getenv(kOmpEnvAppliedVar) ? " (loom's default)" : " (set by the user)");
}

void print_info() {
  std::cout << "loom " << LOOM_VERSION << "\n"
#if defined(__clang__)
            << "compiler: clang " << __clang_version__ << "\n"
#elif defined(__GNUC__)
            << "compiler: gcc " << __VERSION__ << "\n"
#endif
            << "c++ standard: " << __cplusplus << "\n"
            << "asserts: "
#ifdef NDEBUG
            << "off\n"
#else
            << "on\n"
#endif
            << "address sanitizer: " << (built_with_asan() ? "on" : "off") << "\n"
            << "openmp threads: " << omp_get_max_threads() << "\n"
            << "openmp wait: " << openmp_wait() << "\n"
            << "hardware threads: " << std::thread::hardware_concurrency() << "\n"
            << "devices: cpu\n";
}

}  // namespace

void add_info_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("info", "Print the version and build configuration");
  cmd->callback(print_info);
}

}  // namespace loom::cli
