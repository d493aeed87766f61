// The LOOM_* settings table (core/settings.def, core/settings.h): each kind
// parses what it accepts and names the variable, its value and what is
// accepted when it does not; values are read once and cached until reload();
// reads race-free with reload() (TSan); the table is sorted, its defaults
// parse, and docs/settings.md lists exactly this table.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/scoped_env.h"
#include "core/settings.h"
#include "loom/error.h"

namespace loom {
namespace {

using testing::ScopedEnv;

std::string error_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no loom::Error)";
}

TEST(Settings, BoolAcceptsZeroAndOneAndUnsetOrEmptyIsTheDefault) {
  {
    ScopedEnv unset("LOOM_SYNC_EXECUTION", std::nullopt);
    EXPECT_FALSE(settings::flag(Setting::sync_execution));
    EXPECT_FALSE(settings::raw(Setting::sync_execution).has_value());
  }
  {
    ScopedEnv on("LOOM_SYNC_EXECUTION", "1");
    EXPECT_TRUE(settings::flag(Setting::sync_execution));
  }
  {
    ScopedEnv off("LOOM_FUSED_BATCH", "0");
    EXPECT_FALSE(settings::flag(Setting::fused_batch));
  }
  {
    ScopedEnv empty("LOOM_FUSED_BATCH", "");
    EXPECT_TRUE(settings::flag(Setting::fused_batch)) << "empty is the default (on)";
    EXPECT_EQ(settings::raw(Setting::fused_batch), std::optional<std::string>(""));
  }
  ScopedEnv bad("LOOM_FUSED_BATCH", "yes");
  EXPECT_EQ(error_text([] { settings::flag(Setting::fused_batch); }),
            "[settings] LOOM_FUSED_BATCH='yes': expected 0 or 1");
}

TEST(Settings, IntIsDecimalWithinItsRange) {
  {
    ScopedEnv unset("LOOM_CACHE_SIZE", std::nullopt);
    EXPECT_EQ(settings::integer(Setting::cache_size), 1024);
  }
  {
    ScopedEnv set("LOOM_CACHE_SIZE", "17");
    EXPECT_EQ(settings::integer(Setting::cache_size), 17);
  }
  {
    ScopedEnv two("LOOM_DEBUG", "2");
    EXPECT_EQ(settings::integer(Setting::debug), 2);
  }
  {
    ScopedEnv above("LOOM_DEBUG", "3");
    EXPECT_EQ(error_text([] { settings::integer(Setting::debug); }),
              "[settings] LOOM_DEBUG='3': expected an integer in [0, 2]");
  }
  {
    ScopedEnv zero("LOOM_FUSED_CE_MIN_CLASSES", "0");
    EXPECT_EQ(error_text([] { settings::integer(Setting::fused_ce_min_classes); }),
              "[settings] LOOM_FUSED_CE_MIN_CLASSES='0': expected an integer >= 1");
  }
  for (const char* bad : {"12MB", "0x10", " 7", "1e3", "-1", "99999999999999999999"}) {
    ScopedEnv env("LOOM_CACHE_SIZE", bad);
    EXPECT_EQ(error_text([] { settings::integer(Setting::cache_size); }),
              std::string("[settings] LOOM_CACHE_SIZE='") + bad + "': expected an integer >= 0");
  }
}

TEST(Settings, EnumIsOneOfItsChoicesOrUnset) {
  {
    ScopedEnv unset("LOOM_FUSED_CE_BF16_LAYOUT", std::nullopt);
    EXPECT_EQ(settings::text(Setting::fused_ce_bf16_layout), "");
  }
  for (const char* v : {"cols", "rows"}) {
    ScopedEnv set("LOOM_FUSED_CE_BF16_LAYOUT", v);
    EXPECT_EQ(settings::text(Setting::fused_ce_bf16_layout), v);
  }
  ScopedEnv bad("LOOM_FUSED_CE_BF16_LAYOUT", "ROWS");
  EXPECT_EQ(error_text([] { settings::text(Setting::fused_ce_bf16_layout); }),
            "[settings] LOOM_FUSED_CE_BF16_LAYOUT='ROWS': expected cols or rows");
}

