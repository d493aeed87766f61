// `loom generate` end to end on a tiny random GPT-2 with the GPT-2 tokenizer
// fixture's vocabulary (50257 ids, 1 layer, 16 wide, saved to a temporary
// directory): greedy output is the same on cpu and lazy, with and without
// the KV cache; the lazy run compiles two graphs; seeded sampling repeats;
// bad flags are one error line.
#include <gtest/gtest.h>

#include <string>

#include "cli/cli_runner.h"
#include "loom/gpt2.h"

namespace loom {
namespace {

std::string gpt2_tokenizer_dir() {
  return std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/tokenizers/gpt2";
}

// Saves a random 1-layer GPT-2 with GPT-2's vocabulary into `dir`/model.
std::string save_tiny_model(const testing::TempDir& dir) {
  GPT2Config c;
  c.n_layer = 1;
  c.n_embd = 16;
  c.n_head = 2;
  c.n_positions = 64;
  c.initializer_range = 0.2;  // peaked logits: greedy choices are not near-ties
  manual_seed(1234);
  GPT2LMHeadModel model(c);
  std::string path = dir.sub("model");
  model.save_pretrained(path);
  return path;
}

class GenerateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
    model_ = save_tiny_model(dir_);
  }
  testing::CliResult run(std::vector<std::string> extra, const std::string& max_new = "10") {
    std::vector<std::string> args = {"generate",         "--model_name_or_path", model_,
                                     "--tokenizer_name", gpt2_tokenizer_dir(),   "--prompt",
                                     "Hello world",      "--max_new_tokens",     max_new};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_loom_cli(dir_, args);
  }
  testing::TempDir dir_;
  std::string model_;
};

TEST_F(GenerateCli, GreedyIsTheSameOnEveryPath) {
  testing::CliResult cpu = run({"--device", "cpu"});
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_EQ(cpu.out.rfind("Hello world", 0), 0u) << "the prompt comes first: " << cpu.out;
  EXPECT_GT(cpu.out.size(), std::string("Hello world\n").size());
  testing::CliResult lazy = run({"--device", "lazy"});
  ASSERT_EQ(lazy.exit_code, 0) << lazy.err;
  EXPECT_EQ(lazy.out, cpu.out);
  EXPECT_NE(lazy.err.find("graphs compiled: 2"), std::string::npos) << lazy.err;
  testing::CliResult no_cache = run({"--device", "cpu", "--no_cache"});
  ASSERT_EQ(no_cache.exit_code, 0) << no_cache.err;
  EXPECT_EQ(no_cache.out, cpu.out);
}

TEST_F(GenerateCli, SeededSamplingRepeats) {
  std::vector<std::string> sample = {"--do_sample", "--temperature", "1.5", "--top_k",
                                     "0",           "--seed",        "7"};
  testing::CliResult a = run(sample), b = run(sample);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  sample.back() = "8";
  EXPECT_NE(run(sample).out, a.out) << "another seed samples another text";
}

// A repeated flag keeps its last value, as on `loom train` (argparse's rule).
TEST_F(GenerateCli, RepeatedFlagKeepsTheLastValue) {
  testing::CliResult r = run({"--max_new_tokens", "3", "--device", "lazy", "--device", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  testing::CliResult three = run({"--device", "cpu"}, "3");
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_EQ(r.out, three.out);
  EXPECT_NE(r.out, run({"--device", "cpu"}, "10").out) << "the first --max_new_tokens was used";
  EXPECT_NE(r.err.find(" on cpu "), std::string::npos) << r.err;
}

TEST_F(GenerateCli, BadValuesAreOneErrorLine) {
  auto expect_one_error_line = [](const testing::CliResult& r, const std::string& what) {
    EXPECT_EQ(r.exit_code, 1) << what;
    EXPECT_EQ(r.err.rfind("loom: error: ", 0), 0u) << what << ": " << r.err;
    EXPECT_EQ(testing::count_cli_lines(r.err), 1) << what << ": " << r.err;
  };
  expect_one_error_line(run({"--do_sample", "--temperature", "0"}), "temperature 0");
  expect_one_error_line(run({"--do_sample", "--top_p", "1.5"}), "top_p 1.5");
  expect_one_error_line(run({"--do_sample", "--top_k", "-1"}), "top_k -1");
  // 2 prompt tokens + 100 > n_positions 64.
  expect_one_error_line(run(std::vector<std::string>{}, "100"), "max_new_tokens 100");
  expect_one_error_line(run(std::vector<std::string>{}, "0"), "max_new_tokens 0");
  EXPECT_NE(run(std::vector<std::string>{}, "0").err.find("max_new_tokens must be greater than 0"),
            std::string::npos);
  testing::CliResult r = run({"--top_kk", "5"});
  expect_one_error_line(r, "--top_kk");
  EXPECT_NE(r.err.find("did you mean --top_k?"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace loom
