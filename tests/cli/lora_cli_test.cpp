// `loom train --use_lora` end to end through the built binary: a tiny Llama
// trained from scratch becomes the base; LoRA fine-tuning writes PEFT's
// adapter files (no full weights) to output_dir and its checkpoints, with
// AdamW state for the adapter weights only; resuming works; `loom evaluate`
// and `loom generate`
// loads the adapter directory (base from base_model_name_or_path) on cpu and
// lazy alike; --merge_lora writes a normal checkpoint that generates the same
// text; bad LoRA flags are one error line. Skips when the binary is not built.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "cli/tiny_train.h"  // kGpt2Tokenizer
#include "loom/safetensors.h"

namespace loom::testing {
namespace {

class LoraCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
    std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/assets/corpora/austen/prideprejudice.txt");
    std::string line, text;
    for (int i = 0; i < 60 && std::getline(in, line); ++i) text += line + "\n";
    corpus_ = dir_.write("tiny.txt", text);
  }
  std::vector<std::string> common(const std::string& out, const std::string& steps) {
    return {"--train_file",
            corpus_,
            "--validation_split_percentage",
            "20",
            "--block_size",
            "16",
            "--output_dir",
            out,
            "--per_device_train_batch_size",
            "2",
            "--max_steps",
            steps,
            "--learning_rate",
            "0.01",
            "--disable_tqdm",
            "--report_to",
            "none"};
  }
  // A pretrained base: a tiny Llama from scratch, one step.
  std::string make_base() {
    std::vector<std::string> a = {"train",
                                  "--model_type",
                                  "llama",
                                  "--config_overrides",
                                  "num_hidden_layers=1,hidden_size=16,intermediate_size=32,"
                                  "num_attention_heads=4,num_key_value_heads=2,"
                                  "max_position_embeddings=32",
                                  "--tokenizer_name",
                                  kGpt2Tokenizer,
                                  "--device",
                                  "lazy"};
    auto c = common(dir_.sub("base"), "1");
    a.insert(a.end(), c.begin(), c.end());
    CliResult r = run_loom_cli(dir_, a);
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    return dir_.sub("base");
  }
  CliResult lora_train(const std::string& base, const std::string& out, const std::string& steps,
                       std::vector<std::string> extra) {
    std::vector<std::string> a = {"train", "--model_name_or_path", base, "--use_lora", "--lora_r",
                                  "4",     "--lora_alpha",         "8",  "--device",   "lazy"};
    auto c = common(out, steps);
    a.insert(a.end(), c.begin(), c.end());
    a.insert(a.end(), extra.begin(), extra.end());
    return run_loom_cli(dir_, a);
  }
  CliResult generate(const std::string& dir, const std::string& device) {
    return run_loom_cli(dir_, {"generate", "--model_name_or_path", dir, "--prompt", "It is a truth",
                               "--max_new_tokens", "8", "--device", device});
  }
  std::set<std::string> tensor_names(const std::string& path) {
    std::set<std::string> out;
    safetensors::File file = safetensors::File::open(path);  // outlives the loop
    for (const auto& t : file.tensors()) out.insert(t.name);
    return out;
  }
  TempDir dir_;
  std::string corpus_;
};

