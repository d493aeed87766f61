// Helpers for the xla backend's tests (and the xla lowering's):
// LOOM_REQUIRE_XLA() skips the test with the reason when no PJRT plugin can
// run here, and FAILS it instead under CI (CI=true, set by .ci/run), where
// the plugin must be installed (scripts/setup.sh); run_stablehlo() compiles
// a StableHLO module's text and runs it on host arrays (xla_runtime.h's
// run_mlir).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backends/xla/xla_runtime.h"

namespace loom::testing {

/// True when CI=true (or 1): missing accelerators' plugins are failures there.
inline bool running_under_ci() {
  const char* ci = std::getenv("CI");
  return ci && (std::string(ci) == "true" || std::string(ci) == "1");
}

using backends::xla::HostArray;

/// Runs `mlir` on `inputs` on the process's PJRT client (xla_runtime.h).
inline std::vector<HostArray> run_stablehlo(const std::string& mlir,
                                            const std::vector<HostArray>& inputs, int device = 0) {
  return backends::xla::run_mlir(mlir, inputs, device);
}

}  // namespace loom::testing

/// Skips the calling test (FAILS it under CI) when the xla backend cannot run.
#define LOOM_REQUIRE_XLA()                                                             \
  do {                                                                                 \
    std::string loom_xla_reason = ::loom::backends::xla::unavailable_xla_reason(true); \
    if (!loom_xla_reason.empty()) {                                                    \
      if (::loom::testing::running_under_ci())                                         \
        FAIL() << "CI=true, and the xla backend cannot run: " << loom_xla_reason;      \
      GTEST_SKIP() << "xla backend unavailable: " << loom_xla_reason;                  \
    }                                                                                  \
  } while (0)
