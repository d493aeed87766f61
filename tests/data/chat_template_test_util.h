// Helpers for the chat-template tests: fixture paths (tests/fixtures/chat_templates/, written
// by tools/gen_chat_template_fixtures.py), the shared data folder
// (tests/common/shared_data.h), and the fixed clock
// the fixtures were rendered with (strftime_now at 2025-03-14 12:00 local time).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/shared_data.h"

namespace loom::testing_chat {

using OJson = nlohmann::ordered_json;

inline std::string fixture_path(const std::string& name) {
  return std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/chat_templates/" + name;
}

using loom::testing::require_shared;
using loom::testing::shared_data_dir;

inline OJson load_fixture(const std::string& name) {
  std::ifstream in(fixture_path(name));
  std::stringstream ss;
  ss << in.rdbuf();
  return OJson::parse(ss.str());
}

/// 2025-03-14 12:00:00 local time, the generator's strftime_now clock.
inline std::time_t fixed_now() {
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mon = 2;
  tm.tm_mday = 14;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  return std::mktime(&tm);
}

}  // namespace loom::testing_chat
