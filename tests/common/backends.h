// The backends the cross-device test suites run on: every registered backend
// (backends::backend_names()), so a backend added to the registry joins them
// without a test edit. What differs per backend (tolerances, whether a suite
// runs it) lives in one table, kBackendTraits, or, for a backend of tests/,
// next to its registration (RegisterBackendTraits); a backend named in
// neither gets the defaults. A suite skips a backend whose unavailable_reason()
// is not empty (its plugin is not installed, ...) with that message:
//
//   INSTANTIATE_TEST_SUITE_P(Devices, Suite, ::testing::ValuesIn(testing::lazy_devices()));
//   TEST_P(Suite, Works) { LOOM_SKIP_IF_UNAVAILABLE(GetParam()); ... }
//
// Assumes every registered backend can be constructed in a test process (its
// constructor does not fail when it cannot run: unavailable_reason says so).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "loom/device.h"

namespace loom::testing {

/// How the cross-device suites treat one backend, compared with lazy:cpu.
struct BackendTraits {
  std::string_view name;
  /// Why the cross-device suites leave this backend out; empty: they run it.
  std::string_view not_cross_device = {};
  /// Results equal lazy:cpu's bit for bit, errors included (the same kernels).
  bool bitwise_with_cpu = false;
  /// Op suite (tests/ops/lazy_forward_test.cpp): largest difference from
  /// lazy:cpu per dtype (absolute, and relative to the reduction length).
  double f32_tol = 1e-5, bf16_tol = 1e-2, f16_tol = 2e-3;
  /// Whole-model suites (golden, ten steps): tolerance against transformers'
  /// fixtures (the fixtures' own 1e-4 on the cpu kernels).
  double model_tol = 1e-4;
  /// Whole-model suites run this backend.
  bool models = true;
};

/// The table: a backend not named here gets BackendTraits' defaults.
inline constexpr BackendTraits kBackendTraits[] = {
    {.name = "cpu"},  // the baseline: lazy:cpu, spelled "lazy"
    {.name = "reference",
     .not_cross_device = "reference is the oracle: OpForward compares every op with it "
                         "directly, and whole models on its scalar loops are too slow"},
    {.name = "sim", .bitwise_with_cpu = true},
    // XLA's own exp/log/tanh/erf approximations, FMA contraction and reordered
    // sums: 5.4e-7 relative at worst over the op table (xla_lower_exec_test.cpp).
    {.name = "xla", .f32_tol = 2e-5},
};

/// The traits of backends that register themselves (BackendRegistrar) from
/// tests/ (tests/backends/null/), added by RegisterBackendTraits.
inline std::vector<BackendTraits>& registered_backend_traits() {
  static std::vector<BackendTraits> traits;
  return traits;
}
/// From a static object next to the backend's BackendRegistrar.
struct RegisterBackendTraits {
  explicit RegisterBackendTraits(BackendTraits t) { registered_backend_traits().push_back(t); }
};

inline BackendTraits backend_traits(std::string_view name) {
  for (const BackendTraits& t : kBackendTraits)
    if (t.name == name) return t;
  for (const BackendTraits& t : registered_backend_traits())
    if (t.name == name) return t;
  BackendTraits defaults;
  defaults.name = name;
  return defaults;
}

/// "lazy" for cpu (lazy:cpu), else "lazy:<backend>".
inline std::string lazy_device_of(std::string_view backend) {
  return backend == "cpu" ? std::string("lazy") : "lazy:" + std::string(backend);
}

/// The registered backends the cross-device suites run, in registry order
/// (cpu, the baseline, included).
inline std::vector<std::string> cross_device_backends() {
  std::vector<std::string> out;
  for (std::string_view name : backends::backend_names())
    if (backend_traits(name).not_cross_device.empty()) out.emplace_back(name);
  return out;
}

/// The lazy devices of cross_device_backends() ("lazy", "lazy:sim", ...);
/// with `models`, only the backends whose traits run whole models.
inline std::vector<std::string> lazy_devices(bool models = false) {
  std::vector<std::string> out;
  for (const std::string& b : cross_device_backends())
    if (!models || backend_traits(b).models) out.push_back(lazy_device_of(b));
  return out;
}

/// The traits of the backend running `device` ("cpu", "lazy", "lazy:sim").
inline BackendTraits device_traits(const std::string& device) {
  return backend_traits(Device(device).backend);
}

/// Empty when `device` can run in this process; else its backend's
/// unavailable_reason() (eager devices always can).
inline std::string unavailable_reason(const std::string& device) {
  Device d(device);
  if (!d.is_lazy()) return {};
  return backends::backend_by_name(d.backend).unavailable_reason();
}

/// A gtest parameter name for a device: "lazy:sim" -> "lazy_sim".
inline std::string device_test_name(std::string device) {
  for (char& ch : device)
    if (ch == ':') ch = '_';
  return device;
}

}  // namespace loom::testing

/// Skips the current test, with the backend's message, when `device` cannot run here.
#define LOOM_SKIP_IF_UNAVAILABLE(device)                                              \
  do {                                                                                \
    const std::string loom_skip_reason = ::loom::testing::unavailable_reason(device); \
    if (!loom_skip_reason.empty()) GTEST_SKIP() << loom_skip_reason;                  \
  } while (0)
