// The habits Hugging Face users bring to `loom`, through the built binary:
// --device defaults to lazy; `loom --help` and `train --help` name the
// current models and `train --help` shows each flag's default; a hub id
// resolves from the local Hugging Face cache (HF_HUB_CACHE, refs/<revision>),
// and one that is not there is one error line saying loom does not download;
// --torch_dtype bfloat16 and --save_safetensors false are refused by name with
// the reason; generate's --repetition_penalty and --skip_special_tokens.
// Skips when the binary is not built.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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
                        "loom does not download: fetch it with `huggingface-cli download "
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

}  // namespace
}  // namespace loom::testing
