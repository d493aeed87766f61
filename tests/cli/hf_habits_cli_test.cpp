// The habits Hugging Face users bring to `loom`, through the built binary:
// --device defaults to lazy; `loom --help` and `train --help` name the
// current models and `train --help` shows each flag's default; a hub id
// resolves from the local Hugging Face cache (HF_HUB_CACHE, refs/<revision>),
// and one that is not there is one error line saying loom does not download;
// --torch_dtype bfloat16 and --save_safetensors false are refused by name with
// the reason; generate's --repetition_penalty and --skip_special_tokens;
// issue 42: every subcommand's help lists only flags it accepts (evaluate's
// own), --do_train false / --do_predict, --config_name, --model_revision,
// early stopping.
// Skips when the binary is not built.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "cli/tiny_train.h"
#include "common/scoped_env.h"

namespace loom::testing {
namespace {
namespace fs = std::filesystem;

class HfHabitsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  }
  // A 1-step tiny GPT-2 in dir_/model, trained without --device.
  CliResult train_tiny(const std::string& shell_prefix = "") {
    std::vector<std::string> flags =
        tiny_train_flags(write_tiny_corpus(dir_, 40), dir_.sub("model"));
    std::vector<std::string> no_device;
    for (size_t i = 0; i < flags.size(); ++i) {
      if (flags[i] == "--device") {
        ++i;
        continue;
      }
      no_device.push_back(flags[i]);
    }
    for (const char* f : {"--max_steps", "1", "--report_to", "none", "--eval_strategy", "no"})
      no_device.push_back(f);
    return run_loom_cli(dir_, no_device, shell_prefix);
  }
  TempDir dir_;
};

TEST_F(HfHabitsCli, DeviceDefaultsToLazy) {
  CliResult r = train_tiny();
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find(", device lazy, output_dir"), std::string::npos) << r.out;
  std::string args = read_cli_file(dir_.sub("model") + "/training_args.json");
  EXPECT_NE(args.find("\"device\": \"lazy\""), std::string::npos) << args;
}

// A lazy:cpu run builds only the backend it runs on: lazy:sim's 64 GiB
// address-space reservation (and xla's plugin discovery) must not be made in
// every lazy process, or a job under `ulimit -v` (clusters, MPI launchers) dies.
TEST_F(HfHabitsCli, LazyRunWorksUnderAnAddressSpaceLimit) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizer shadow memory needs more address space than the limit";
#endif
  CliResult r = train_tiny("ulimit -v 8388608 &&");  // 8 GiB, in KiB
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find(", device lazy, output_dir"), std::string::npos) << r.out;
}

TEST_F(HfHabitsCli, HelpNamesTheModelsAndTheDefaults) {
  CliResult top = run_loom_cli(dir_, {"--help"});
  ASSERT_EQ(top.exit_code, 0);
  // The registry's types per task (model_types_for_task), not a hand-kept list.
  EXPECT_NE(top.out.find("causal LM (gpt2, llama, qwen2, qwen3)"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("masked LM (bert)"), std::string::npos) << top.out;
  CliResult train = run_loom_cli(dir_, {"train", "--help"});
  ASSERT_EQ(train.exit_code, 0);
  // Each flag's line (CLI11 may wrap: look for the flag, then its default before the next flag).
  auto default_of = [&](const std::string& flag) {
    // The flag's own line (another flag's help may name it: "--device lazy:xla").
    size_t at = train.out.find("\n  --" + flag + " ");
    if (at == std::string::npos) return std::string("<no flag>");
    size_t d = train.out.find("[default: ", at);
    size_t next = train.out.find("\n  --", at + 1);
    if (d == std::string::npos || (next != std::string::npos && d > next))
      return std::string("<none>");
    return train.out.substr(d + 10, train.out.find(']', d) - d - 10);
  };
  EXPECT_EQ(default_of("device"), "lazy");
  EXPECT_EQ(default_of("per_device_train_batch_size"), "8");
  EXPECT_EQ(default_of("revision"), "main");
  EXPECT_EQ(default_of("validation_split_percentage"), "5");
  EXPECT_EQ(default_of("mlm_probability"), "0.15");
  EXPECT_EQ(default_of("label_smoothing_factor"), "0");
  EXPECT_EQ(default_of("num_train_epochs"), "3");
  // Issue 42 row 4: where loom's defaults differ from transformers 5's, the help says so.
  EXPECT_NE(train.out.find("--report_to all (transformers 5: none"), std::string::npos)
      << train.out;
}

// Issue 42 row 4: transformers 4 names that transformers 5 removed are read,
// each with one note saying what it is in transformers 5.
TEST_F(HfHabitsCli, RetiredTransformers4NamesAreReadWithANote) {
  std::vector<std::string> flags = tiny_train_flags(write_tiny_corpus(dir_, 40), dir_.sub("out"));
  for (const char* f : {"--max_steps", "2", "--report_to", "none", "--eval_strategy", "no",
                        "--warmup_ratio", "0.5", "--save_safetensors", "true"})
    flags.push_back(f);
  CliResult r = run_loom_cli(dir_, flags);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.err.find("loom: note: --warmup_ratio is a transformers 4 name, removed in "
                       "transformers 5: transformers 5 takes a ratio as --warmup_steps"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("loom: note: --save_safetensors is a transformers 4 name"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("--logging_dir is a transformers 4 name"), std::string::npos) << r.err;
  std::ifstream in(dir_.sub("out/training_args.json"));
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"warmup_ratio\": 0.5"), std::string::npos) << text.str();
}

