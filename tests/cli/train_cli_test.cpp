// Tests of `loom train` / `loom evaluate` through the built binary: a tiny
// GPT-2 (2 layers, width 16) trained from scratch for a few steps on the
// first lines of a vendored novel writes the checkpoint, results and
// lazy_metrics.json files; `loom evaluate` reproduces the held-out loss; bad
// flags, missing files, a CSV without the column and a corrupt checkpoint end
// with one "loom: error:" line and exit code 1. Skips when the binary is not built.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "cli/tiny_train.h"

namespace loom::testing {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(read_cli_file(path), nullptr, /*allow_exceptions=*/false);
}

class LoomCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (loom_binary_path().empty())
      GTEST_SKIP() << "the loom binary is not built next to the tests";
  }
  TempDir dir_;
};

TEST_F(LoomCli, TrainTinyGpt2WritesCheckpointsResultsAndMetrics) {
  const std::string corpus = write_tiny_corpus(dir_, 150);
  const std::string out = dir_.sub("out");
  // The file gives max_steps 2 and learning_rate; the command line's max_steps 4 wins.
  const std::string config =
      dir_.write("config.json", R"({"max_steps": 2, "learning_rate": 0.003, "block_size": 16,
                         "logging_steps": 1})");
  auto flags = tiny_train_flags(corpus, out);
  flags.insert(flags.end(), {"--config", config, "--max_steps", "4"});
  CliResult r = run_loom_cli(dir_, flags);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;

  for (const char* f : {"checkpoint-2/model.safetensors", "checkpoint-4/model.safetensors",
                        "checkpoint-4/optimizer.safetensors", "checkpoint-4/trainer_state.json",
                        "checkpoint-4/vocab.json", "model.safetensors", "config.json",
                        "trainer_state.json", "training_args.json", "all_results.json"})
    EXPECT_TRUE(fs::exists(out + "/" + f)) << f;

  nlohmann::json state = read_json(out + "/trainer_state.json");
  EXPECT_EQ(state.value("global_step", -1), 4);
  nlohmann::json args = read_json(out + "/training_args.json");
  EXPECT_DOUBLE_EQ(args.value("learning_rate", 0.0), 0.003);  // from the file
  EXPECT_EQ(args.value("disable_tqdm", false), true);         // bare boolean flag
  EXPECT_EQ(args.value("logging_first_step", false), true);   // "--flag true"
  nlohmann::json cfg = read_json(out + "/config.json");
  EXPECT_EQ(cfg.value("n_layer", 0), 2);
  EXPECT_EQ(cfg.value("n_embd", 0), 16);
  EXPECT_EQ(cfg.value("vocab_size", 0), 50257);  // the tokenizer's

  nlohmann::json eval = read_json(out + "/eval_results.json");
  ASSERT_TRUE(eval.contains("eval_loss")) << eval.dump();
  const double loss = eval["eval_loss"].get<double>();
  EXPECT_NEAR(eval.value("eval_perplexity", 0.0), std::exp(loss), 1e-6 * std::exp(loss));
  EXPECT_LT(loss, std::log(50257.0) + 0.5);  // no worse than uniform over the vocabulary

  nlohmann::json lazy = read_json(out + "/lazy_metrics.json");
  ASSERT_FALSE(lazy.is_discarded());
  EXPECT_NE(lazy.dump().find("UncachedCompile"), std::string::npos) << lazy.dump();
  EXPECT_NE(r.out.find("***** train metrics *****"), std::string::npos) << r.out;

  // The same split and model: loom evaluate gives the same held-out loss.
  CliResult e =
      run_loom_cli(dir_, {"evaluate", "--model_name_or_path", out, "--train_file", corpus,
                          "--validation_split_percentage", "20", "--block_size", "16", "--device",
                          "lazy", "--output_dir", dir_.sub("eval_out"), "--disable_tqdm"});
  ASSERT_EQ(e.exit_code, 0) << e.err << e.out;
  EXPECT_NE(e.out.find("eval_perplexity"), std::string::npos) << e.out;
  nlohmann::json again = read_json(dir_.sub("eval_out/eval_results.json"));
  EXPECT_NEAR(again.value("eval_loss", 0.0), loss, 1e-4);

  // Without --output_dir evaluate writes nothing: no ./trainer_output/runs/
  // TensorBoard files in the working directory either.
  const std::string cwd = dir_.sub("eval_cwd");
  std::filesystem::create_directories(cwd);
  const std::string cmd = "cd " + shell_quote(cwd) + " && " + shell_quote(loom_binary_path()) +
                          " evaluate --model_name_or_path " + shell_quote(out) +
                          " --train_file " + shell_quote(corpus) +
                          " --validation_split_percentage 20 --block_size 16 --device lazy"
                          " --disable_tqdm >/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(std::filesystem::is_empty(cwd)) << "loom evaluate without --output_dir wrote files";

  // A corrupt checkpoint: one error line, no crash.
  std::ofstream(out + "/checkpoint-2/model.safetensors", std::ios::trunc) << "not safetensors";
  CliResult c = run_loom_cli(dir_, {"evaluate", "--model_name_or_path", out + "/checkpoint-2",
                                    "--train_file", corpus, "--block_size", "16"});
  expect_one_error_line(c, "model.safetensors");
  auto resume = tiny_train_flags(corpus, out);
  resume.insert(resume.end(), {"--block_size", "16", "--max_steps", "6", "--resume_from_checkpoint",
                               out + "/checkpoint-2"});
  expect_one_error_line(run_loom_cli(dir_, resume), "checkpoint-2");
}

