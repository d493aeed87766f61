// One flag style and one help layout across `loom`'s subcommands (issue 42,
// row 10), through the built binary: every subcommand's --help names types
// as train's does (STRING, INT, FLOAT, [BOOL]; no CLI11 "TEXT", "INT:INT" or
// "=default"), defaults as "[default: x]"; booleans take `--x`, `--x true`
// and `--x=false` on every subcommand; CLI11's parse errors come out in
// loom's words. Skips when the binary is not built.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "cli/cli_runner.h"

namespace loom::testing {
namespace {

class CliStyle : public ::testing::Test {
 protected:
  void SetUp() override {
    if (loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  }
  TempDir dir_;
};

TEST_F(CliStyle, EverySubcommandsHelpHasOneLayout) {
  const std::regex raw_type(R"((\bTEXT\b|[A-Z]+:[A-Z]+|\b(INT|FLOAT|STRING|TEXT)=))");
  for (const char* sub : {"info", "generate", "inspect", "plot", "tokenize", "train", "evaluate"}) {
    CliResult r = run_loom_cli(dir_, {sub, "--help"});
    ASSERT_EQ(r.exit_code, 0) << sub << ": " << r.err;
    EXPECT_FALSE(std::regex_search(r.out, raw_type)) << sub << " --help:\n" << r.out;
  }
  CliResult g = run_loom_cli(dir_, {"generate", "--help"});
  EXPECT_NE(g.out.find("--max_new_tokens INT"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("[default: 20]"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("--do_sample [BOOL]"), std::string::npos) << g.out;
  CliResult t = run_loom_cli(dir_, {"tokenize", "--help"});
  EXPECT_NE(t.out.find("--add_special_tokens [BOOL]"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("--tokenizer_name STRING"), std::string::npos) << t.out;
}

TEST_F(CliStyle, BooleansTakeTheSameFormsOnEverySubcommand) {
  const std::string input = dir_.write("in.jsonl", "\"hello world\"\n");
  const std::string tok = std::string(LOOM_SOURCE_DIR) + "/assets/tokenizers/gpt2";
  for (const std::vector<std::string>& form :
       {std::vector<std::string>{"--add_special_tokens"},
        std::vector<std::string>{"--add_special_tokens", "true"},
        std::vector<std::string>{"--add_special_tokens=false"}}) {
    std::vector<std::string> args = {"tokenize"};
    args.insert(args.end(), form.begin(), form.end());
    args.insert(args.end(), {"--tokenizer_name", tok, "--input_file", input});
    CliResult r = run_loom_cli(dir_, args);
    EXPECT_EQ(r.exit_code, 0) << form[0] << ": " << r.err;
    EXPECT_EQ(r.out, "[31373,995]\n") << form[0];  // GPT-2 adds no special tokens
  }
  expect_one_error_line(run_loom_cli(dir_, {"tokenize", "--add_special_tokens", "maybe"}),
                        "[loom tokenize] --add_special_tokens: expected true or false, got 'maybe'");
  expect_one_error_line(run_loom_cli(dir_, {"plot", "--no_png=maybe", "x"}),
                        "[loom plot] --no_png: expected true or false, got 'maybe'");
}

TEST_F(CliStyle, ParseErrorsAreInLoomsWords) {
  expect_one_error_line(run_loom_cli(dir_, {"generate", "--prompt"}), "--prompt: needs a value");
  expect_one_error_line(run_loom_cli(dir_, {"-v"}),
                        "unknown flag '-v' (see loom --help; the version is --version)");
  CliResult r = run_loom_cli(dir_, {"generate", "--max_new_tokens", "abc"});
  expect_one_error_line(r, "--max_new_tokens");
  EXPECT_EQ(r.err.find("Could not convert"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace loom::testing