TEST_F(HfHabitsCli, RefusedFlagsNameTheReason) {
  CliResult dtype =
      run_loom_cli(dir_, {"train", "--model_type", "gpt2", "--torch_dtype", "bfloat16"});
  expect_one_error_line(dtype,
                        "--torch_dtype bfloat16: not supported: loom keeps weights in float32");
  EXPECT_NE(dtype.err.find("--bf16"), std::string::npos) << dtype.err;
  CliResult st =
      run_loom_cli(dir_, {"train", "--model_type", "gpt2", "--save_safetensors", "false"});
  expect_one_error_line(st, "save_safetensors: false is not supported");
  // Trainer / run_clm flags loom has no use for: refused by name, with what to do instead.
  expect_one_error_line(
      run_loom_cli(dir_, {"train", "--model_type", "gpt2", "--fp16"}),
      "--fp16: not supported: loom's mixed precision is bf16 autocast: use --bf16");
  expect_one_error_line(
      run_loom_cli(dir_, {"train", "--model_type", "gpt2", "--push_to_hub", "true"}),
      "--push_to_hub: not supported: loom does not upload");
  expect_one_error_line(
      run_loom_cli(dir_, {"generate", "--model_name_or_path", "x", "--trust_remote_code"}),
      "[loom generate] --trust_remote_code: not supported: loom builds only its registered");
}