TEST_F(LoomCli, MisspelledFlagSuggestsTheClosestName) {
  CliResult r = run_loom_cli(dir_, {"train", "--lerning_rate", "1e-3"});
  expect_one_error_line(r, "did you mean --learning_rate?");
  r = run_loom_cli(dir_, {"evaluate", "--valdation_file", "x.txt"});
  expect_one_error_line(r, "did you mean --validation_file?");
  const std::string config = dir_.write("bad.json", R"({"per_device_batch_size": 4})");
  r = run_loom_cli(dir_, {"train", "--config", config});
  expect_one_error_line(r, "did you mean 'per_device_eval_batch_size'?");
}

TEST_F(LoomCli, BadValuesNameTheFlag) {
  const std::string corpus = write_tiny_corpus(dir_, 20);
  auto flags = tiny_train_flags(corpus, dir_.sub("out"));
  flags.insert(flags.end(), {"--max_steps", "two"});
  expect_one_error_line(run_loom_cli(dir_, flags), "max_steps");
  flags = tiny_train_flags(corpus, dir_.sub("out"));
  flags.insert(flags.end(), {"--task", "translation"});
  expect_one_error_line(run_loom_cli(dir_, flags), "--task");
  flags = tiny_train_flags(corpus, dir_.sub("out"));
  flags[4] = "n_layers=2";  // --config_overrides with a misspelled key
  expect_one_error_line(run_loom_cli(dir_, flags), "did you mean 'n_layer'?");
}

TEST_F(LoomCli, MissingTrainFileIsOneErrorLine) {
  const std::string missing = dir_.sub("no_such_corpus.txt");
  CliResult r = run_loom_cli(dir_, tiny_train_flags(missing, dir_.sub("out")));
  expect_one_error_line(r, "no_such_corpus.txt");
  EXPECT_FALSE(fs::exists(dir_.sub("out/checkpoint-2")));
}

TEST_F(LoomCli, CsvWithoutTheTextColumnIsOneErrorLine) {
  const std::string csv = dir_.write("reviews.csv", "sentence,label\n\"a fine film\",1\nbad,0\n");
  auto flags = tiny_train_flags(csv, dir_.sub("out"));
  flags.insert(flags.end(), {"--text_column", "review"});
  CliResult r = run_loom_cli(dir_, flags);
  expect_one_error_line(r, "'review'");
}

}  // namespace
}  // namespace loom::testing