TEST_F(LoraCli, TrainSavesPeftAdaptersResumesAndGenerates) {
  const std::string base = make_base(), out = dir_.sub("lora");
  CliResult r = lora_train(base, out, "3", {"--save_steps", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("LoRA: trainable params: 224 ||"), std::string::npos) << r.out;
  namespace fs = std::filesystem;
  EXPECT_FALSE(fs::exists(out + "/model.safetensors")) << "LoRA saves the adapter only";
  nlohmann::json cfg = nlohmann::json::parse(read_cli_file(out + "/adapter_config.json"));
  EXPECT_EQ(cfg["peft_type"], "LORA");
  EXPECT_EQ(cfg["r"], 4);
  EXPECT_EQ(cfg["target_modules"], nlohmann::json({"q_proj", "v_proj"}));
  EXPECT_EQ(cfg["base_model_name_or_path"], base);
  EXPECT_EQ(
      tensor_names(out + "/adapter_model.safetensors"),
      (std::set<std::string>{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight",
                             "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight",
                             "base_model.model.model.layers.0.self_attn.v_proj.lora_A.weight",
                             "base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight"}));
  // The checkpoint: adapter + AdamW moments of the four adapter weights only.
  const std::string ckpt = out + "/checkpoint-2";
  EXPECT_TRUE(fs::exists(ckpt + "/adapter_model.safetensors"));
  EXPECT_FALSE(fs::exists(ckpt + "/model.safetensors"));
  int moments = 0;
  for (const std::string& n : tensor_names(ckpt + "/optimizer.safetensors"))
    moments += n.find("exp_avg") != std::string::npos;
  EXPECT_EQ(moments, 8);

  // Resume from checkpoint-2 to step 4.
  CliResult resumed = lora_train(base, out, "4", {"--resume_from_checkpoint", "last"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err << resumed.out;
  nlohmann::json state = nlohmann::json::parse(read_cli_file(out + "/trainer_state.json"));
  EXPECT_EQ(state["global_step"], 4);

  // loom evaluate takes the adapter directory as the model too.
  CliResult e = run_loom_cli(
      dir_, {"evaluate", "--model_name_or_path", out, "--train_file", corpus_,
             "--validation_split_percentage", "20", "--block_size", "16", "--disable_tqdm"});
  ASSERT_EQ(e.exit_code, 0) << e.err << e.out;
  EXPECT_NE(e.out.find("eval_perplexity"), std::string::npos) << e.out;

  CliResult cpu = generate(out, "cpu");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_EQ(cpu.out.rfind("It is a truth", 0), 0u) << cpu.out;
  CliResult lazy = generate(out, "lazy");
  ASSERT_EQ(lazy.exit_code, 0) << lazy.err;
  EXPECT_EQ(lazy.out, cpu.out);
}

TEST_F(LoraCli, MergeLoraWritesAFullCheckpointThatGeneratesTheSame) {
  const std::string base = make_base(), out = dir_.sub("merged");
  CliResult r = lora_train(base, out, "3", {"--merge_lora", "--lora_target_modules", "all-linear"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  namespace fs = std::filesystem;
  EXPECT_TRUE(fs::exists(out + "/config.json"));
  EXPECT_TRUE(fs::exists(out + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(out + "/adapter_config.json"));
  EXPECT_TRUE(fs::exists(out + "/adapter/adapter_model.safetensors"));
  for (const std::string& n : tensor_names(out + "/model.safetensors"))
    EXPECT_EQ(n.find("lora"), std::string::npos) << n;
  CliResult merged = generate(out, "cpu");
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  CliResult adapter = generate(out + "/adapter", "cpu");
  ASSERT_EQ(adapter.exit_code, 0) << adapter.err;
  EXPECT_EQ(merged.out, adapter.out);
}

TEST_F(LoraCli, BadLoraFlagsAreOneErrorLine) {
  std::vector<std::string> a = {"train",      "--model_type",     "llama",
                                "--use_lora", "--tokenizer_name", kGpt2Tokenizer};
  auto c = common(dir_.sub("x"), "1");
  a.insert(a.end(), c.begin(), c.end());
  expect_one_error_line(run_loom_cli(dir_, a), "--use_lora fine-tunes a pretrained model");
  a = {"train", "--model_type", "llama", "--merge_lora", "--tokenizer_name", kGpt2Tokenizer};
  a.insert(a.end(), c.begin(), c.end());
  expect_one_error_line(run_loom_cli(dir_, a), "--merge_lora needs --use_lora");
  a = {"train", "--model_type", "llama", "--lora_r", "0", "--tokenizer_name", kGpt2Tokenizer};
  a.insert(a.end(), c.begin(), c.end());
  expect_one_error_line(run_loom_cli(dir_, a), "--lora_r: expected an integer >= 1, got 0");
}

// An adapter directory as the model trains on with its own adapter_config.json:
// a LoRA flag with another value is an error, not silently ignored (it was:
// --lora_r 8 on an r=4 adapter trained r=4 and printed a wrong count).
TEST_F(LoraCli, AnAdapterDirRefusesLoraFlagsThatDifferFromItsConfig) {
  const std::string base = make_base(), out = dir_.sub("lora");
  CliResult r = lora_train(base, out, "1", {});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::vector<std::string> a = {"train", "--model_name_or_path", out, "--use_lora", "--device",
                                "lazy"};
  auto c = common(dir_.sub("again"), "1");
  a.insert(a.end(), c.begin(), c.end());
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = a;
    v.insert(v.end(), extra.begin(), extra.end());
    return run_loom_cli(dir_, v);
  };
  expect_one_error_line(with({"--lora_r", "8"}), "--lora_r 8 differs from the adapter's 4");
  expect_one_error_line(with({"--lora_alpha", "16"}), "--lora_alpha 16 differs from the adapter's");
  expect_one_error_line(with({"--lora_target_modules", "q_proj"}),
                        "--lora_target_modules q_proj differs from the adapter's");
  CliResult same = with({"--lora_r", "4", "--lora_alpha", "8"});
  EXPECT_EQ(same.exit_code, 0) << same.err << same.out;
  EXPECT_NE(same.out.find("LoRA: trainable params: 224 ||"), std::string::npos) << same.out;
}

}  // namespace
}  // namespace loom::testing