TEST_F(HfHabitsCli, HubIdsComeFromTheLocalCache) {
  ASSERT_EQ(train_tiny().exit_code, 0);
  // huggingface_hub's layout: refs/main -> commit, snapshots/<commit>/ the files.
  const std::string commit(40, 'a');
  fs::path repo = fs::path(dir_.sub("hub")) / "models--tiny-org--tiny-gpt2";
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots");
  fs::copy(dir_.sub("model"), repo / "snapshots" / commit, fs::copy_options::recursive);
  std::ofstream(repo / "refs" / "main") << commit;
  ScopedEnv cache("HF_HUB_CACHE", dir_.sub("hub"));
  CliResult gen = run_loom_cli(dir_, {"generate", "--model_name_or_path", "tiny-org/tiny-gpt2",
                                      "--prompt", "It is", "--max_new_tokens", "3"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_EQ(gen.out.rfind("It is", 0), 0u) << gen.out;
  // LoRA on the hub id: the adapter names its base by the id (as peft), and
  // loading the adapter finds the base in the cache again.
  CliResult lora = run_loom_cli(
      dir_, {"train", "--model_name_or_path", "tiny-org/tiny-gpt2", "--use_lora", "--train_file",
             write_tiny_corpus(dir_, 40), "--block_size", "16", "--max_steps", "1", "--output_dir",
             dir_.sub("lora"), "--report_to", "none", "--disable_tqdm"});
  ASSERT_EQ(lora.exit_code, 0) << lora.err;
  EXPECT_NE(read_cli_file(dir_.sub("lora") + "/adapter_config.json")
                .find("\"base_model_name_or_path\": \"tiny-org/tiny-gpt2\""),
            std::string::npos);
  CliResult adapter = run_loom_cli(dir_, {"generate", "--model_name_or_path", dir_.sub("lora"),
                                          "--prompt", "It is", "--max_new_tokens", "3"});
  ASSERT_EQ(adapter.exit_code, 0) << adapter.err;
  // loom tokenize takes the hub id too, as train's --tokenizer_name does.
  const std::string lines = dir_.sub("lines.jsonl");
  std::ofstream(lines) << "\"It is a truth\"\n";
  CliResult tok = run_loom_cli(
      dir_, {"tokenize", "--tokenizer_name", "tiny-org/tiny-gpt2", "--input_file", lines});
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  EXPECT_EQ(count_cli_lines(tok.out), 1) << tok.out;
  CliResult missing = run_loom_cli(
      dir_, {"generate", "--model_name_or_path", "tiny-org/tiny-gpt2", "--revision", "v9"});
  expect_one_error_line(missing,
                        "loom does not download: fetch it with `hf download "
                        "tiny-org/tiny-gpt2 --revision v9`");
  CliResult other =
      run_loom_cli(dir_, {"evaluate", "--model_name_or_path", "openai-community/gpt2"});
  expect_one_error_line(other,
                        "[model] --model_name_or_path 'openai-community/gpt2': no such "
                        "directory, and the Hugging Face cache");
}

// An adapter trained on a hub id at --revision v1 records the revision (as
// peft does) and reloads the v1 snapshot, never main's.
TEST_F(HfHabitsCli, AnAdapterOnAHubRevisionReloadsThatRevision) {
  ASSERT_EQ(train_tiny().exit_code, 0);
  fs::path repo = fs::path(dir_.sub("hub")) / "models--tiny-org--tiny-gpt2";
  const std::string v1(40, 'b');
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots");
  fs::copy(dir_.sub("model"), repo / "snapshots" / v1, fs::copy_options::recursive);
  std::ofstream(repo / "refs" / "v1") << v1;  // no refs/main: main is not cached
  ScopedEnv cache("HF_HUB_CACHE", dir_.sub("hub"));
  CliResult lora =
      run_loom_cli(dir_, {"train", "--model_name_or_path", "tiny-org/tiny-gpt2", "--revision", "v1",
                          "--use_lora", "--train_file", write_tiny_corpus(dir_, 40), "--block_size",
                          "16", "--max_steps", "1", "--output_dir", dir_.sub("lora"), "--report_to",
                          "none", "--disable_tqdm"});
  ASSERT_EQ(lora.exit_code, 0) << lora.err;
  const std::string cfg = read_cli_file(dir_.sub("lora") + "/adapter_config.json");
  EXPECT_NE(cfg.find("\"revision\": \"v1\""), std::string::npos) << cfg;
  CliResult adapter = run_loom_cli(dir_, {"generate", "--model_name_or_path", dir_.sub("lora"),
                                          "--prompt", "It is", "--max_new_tokens", "3"});
  ASSERT_EQ(adapter.exit_code, 0) << adapter.err;
  EXPECT_EQ(adapter.out.rfind("It is", 0), 0u) << adapter.out;
}

// A base given by a path relative to the training directory is written as an
// absolute path, so the adapter loads from any other directory.
TEST_F(HfHabitsCli, AnAdapterTrainedOnARelativeBaseLoadsFromAnotherDirectory) {
  ASSERT_EQ(train_tiny().exit_code, 0);
  fs::create_directories(dir_.sub("elsewhere"));
  CliResult lora =
      run_loom_cli(dir_,
                   {"train", "--model_name_or_path", "model", "--use_lora", "--train_file",
                    write_tiny_corpus(dir_, 40), "--block_size", "16", "--max_steps", "1",
                    "--output_dir", "lora_rel", "--report_to", "none", "--disable_tqdm"},
                   "cd " + shell_quote(dir_.path()) + " &&");
  ASSERT_EQ(lora.exit_code, 0) << lora.err;
  const std::string cfg = read_cli_file(dir_.sub("lora_rel") + "/adapter_config.json");
  EXPECT_NE(cfg.find("\"base_model_name_or_path\": \"" +
                     fs::path(dir_.sub("model")).lexically_normal().string() + "\""),
            std::string::npos)
      << cfg;
  CliResult adapter = run_loom_cli(dir_,
                                   {"generate", "--model_name_or_path", "../lora_rel", "--prompt",
                                    "It is", "--max_new_tokens", "3"},
                                   "cd " + shell_quote(dir_.sub("elsewhere")) + " &&");
  ASSERT_EQ(adapter.exit_code, 0) << adapter.err;
  EXPECT_EQ(adapter.out.rfind("It is", 0), 0u) << adapter.out;
}

TEST_F(HfHabitsCli, GenerateRepetitionPenaltyAndSkipSpecialTokens) {
  ASSERT_EQ(train_tiny().exit_code, 0);
  const std::string model = dir_.sub("model");
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {"generate",           "--model_name_or_path", model, "--prompt",
                                  "<|endoftext|>It is", "--max_new_tokens",     "12"};
    a.insert(a.end(), extra.begin(), extra.end());
    return run_loom_cli(dir_, a);
  };
  CliResult plain = gen({}), penalized = gen({"--repetition_penalty", "5"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(penalized.exit_code, 0) << penalized.err;
  EXPECT_NE(plain.out, penalized.out) << "a penalty of 5 changes a 1-step model's greedy text";
  EXPECT_EQ(plain.out.rfind("<|endoftext|>It is", 0), 0u) << plain.out;
  CliResult skipped = gen({"--skip_special_tokens"});
  ASSERT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_EQ(skipped.out.find("<|endoftext|>"), std::string::npos) << skipped.out;
  EXPECT_EQ(skipped.out.rfind("It is", 0), 0u) << skipped.out;
  // Boolean flags take an optional value, as train's and HfArgumentParser's.
  EXPECT_EQ(gen({"--skip_special_tokens", "true"}).out, skipped.out);
  EXPECT_EQ(gen({"--skip_special_tokens=false", "--do_sample", "false", "--no_cache", "true"}).out,
            plain.out);
  expect_one_error_line(gen({"--do_sample", "maybe"}),
                        "[loom generate] --do_sample: expected true or false, got 'maybe'");
  expect_one_error_line(gen({"--repetition_penalty", "0"}),
                        "repetition_penalty must be a positive");
}

// The flags of `loom <command>` as its --help lists them ("--name").
std::vector<std::string> help_flags(const std::string& help) {
  std::vector<std::string> flags;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find_first_not_of(' ');
    // An option's own line ("  --name TYPE", "  -h,--help"), not a wrapped
    // description that happens to start with a flag (indented further).
    if (at == std::string::npos || at == 0 || at > 4 || line[at] != '-') continue;
    size_t start = line.find("--", at);
    if (start == std::string::npos || start > at + 3) continue;  // "-h,--help"
    size_t end = line.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_", start + 2);
    flags.push_back(line.substr(start, end - start));
  }
  return flags;
}

// The subcommands `loom --help` lists.
std::vector<std::string> subcommands_of(const std::string& help) {
  std::vector<std::string> out;
  std::istringstream in(help.substr(help.find("SUBCOMMANDS:") == std::string::npos
                                        ? help.find("Subcommands:")
                                        : help.find("SUBCOMMANDS:")));
  std::string line;
  std::getline(in, line);  // the heading
  while (std::getline(in, line) && !line.empty() && line[0] == ' ') {
    std::istringstream words(line);
    std::string name;
    words >> name;
    out.push_back(name);
  }
  return out;
}

// Issue 42: each subcommand's --help lists only flags that subcommand
// accepts (each one fed back alone is never "unknown"), and evaluate's help
// is its own: no training flag shown, each one an error naming why.
TEST_F(HfHabitsCli, EachSubcommandsHelpListsOnlyFlagsItAccepts) {
  CliResult top = run_loom_cli(dir_, {"--help"});
  ASSERT_EQ(top.exit_code, 0);
  const std::vector<std::string> commands = subcommands_of(top.out);
  ASSERT_GE(commands.size(), 7u) << top.out;
  for (const std::string& command : commands) {
    CliResult help = run_loom_cli(dir_, {command, "--help"});
    ASSERT_EQ(help.exit_code, 0) << command << help.err;
    const std::vector<std::string> flags = help_flags(help.out);
    EXPECT_FALSE(flags.empty()) << command << ": " << help.out;  // inspect: only --help
    for (const std::string& flag : flags) {
      if (flag == "--help") continue;
      CliResult r = run_loom_cli(dir_, {command, flag});
      for (const char* refusal :
           {"unknown flag", "unexpected argument", "not expected", "not supported",
            "a `loom train` flag", "needs trained weights", "always evaluates"})
        EXPECT_EQ(r.err.find(refusal), std::string::npos)
            << "loom " << command << " " << flag << ": " << r.err;
    }
  }
  const std::string evaluate = run_loom_cli(dir_, {"evaluate", "--help"}).out;
  EXPECT_NE(evaluate, run_loom_cli(dir_, {"train", "--help"}).out);
  const std::vector<std::string> shown = help_flags(evaluate);
  EXPECT_GT(shown.size(), 30u) << evaluate;  // the parse found the table
  for (const char* flag : {"--per_device_eval_batch_size", "--validation_file", "--device"})
    EXPECT_NE(std::find(shown.begin(), shown.end(), flag), shown.end()) << flag;
  for (const char* flag : {"--use_lora", "--model_type", "--learning_rate", "--save_steps",
                           "--early_stopping_patience", "--do_predict"})
    EXPECT_EQ(std::find(shown.begin(), shown.end(), flag), shown.end()) << flag;
  expect_one_error_line(run_loom_cli(dir_, {"evaluate", "--model_name_or_path", "m", "--use_lora"}),
                        "[loom evaluate] --use_lora: a `loom train` flag: to evaluate a LoRA "
                        "adapter give its directory as --model_name_or_path");
  expect_one_error_line(run_loom_cli(dir_, {"evaluate", "--model_type", "gpt2"}),
                        "[loom evaluate] --model_type: loom evaluate needs trained weights");
  expect_one_error_line(run_loom_cli(dir_, {"evaluate", "--learning_rate=1e-3"}),
                        "[loom evaluate] --learning_rate: a `loom train` flag");
  const std::string config = dir_.write("eval.json", "{\"lora_r\": 4}");
  expect_one_error_line(run_loom_cli(dir_, {"evaluate", "--config", config}),
                        "lora_r: a `loom train` flag");
}

// run_clm's --do_train false --do_eval evaluates without training (results
// in output_dir); --do_train false alone, --do_predict and --test_file are
// refused by name, never accepted and ignored (issue 42).
TEST_F(HfHabitsCli, DoTrainFalseOnlyEvaluatesAndDoPredictIsRefused) {
  ASSERT_EQ(train_tiny().exit_code, 0);
  const std::string text = write_tiny_corpus(dir_, 40);
  CliResult eval = run_loom_cli(
      dir_, {"train", "--model_name_or_path", dir_.sub("model"), "--do_train", "false", "--do_eval",
             "--validation_file", text, "--block_size", "16", "--output_dir", dir_.sub("eval_only"),
             "--report_to", "none", "--disable_tqdm"});
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_NE(eval.out.find("***** eval metrics *****"), std::string::npos) << eval.out;
  EXPECT_EQ(eval.out.find("train metrics"), std::string::npos) << eval.out;
  const std::string results = read_cli_file(dir_.sub("eval_only/eval_results.json"));
  EXPECT_NE(results.find("\"eval_loss\""), std::string::npos) << results;
  EXPECT_EQ(read_cli_file(dir_.sub("eval_only/all_results.json")), results);
  EXPECT_FALSE(fs::exists(dir_.sub("eval_only/train_results.json")));
  EXPECT_FALSE(fs::exists(dir_.sub("eval_only/model.safetensors")));  // nothing trained or saved
  expect_one_error_line(run_loom_cli(dir_, {"train", "--model_name_or_path", dir_.sub("model"),
                                            "--do_train", "false", "--train_file", text}),
                        "[loom train] --do_train false: nothing to do without --do_eval");
  expect_one_error_line(
      run_loom_cli(dir_, {"train", "--model_name_or_path", dir_.sub("model"), "--do_predict"}),
      "[loom train] --do_predict: not supported: loom writes no predictions");
  expect_one_error_line(run_loom_cli(dir_, {"train", "--test_file", text}),
                        "[loom train] --test_file: not supported:");
}

// run_clm's --config_name (from scratch with that config) and
// --model_revision; the Trainer names loom answers by name.
TEST_F(HfHabitsCli, ConfigNameModelRevisionAndAnsweredNames) {
  ASSERT_EQ(train_tiny().exit_code, 0);
  CliResult scratch = run_loom_cli(
      dir_, {"train", "--config_name", dir_.sub("model"), "--tokenizer_name", kGpt2Tokenizer,
             "--train_file", write_tiny_corpus(dir_, 40), "--block_size", "16", "--max_steps", "1",
             "--output_dir", dir_.sub("scratch"), "--report_to", "none", "--disable_tqdm"});
  ASSERT_EQ(scratch.exit_code, 0) << scratch.err;
  EXPECT_NE(scratch.out.find("(from scratch)"), std::string::npos) << scratch.out;
  const std::string cfg = read_cli_file(dir_.sub("scratch/config.json"));
  EXPECT_NE(cfg.find("\"n_embd\": 16"), std::string::npos) << cfg;  // the tiny model's, not 768
  expect_one_error_line(
      run_loom_cli(dir_, {"train", "--config_name", dir_.sub("model"), "--model_type", "gpt2",
                          "--tokenizer_name", kGpt2Tokenizer, "--train_file", "x.txt"}),
      "give only one of --model_name_or_path, --model_type and --config_name");
  expect_one_error_line(run_loom_cli(dir_, {"evaluate", "--model_name_or_path", "no-org/no-model",
                                            "--model_revision", "v9"}),
                        "holds no snapshot of it at revision 'v9'");
  for (const char* name : {"eval_accumulation_steps", "log_level"})
    expect_one_error_line(run_loom_cli(dir_, {"train", std::string("--") + name, "2"}),
                          std::string("[loom train] --") + name + ": not supported: ");
}

// --early_stopping_patience / --early_stopping_threshold: transformers'
// EarlyStoppingCallback. With learning rate 0 the eval loss never improves,
// so patience 1 stops at the second evaluation (step 4 of 10).
TEST_F(HfHabitsCli, EarlyStoppingStopsWhenTheMetricStopsImproving) {
  std::vector<std::string> flags = tiny_train_flags(write_tiny_corpus(dir_, 40), dir_.sub("es"));
  for (const char* f :
       {"--block_size", "16", "--max_steps", "10", "--learning_rate", "0", "--report_to", "none",
        "--early_stopping_patience", "1", "--metric_for_best_model", "loss"})
    flags.push_back(f);
  CliResult r = run_loom_cli(dir_, flags);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("without --load_best_model_at_end"), std::string::npos) << r.err;
  const std::string state = read_cli_file(dir_.sub("es/trainer_state.json"));
  const size_t step = state.find("\"global_step\": ");
  ASSERT_NE(step, std::string::npos) << state;
  EXPECT_EQ(std::atoi(state.c_str() + step + 15), 4) << state;
  EXPECT_NE(state.find("\"early_stopping_patience_counter\": 1"), std::string::npos) << state;
  std::vector<std::string> no_metric = tiny_train_flags("x.txt", dir_.sub("es2"));
  no_metric.push_back("--early_stopping_patience");
  no_metric.push_back("2");
  expect_one_error_line(run_loom_cli(dir_, no_metric),
                        "[loom train] --early_stopping_patience needs --metric_for_best_model");
  expect_one_error_line(run_loom_cli(dir_, {"train", "--early_stopping_threshold", "0.1"}),
                        "--early_stopping_threshold needs --early_stopping_patience");
}

}  // namespace
}  // namespace loom::testing
