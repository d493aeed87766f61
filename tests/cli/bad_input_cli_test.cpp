// Issue 15's bad inputs through the built `loom` binary: each ends in exactly
// one "loom: error:" line naming the file or flag and the bad value, exit 1
// (no signal, no std::terminate, no bad_alloc), before anything large is
// allocated — or, for a batch larger than the data, one warning line. Skips
// when the binary is not built.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "cli/tiny_train.h"  // kGpt2Tokenizer
#include "loom/output_dir_lock.h"

namespace loom::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBertTokenizer =
    std::string(LOOM_SOURCE_DIR) + "/assets/tokenizers/bert-base-uncased";

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

class LoomBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    if (loom_binary_path().empty())
      GTEST_SKIP() << "the loom binary is not built next to the tests";
  }
  std::string corpus(int lines) {
    std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/assets/corpora/austen/prideprejudice.txt");
    std::string line, text;
    for (int i = 0; i < lines && std::getline(in, line); ++i) text += line + "\n";
    return dir_.write("tiny.txt", text);
  }
  // A tiny from-scratch GPT-2 run of one step on `train_file`.
  std::vector<std::string> gpt2_flags(const std::string& train_file,
                                      const std::string& overrides =
                                          "n_layer=1,n_embd=16,"
                                          "n_head=2,n_positions=32") {
    return {"train",
            "--model_type",
            "gpt2",
            "--config_overrides",
            overrides,
            "--tokenizer_name",
            kGpt2Tokenizer,
            "--train_file",
            train_file,
            "--block_size",
            "16",
            "--output_dir",
            dir_.sub("out"),
            "--max_steps",
            "1",
            "--save_strategy",
            "no",
            "--disable_tqdm"};
  }
  // A tiny from-scratch BERT classifier of one step on CSV files.
  std::vector<std::string> bert_flags(const std::string& train, const std::string& valid) {
    return {"train",
            "--model_type",
            "bert",
            "--task",
            "text-classification",
            "--config_overrides",
            "num_hidden_layers=1,hidden_size=16,num_attention_heads=2,intermediate_size=32,"
            "max_position_embeddings=64",
            "--tokenizer_name",
            kBertTokenizer,
            "--train_file",
            train,
            "--validation_file",
            valid,
            "--do_eval",
            "--text_column",
            "sentence",
            "--label_column",
            "label",
            "--output_dir",
            dir_.sub("out"),
            "--max_steps",
            "1",
            "--save_strategy",
            "no",
            "--disable_tqdm"};
  }
  TempDir dir_;
};

TEST_F(LoomBadInput, NoSubcommandIsAnErrorLineThenUsage) {
  CliResult r = run_loom_cli(dir_, {});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("loom: error: a subcommand is required (info, generate", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("Usage: loom"), std::string::npos) << r.err;
}

TEST_F(LoomBadInput, StrayPositionalWordIsAnError) {
  // Before: "stray" silently replaced --output_dir's value.
  CliResult r = run_loom_cli(dir_, {"train", "--output_dir", dir_.sub("out"), "stray"});
  expect_one_error_line(r, "[loom train] unexpected argument 'stray'");
  EXPECT_FALSE(fs::exists(dir_.sub("stray")));
}

TEST_F(LoomBadInput, NumbersAreDecimalAndWithinInt64) {
  expect_one_error_line(run_loom_cli(dir_, {"train", "--learning_rate", "0x10"}),
                        "learning_rate: expected a number, got '0x10'");
  expect_one_error_line(run_loom_cli(dir_, {"train", "--max_steps", "99999999999999999999"}),
                        "max_steps: expected an integer within int64");
  expect_one_error_line(run_loom_cli(dir_, {"train", "--validation_split_percentage", "0x10"}),
                        "--validation_split_percentage: expected an integer, got '0x10'");
  // `loom generate`'s own options: CLI11 alone read "0x10" as 16.
  expect_one_error_line(run_loom_cli(dir_, {"generate", "--max_new_tokens", "0x10"}),
                        "--max_new_tokens: expected an integer, got '0x10'");
  expect_one_error_line(run_loom_cli(dir_, {"generate", "--top_k", "99999999999999999999"}),
                        "--top_k: expected an integer within int64");
  expect_one_error_line(run_loom_cli(dir_, {"generate", "--temperature", "0x1p1"}),
                        "--temperature: expected a number, got '0x1p1'");
  auto flags = gpt2_flags(corpus(20), "n_layer=0x10");
  expect_one_error_line(run_loom_cli(dir_, flags),
                        "[config_overrides] n_layer: expected an integer, got '0x10'");
}

