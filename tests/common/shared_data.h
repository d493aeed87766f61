// The shared data folder of the tests (real tokenizers, chat templates, corpora):
// $LOOM_SHARED_DATA when set, else ../shared/data beside the source tree
// (LOOM_SOURCE_DIR). .ci/run sets LOOM_SHARED_DATA before it moves the clone to
// its fixed build root, where ../shared is not beside it. Absent data skips a
// test, except under CI=true, where it fails: CI always has shared/ beside it.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace loom::testing {

/// The shared data folder (no trailing slash); it may not exist.
inline std::string shared_data_dir() {
  if (const char* env = std::getenv("LOOM_SHARED_DATA"); env != nullptr && *env != '\0') return env;
  return std::string(LOOM_SOURCE_DIR) + "/../shared/data";
}

/// True under CI=true (or CI=1), where missing shared data is a failure.
inline bool under_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::string(ci) == "true" || std::string(ci) == "1");
}

/// True when shared_data_dir()/<rel> exists. Otherwise returns false, after
/// ADD_FAILURE under CI; the caller then skips the test.
inline bool require_shared(const std::string& rel) {
  if (std::filesystem::exists(shared_data_dir() + "/" + rel)) return true;
  if (under_ci()) ADD_FAILURE() << "shared data missing under CI: " << shared_data_dir() << "/" << rel;
  return false;
}

}  // namespace loom::testing
