// `loom train`'s output is quiet and exact (issue 42, row 12), through the
// built binary: a run too short to log a loss prints no "training curves not
// written" warning; the data line of a token cache it just built does not say
// "(missing)", and one it rebuilds (damaged) says why; results files of an earlier run
// (eval_results.json) do not survive a run that writes none.
// Skips when the binary is not built.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "cli/tiny_train.h"

namespace loom::testing {
namespace {
namespace fs = std::filesystem;

class QuietOutputCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  }
  std::vector<std::string> quiet_flags(const std::vector<std::string>& extra) {
    std::vector<std::string> f = tiny_train_flags(write_tiny_corpus(dir_, 150), dir_.sub("out"));
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  }
  TempDir dir_;
};

TEST_F(QuietOutputCli, AShortRunWarnsAboutNothingAndTheDataLineIsExact) {
  CliResult r = run_loom_cli(
      dir_, quiet_flags({"--max_steps", "1", "--eval_strategy", "no", "--logging_first_step",
                         "false", "--report_to", "tensorboard"}));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::string first = r.out;
  EXPECT_EQ(r.err.find("training curves not written"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("TensorBoard event files in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cached in "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("(missing)"), std::string::npos) << r.out;
  // A run that logs does plot.
  r = run_loom_cli(dir_, quiet_flags({"--max_steps", "2", "--eval_strategy", "no", "--report_to",
                                      "tensorboard", "--overwrite_output_dir"}));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("token cache hit"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir_.sub("out/training_curves.svg"))) << r.out;
  // A damaged cache is rebuilt, and the data line says why.
  const size_t at = first.find("cached in ") + 10;
  const std::string cache = first.substr(at, first.find('\n', at) - at);
  ASSERT_TRUE(fs::exists(cache)) << cache;
  std::ofstream(cache, std::ios::binary | std::ios::trunc) << "not a token file";
  r = run_loom_cli(dir_, quiet_flags({"--max_steps", "1", "--eval_strategy", "no", "--report_to",
                                      "none", "--overwrite_output_dir"}));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("(rebuilt: "), std::string::npos) << r.out;
}

TEST_F(QuietOutputCli, AnEarlierRunsResultsDoNotSurviveOverwriteOutputDir) {
  CliResult r = run_loom_cli(
      dir_, quiet_flags({"--max_steps", "2", "--report_to", "none", "--do_eval", "true"}));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  ASSERT_TRUE(fs::exists(dir_.sub("out/eval_results.json")));
  r = run_loom_cli(dir_, quiet_flags({"--max_steps", "2", "--report_to", "none", "--eval_strategy",
                                      "no", "--overwrite_output_dir"}));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_FALSE(fs::exists(dir_.sub("out/eval_results.json")))
      << "the first run's evaluation survived a run that did not evaluate";
  EXPECT_TRUE(fs::exists(dir_.sub("out/train_results.json")));
}

}  // namespace
}  // namespace loom::testing
