// loom's default OpenMP wait policy (loom/omp_env.h): which variables
// omp_env_defaults() sets for a given environment (the user's choice always
// wins), and, through the `loom` binary, that the re-executed process runs
// with them (`loom info` prints what is in effect and who set it), and that
// `loom` started through the dynamic loader runs (no re-exec of the loader).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "cli/cli_runner.h"
#include "common/scoped_env.h"
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

using testing::ScopedEnv;

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

// `/lib64/ld-linux-x86-64.so.2 build/loom info`: /proc/self/exe is the
// loader there, so re-executing it would make the loader take "info" as the
// program ("info: cannot open shared object file"); loom must run without
// the re-exec and so with libgomp's default.
TEST(OmpEnvDefaults, TheLoomBinaryStartedThroughTheDynamicLoaderRuns) {
  if (testing::loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  std::string loader;
  for (const char* p : {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"})
    if (std::filesystem::exists(p)) loader = p;
  if (loader.empty()) GTEST_SKIP() << "no glibc dynamic loader at a known path";
  testing::TempDir dir;
  ScopedEnv spin("GOMP_SPINCOUNT", std::nullopt), applied(kOmpEnvAppliedVar, std::nullopt),
      opt_out("LOOM_OMP_DEFAULTS", std::nullopt), policy("OMP_WAIT_POLICY", std::nullopt);
  const std::string out = dir.sub("stdout.txt"), err = dir.sub("stderr.txt");
  const std::string cmd =
      testing::shell_quote(loader) + " " + testing::shell_quote(testing::loom_binary_path()) +
      " info >" + testing::shell_quote(out) + " 2>" + testing::shell_quote(err) + " </dev/null";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << testing::read_cli_file(err);
  EXPECT_NE(testing::read_cli_file(out).find("openmp wait: libgomp default\n"), std::string::npos)
      << testing::read_cli_file(out);
}

}  // namespace
}  // namespace loom