TEST(Settings, StringIsTheTextAsSet) {
  {
    ScopedEnv unset("LOOM_CACHE_DIR", std::nullopt);
    EXPECT_EQ(settings::text(Setting::cache_dir), "");
  }
  ScopedEnv set("LOOM_CACHE_DIR", "/some where/cache");
  EXPECT_EQ(settings::text(Setting::cache_dir), "/some where/cache");
}

TEST(Settings, AskingForTheWrongTypeIsAnError) {
  EXPECT_EQ(error_text([] { settings::flag(Setting::cache_size); }),
            "[settings] LOOM_CACHE_SIZE is not read as that type");
  EXPECT_EQ(error_text([] { settings::text(Setting::debug); }),
            "[settings] LOOM_DEBUG is not read as that type");
}

// Read once: a change to the environment shows only after reload().
TEST(Settings, ValuesAreCachedUntilReload) {
  ScopedEnv set("LOOM_MAX_GRAPH_NODES", "5");
  EXPECT_EQ(settings::integer(Setting::max_graph_nodes), 5);
  setenv("LOOM_MAX_GRAPH_NODES", "6", 1);
  EXPECT_EQ(settings::integer(Setting::max_graph_nodes), 5) << "read per call";
  settings::reload();
  EXPECT_EQ(settings::integer(Setting::max_graph_nodes), 6);
}

// Readers on other threads while the test thread reloads: values stay
// valid (TSan checks the publication).
TEST(Settings, ReadsAreRaceFreeWithReload) {
  ScopedEnv dir("LOOM_CACHE_DIR", "/tmp/x");
  std::vector<std::thread> readers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&wrong] {
      for (int i = 0; i < 2000; ++i) {
        if (settings::text(Setting::cache_dir) != "/tmp/x") ++wrong;
        if (settings::integer(Setting::cache_size) != 1024) ++wrong;
      }
    });
  for (int i = 0; i < 200; ++i) settings::reload();
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Settings, TableIsSortedAndEveryDefaultParses) {
  const std::vector<settings::Info>& rows = settings::table();
  ASSERT_FALSE(rows.empty());
  for (size_t k = 0; k < rows.size(); ++k) {
    const settings::Info& in = rows[k];
    EXPECT_EQ(static_cast<size_t>(in.id), k) << in.name;
    EXPECT_EQ(std::string(in.name).rfind("LOOM_", 0), 0u) << in.name;
    if (k > 0) {
      EXPECT_LT(std::string(rows[k - 1].name), std::string(in.name)) << "sorted, unique";
    }
    EXPECT_NE(std::string(in.doc), "") << in.name;
    ScopedEnv unset(in.name, std::nullopt);
    switch (in.kind) {
      case settings::Kind::kBool:
        EXPECT_NO_THROW(settings::flag(in.id)) << in.name;
        break;
      case settings::Kind::kInt:
        EXPECT_NO_THROW(settings::integer(in.id)) << in.name;
        break;
      default:
        EXPECT_NO_THROW(settings::text(in.id)) << in.name;
    }
  }
}

TEST(Settings, UnknownLoomVariablesAreListed) {
  ScopedEnv typo("LOOM_DEBGU", "1");
  std::vector<std::string> unknown = settings::unknown_in_environment();
  EXPECT_NE(std::find(unknown.begin(), unknown.end(), "LOOM_DEBGU"), unknown.end());
  EXPECT_EQ(std::find(unknown.begin(), unknown.end(), "LOOM_DEBUG"), unknown.end());
}

// docs/settings.md holds the table as `loom info --settings` prints it.
TEST(SettingsDoc, MatchesTheTable) {
  std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/docs/settings.md");
  ASSERT_TRUE(in) << "docs/settings.md is missing";
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string want = settings::markdown_table();
  EXPECT_NE(doc.str().find(want), std::string::npos)
      << "docs/settings.md differs from core/settings.def; regenerate its table with "
         "`loom info --settings`. The table is:\n"
      << want;
}

}  // namespace
}  // namespace loom
