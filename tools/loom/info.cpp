// `loom info`: prints the version and how this binary was built, so a bug
// report or a benchmark result can say exactly what ran. Reads
// compile-time facts, the OpenMP runtime and its environment, and loads the
// xla backend's PJRT plugin (found as docs/backends.md says) to list its
// API version, platform and devices, and the LOOM_* settings that are set;
// writes no files. `loom info --settings` prints the settings table instead.
#include <omp.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "core/settings.h"
#include "flags.h"
#include "loom/omp_env.h"
#include "loom/xla_plugin.h"

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
    if (const char* v = settings::environment(name))
      s += std::string(s.empty() ? "" : " ") + name + "=" + v;
  if (s.empty()) return "libgomp default";
  return s + (settings::raw(Setting::omp_env_applied) ? " (loom's default)" : " (set by the user)");
}

// The LOOM_* variables that are set (core/settings.def), as openmp_wait()
// prints its own ("LOOM_DEBUG=1 LOOM_CACHE_DIR=/tmp/c"), but not the marker
// that openmp wait reports; an unknown LOOM_* variable (a typo?) comes last.
std::string loom_settings() {
  std::string s;
  for (const settings::Info& in : settings::table())
    if (const auto& v = settings::raw(in.id); v && in.id != Setting::omp_env_applied)
      s += (s.empty() ? "" : " ") + std::string(in.name) + "=" + *v;
  for (const std::string& name : settings::unknown_in_environment())
    s += (s.empty() ? "" : " ") + name + " (not a loom setting)";
  return s.empty() ? "defaults" : s;
}

// ", lazy:xla:0..3" when the xla backend runs here.
std::string xla_devices() {
  backends::xla::XlaInfo x = backends::xla::xla_info();
  if (x.device_count == 0) return "";
  if (x.device_count == 1) return ", lazy:xla:0";
  return ", lazy:xla:0.." + std::to_string(x.device_count - 1);
}

// "PJRT plugin <path>, C API 0.81 (loom built for 0.81), platform cpu (<version>),
// 4 device(s): cpu", or "unavailable: <why>".
std::string xla_line() {
  std::string why = backends::xla::unavailable_xla_reason(/*load=*/true);
  if (!why.empty()) return "unavailable: " + why;
  backends::xla::XlaInfo x = backends::xla::xla_info();
  return "PJRT plugin " + x.plugin_path + ", C API " + x.api_version + " (loom built for " +
         x.header_version + "), platform " + x.platform_name + " (" + x.platform_version + "), " +
         std::to_string(x.device_count) + " device(s): " + x.device_kind;
}

void print_info() {
  const std::string xla = xla_line(), xla_devs = xla_devices();  // loads the plugin first
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
            << "settings: " << loom_settings() << "\n"
            << "hardware threads: " << std::thread::hardware_concurrency() << "\n"
            << "devices: cpu, lazy:cpu" << xla_devs << "\n"
            << "xla: " << xla << "\n";
}

}  // namespace

void add_info_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("info", "Print the version and build configuration");
  static std::string plugin;  // CLI11 writes it while parsing
  static bool table = false;
  cmd->add_option("--xla_plugin", plugin,
                  "PJRT plugin .so for lazy:xla (default: PJRT_DEVICE's pip wheel)");
  add_bool_flag(*cmd, "--settings", table,
                "Print the table of LOOM_* settings (docs/settings.md) and nothing else",
                "loom info");
  cmd->callback([] {
    if (table) {
      std::cout << settings::markdown_table();
      return;
    }
    if (!plugin.empty()) backends::xla::set_pjrt_plugin_path(plugin);
    print_info();
  });
}

}  // namespace loom::cli
