// `loom train`, `loom evaluate` and `loom generate` with a Llama model through
// the built binary, found through the model registry: a tiny Llama trained
// from scratch (--model_type llama + --config_overrides) writes a
// transformers-style LlamaForCausalLM checkpoint that evaluate and generate
// load; generate's greedy output is the same on cpu and lazy (two graphs)
// and without the cache; --task masked-lm on a Llama is one error line.
// Skips when the binary is not built.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "cli/tiny_train.h"  // kGpt2Tokenizer

namespace loom::testing {
namespace {


std::string write_corpus(const TempDir& dir, int n) {
  std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/assets/corpora/austen/prideprejudice.txt");
  std::string line, text;
  for (int i = 0; i < n && std::getline(in, line); ++i) text += line + "\n";
  return dir.write("tiny.txt", text);
}

class LlamaCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  }
  std::vector<std::string> train_flags(const std::string& corpus, const std::string& out) {
    return {"train",
            "--model_type",
            "llama",
            "--config_overrides",
            "num_hidden_layers=1,hidden_size=16,intermediate_size=32,num_attention_heads=4,"
            "num_key_value_heads=2,max_position_embeddings=32",
            "--tokenizer_name",
            kGpt2Tokenizer,
            "--train_file",
            corpus,
            "--validation_split_percentage",
            "20",
            "--block_size",
            "16",
            "--output_dir",
            out,
            "--per_device_train_batch_size",
            "2",
            "--max_steps",
            "3",
            "--learning_rate",
            "0.003",
            "--device",
            "lazy",
            "--disable_tqdm"};
  }
  TempDir dir_;
};

TEST_F(LlamaCli, TrainEvaluateAndGenerate) {
  const std::string corpus = write_corpus(dir_, 80), out = dir_.sub("out");
  CliResult r = run_loom_cli(dir_, train_flags(corpus, out));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  nlohmann::json cfg = nlohmann::json::parse(read_cli_file(out + "/config.json"));
  EXPECT_EQ(cfg.value("model_type", ""), "llama");
  EXPECT_EQ(cfg["architectures"][0], "LlamaForCausalLM");
  EXPECT_EQ(cfg.value("num_key_value_heads", 0), 2);
  EXPECT_EQ(cfg.value("vocab_size", 0), 50257);  // the tokenizer's
  // The tokenizer's bos/eos (<|endoftext|>), not LlamaConfig's defaults 1 / 2.
  EXPECT_EQ(cfg.value("bos_token_id", 0), 50256);
  EXPECT_EQ(cfg.value("eos_token_id", 0), 50256);

  CliResult e = run_loom_cli(dir_, {"evaluate", "--model_name_or_path", out, "--train_file", corpus,
                                    "--validation_split_percentage", "20", "--block_size", "16",
                                    "--output_dir", dir_.sub("eval_out"), "--disable_tqdm"});
  ASSERT_EQ(e.exit_code, 0) << e.err << e.out;
  EXPECT_NE(e.out.find("eval_perplexity"), std::string::npos) << e.out;

  auto generate = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"generate",         "--model_name_or_path", out,
                                     "--tokenizer_name", kGpt2Tokenizer,         "--prompt",
                                     "It is a truth",    "--max_new_tokens",     "8"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_loom_cli(dir_, args);
  };
  CliResult cpu = generate({"--device", "cpu"});
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_EQ(cpu.out.rfind("It is a truth", 0), 0u) << cpu.out;
  CliResult lazy = generate({"--device", "lazy"});
  ASSERT_EQ(lazy.exit_code, 0) << lazy.err;
  EXPECT_EQ(lazy.out, cpu.out);
  EXPECT_NE(lazy.err.find("graphs compiled: 2"), std::string::npos) << lazy.err;
  CliResult no_cache = generate({"--device", "cpu", "--no_cache"});
  EXPECT_EQ(no_cache.out, cpu.out);
}

TEST_F(LlamaCli, ATaskTheModelTypeLacksIsOneErrorLine) {
  const std::string corpus = write_corpus(dir_, 20);
  auto flags = train_flags(corpus, dir_.sub("out"));
  flags.insert(flags.end(), {"--task", "masked-lm"});
  CliResult r = run_loom_cli(dir_, flags);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(count_cli_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("--task masked-lm is not a task of model_type 'llama'"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace loom::testing
