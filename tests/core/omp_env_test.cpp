// loom's default OpenMP wait policy (loom/omp_env.h): which variables
// omp_env_defaults() sets for a given environment (the user's choice always
// wins), and, through the `loom` binary, that the re-executed process runs
// with them (`loom info` prints what is in effect and who set it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "cli/cli_runner.h"
#include "loom/omp_env.h"

namespace loom {
namespace {

using Env = std::map<std::string, std::string>;

std::vector<std::pair<std::string, std::string>> defaults_for(const Env& env) {
  return omp_env_defaults([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(OmpEnvDefaults, SetsTheSpinLimitOnlyWhenTheUserChoseNothing) {
  auto none = defaults_for({});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].first, "GOMP_SPINCOUNT");
  EXPECT_EQ(none[0].second, kLoomGompSpinCount);
  EXPECT_TRUE(defaults_for({{"OMP_WAIT_POLICY", "ACTIVE"}}).empty());
  EXPECT_TRUE(defaults_for({{"OMP_WAIT_POLICY", ""}}).empty()) << "set, even if empty";
  EXPECT_TRUE(defaults_for({{"GOMP_SPINCOUNT", "infinity"}}).empty());
  EXPECT_TRUE(defaults_for({{"LOOM_OMP_DEFAULTS", "0"}}).empty());
  EXPECT_TRUE(defaults_for({{kOmpEnvAppliedVar, "1"}}).empty()) << "applied once, no exec loop";
  EXPECT_EQ(defaults_for({{"LOOM_OMP_DEFAULTS", "1"}}).size(), 1u);
}

// Sets (or unsets, nullopt) one variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(OmpEnvDefaults, TheLoomBinaryRunsWithThemUnlessTheUserSetOne) {
  if (testing::loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  testing::TempDir dir;
  ScopedEnv spin("GOMP_SPINCOUNT", std::nullopt), applied(kOmpEnvAppliedVar, std::nullopt),
      opt_out("LOOM_OMP_DEFAULTS", std::nullopt);
  {
    ScopedEnv policy("OMP_WAIT_POLICY", std::nullopt);
    testing::CliResult r = testing::run_loom_cli(dir, {"info"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(std::string("openmp wait: GOMP_SPINCOUNT=") + kLoomGompSpinCount +
                         " (loom's default)\n"),
              std::string::npos)
        << r.out;
  }
  {
    ScopedEnv policy("OMP_WAIT_POLICY", "PASSIVE");
    testing::CliResult r = testing::run_loom_cli(dir, {"info"});
    EXPECT_NE(r.out.find("openmp wait: OMP_WAIT_POLICY=PASSIVE (set by the user)\n"),
              std::string::npos)
        << r.out;
  }
}

}  // namespace
}  // namespace loom