TEST_F(LoomBadInput, HugeWorkerCountIsAnError) {
  // Before: "terminate called without an active exception", exit 134.
  auto flags = gpt2_flags(corpus(20));
  flags.insert(flags.end(), {"--dataloader_num_workers", "100000"});
  expect_one_error_line(run_loom_cli(dir_, flags),
                        "dataloader_num_workers: must be in [0, 256], got 100000");
}

TEST_F(LoomBadInput, DeeplyNestedJsonIsAnErrorNotASegfault) {
  fs::create_directories(dir_.sub("model"));
  dir_.write("model/config.json", "{\"model_type\": \"gpt2\", \"x\": " + nested(200000) + "}");
  CliResult r =
      run_loom_cli(dir_, {"evaluate", "--model_name_or_path", dir_.sub("model"), "--tokenizer_name",
                          kGpt2Tokenizer, "--validation_file", corpus(20)});
  expect_one_error_line(r, dir_.sub("model/config.json") + ": JSON nested deeper than 1000 levels");
  r = run_loom_cli(dir_, {"generate", "--model_name_or_path", dir_.sub("model")});
  expect_one_error_line(r, "JSON nested deeper than 1000 levels");
  const std::string jsonl =
      dir_.write("deep.jsonl", "{\"text\": \"a b c\"}\n{\"text\": " + nested(200000) + "}\n");
  auto flags = gpt2_flags(jsonl);
  expect_one_error_line(run_loom_cli(dir_, flags),
                        "[jsonl] " + jsonl + ":2: JSON nested deeper than 1000 levels");
}

TEST_F(LoomBadInput, ModelLargerThanMemoryIsRefusedBeforeAllocating) {
  // Before: allocation until bad_alloc / SIGSEGV / the OOM killer.
  auto flags = gpt2_flags(corpus(20), "n_layer=100000");
  CliResult r = run_loom_cli(dir_, flags);
  expect_one_error_line(r, "[loom train] n_layer 100000, n_embd 768");
  EXPECT_NE(r.err.find("of memory available"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("loom train:"), std::string::npos) << "no plan line: nothing was built";
}

TEST_F(LoomBadInput, LabelsAreCheckedAgainstNumLabelsAtLoadTime) {
  const std::string valid = dir_.write("valid.csv", "sentence,label\ngood,1\nbad,0\n");
  const std::string train = dir_.write("train.csv", "sentence,label\ngood,1\nbad,0\nok,1\n");
  // -1 in the validation file failed only after training had finished.
  const std::string neg = dir_.write("neg.csv", "sentence,label\ngood,1\nbad,-1\n");
  CliResult r = run_loom_cli(dir_, bert_flags(train, neg));
  expect_one_error_line(r, "--validation_file '" + neg + "': label -1 is outside [0, 2)");
  EXPECT_EQ(r.out.find("loom train:"), std::string::npos) << "rejected before training";
  r = run_loom_cli(dir_, bert_flags(neg, valid));
  expect_one_error_line(r, "--train_file '" + neg + "': label -1 is outside");
  const std::string huge = dir_.write("huge.csv", "sentence,label\ngood,99999999999999999999\n");
  r = run_loom_cli(dir_, bert_flags(huge, valid));
  expect_one_error_line(r, "label 99999999999999999999 is beyond int64");
}

// Issue 13: integer labels had to be 0..num_labels-1 ({1, 2} or {0, 1, 5} were errors;
// before that, a label of 10^9 made a 10^9-class head). They are now remapped as
// run_glue's label_to_id: sorted distinct labels -> 0..n-1, kept in id2label / label2id.
TEST_F(LoomBadInput, IntegerLabelsAreRemappedAsRunGlue) {
  struct Case {
    std::string train, valid;
    nlohmann::json id2label, label2id;
  };
  const std::vector<Case> cases = {
      {"good,1\nbad,2\nok,1\n", "good,2\nbad,1\n", {{"0", "1"}, {"1", "2"}}, {{"1", 0}, {"2", 1}}},
      {"good,5\nbad,0\nok,1\n",
       "good,1\nbad,5\n",
       {{"0", "0"}, {"1", "1"}, {"2", "5"}},
       {{"0", 0}, {"1", 1}, {"5", 2}}},
      {"good,1000000000\nbad,0\n",
       "good,0\nbad,1000000000\n",
       {{"0", "0"}, {"1", "1000000000"}},
       {{"0", 0}, {"1000000000", 1}}},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    SCOPED_TRACE(cases[k].train);
    const std::string train =
        dir_.write("t" + std::to_string(k) + ".csv", "sentence,label\n" + cases[k].train);
    const std::string valid =
        dir_.write("v" + std::to_string(k) + ".csv", "sentence,label\n" + cases[k].valid);
    fs::remove_all(dir_.sub("out"));
    auto flags = bert_flags(train, valid);
    flags.insert(flags.end(), {"--max_seq_length", "32"});
    CliResult r = run_loom_cli(dir_, flags);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(dir_.sub("out/config.json"));
    nlohmann::json cfg = nlohmann::json::parse(in);
    EXPECT_EQ(cfg["id2label"], cases[k].id2label) << cfg.dump();
    EXPECT_EQ(cfg["label2id"], cases[k].label2id) << cfg.dump();
    // The fine-tuned classifier reads the same raw labels back through its id2label.
    r = run_loom_cli(dir_, {"evaluate", "--model_name_or_path", dir_.sub("out"), "--tokenizer_name",
                            kBertTokenizer, "--validation_file", valid, "--text_column", "sentence",
                            "--label_column", "label", "--output_dir", dir_.sub("eval"),
                            "--max_seq_length", "32", "--disable_tqdm"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  // A label the fine-tuned model does not know is a clear error.
  const std::string other = dir_.write("other.csv", "sentence,label\ngood,7\n");
  CliResult r =
      run_loom_cli(dir_, {"evaluate", "--model_name_or_path", dir_.sub("out"), "--tokenizer_name",
                          kBertTokenizer, "--validation_file", other, "--text_column", "sentence",
                          "--label_column", "label", "--output_dir", dir_.sub("eval"),
                          "--max_seq_length", "32", "--disable_tqdm"});
  expect_one_error_line(r,
                        "label 7 is not one of the model's integer labels (its id2label: 0, "
                        "1000000000)");
}

TEST_F(LoomBadInput, PaddingLongerThanThePositionsIsAnError) {
  // Before: batches padded to a multiple of 10^6 tokens were allocated.
  const std::string csv = dir_.write("pad.csv", "sentence,label\ngood,1\nbad,0\n");
  auto flags = bert_flags(csv, csv);
  flags.insert(flags.end(), {"--pad_to_multiple_of", "1000000"});
  expect_one_error_line(
      run_loom_cli(dir_, flags),
      "[data] --pad_to_multiple_of 1000000 is longer than the model's 64 positions");
  // causal-lm reads blocks, never pads: the flag is refused there by name.
  flags = gpt2_flags(corpus(20));
  flags.insert(flags.end(), {"--pad_to_multiple_of", "8"});
  expect_one_error_line(run_loom_cli(dir_, flags),
                        "[job] --pad_to_multiple_of: read by task text-classification or sft only");
}

TEST_F(LoomBadInput, SecondRunIntoTheSameOutputDirFailsAtStart) {
  train::OutputDirLock held(dir_.sub("out"), "test");  // a run in progress
  CliResult r = run_loom_cli(dir_, gpt2_flags(corpus(20)));
  expect_one_error_line(r, "output_dir '" + dir_.sub("out") + "' is in use by another run (pid " +
                               std::to_string(::getpid()));
}

TEST_F(LoomBadInput, UnusableEvaluateOutputDirNamesTheFlag) {
  const std::string file = dir_.write("plain", "x");
  CliResult r =
      run_loom_cli(dir_, {"evaluate", "--output_dir", file + "/sub", "--model_name_or_path",
                          dir_.sub("no_model"), "--tokenizer_name", kGpt2Tokenizer});
  expect_one_error_line(r, "output_dir '" + file + "/sub': cannot create it");
  EXPECT_EQ(r.err.find("filesystem error"), std::string::npos) << r.err;
}

TEST_F(LoomBadInput, BatchLargerThanTheDataIsOneWarnedBatch) {
  auto flags = gpt2_flags(corpus(20));
  flags.insert(flags.end(), {"--per_device_train_batch_size", "10000000"});
  CliResult r = run_loom_cli(dir_, flags);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("loom: warning: --per_device_train_batch_size 10000000 is larger than the "),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace loom::testing
