// `loom inspect` end to end on the GPT-2 fixtures: a model directory, its
// model.safetensors file and the sharded copy list every tensor and the
// parameter count of the loaded model (tied weights stored once); a
// checkpoint directory adds its trainer_state.json fields; a missing or
// corrupt file is one "loom: error:" line and exit 1.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli/cli_runner.h"
#include "loom/gpt2.h"

namespace loom {
namespace {

std::string gpt2_fixture(const std::string& name) {
  return std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/models/" + name;
}

int64_t fixture_parameter_count() {
  return GPT2LMHeadModel::from_pretrained(gpt2_fixture("gpt2"))->num_parameters();
}

TEST(InspectCli, ModelDirFileAndShardsCountTheParameters) {
  if (testing::loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  testing::TempDir dir;
  std::string expected = "parameters: " + std::to_string(fixture_parameter_count()) + "\n";
  for (const std::string& path : {gpt2_fixture("gpt2"), gpt2_fixture("gpt2/model.safetensors"),
                                  gpt2_fixture("gpt2_sharded")}) {
    testing::CliResult r = testing::run_loom_cli(dir, {"inspect", path});
    ASSERT_EQ(r.exit_code, 0) << path << ": " << r.err;
    EXPECT_NE(r.out.find(expected), std::string::npos) << path << ":\n" << r.out;
    EXPECT_NE(r.out.find("h.1.attn.c_attn.weight"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("[32,96]"), std::string::npos) << "c_attn [n_embd, 3 n_embd]:\n" << r.out;
    EXPECT_NE(r.out.find("F32"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("trainer_state"), std::string::npos) << "not a checkpoint";
  }
}

TEST(InspectCli, CheckpointShowsTrainingState) {
  if (testing::loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  testing::TempDir dir;
  std::string ckpt = dir.sub("checkpoint-12");
  std::filesystem::create_directory(ckpt);
  std::filesystem::copy_file(gpt2_fixture("gpt2/model.safetensors"), ckpt + "/model.safetensors");
  std::filesystem::copy_file(gpt2_fixture("gpt2/config.json"), ckpt + "/config.json");
  testing::TempDir files;
  std::string state = R"({"global_step": 12, "epoch": 1.5, "best_metric": 0.25,
    "best_model_checkpoint": "out/checkpoint-8",
    "log_history": [{"loss": 2.5, "step": 4}, {"eval_loss": 1.75, "step": 12}]})";
  std::filesystem::copy_file(files.write("trainer_state.json", state),
                             ckpt + "/trainer_state.json");
  testing::CliResult r = testing::run_loom_cli(dir, {"inspect", ckpt});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want : {"global_step: 12\n", "epoch: 1.5\n", "best_metric: 0.25\n",
                           "best_model_checkpoint: \"out/checkpoint-8\"\n",
                           "log_history[-1]: {\"eval_loss\":1.75,\"step\":12}\n"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " in:\n" << r.out;
  EXPECT_NE(r.out.find("parameters: " + std::to_string(fixture_parameter_count())),
            std::string::npos);
}

// Issue 42 row 9: a PEFT adapter (the gpt2_lora fixture, written by peft:
// 12 tensors, 2,816 parameters, lora_alpha 16) lists its tensors and config,
// also as a Trainer checkpoint of a LoRA run (no model.safetensors).
TEST(InspectCli, AnAdapterAndALoraCheckpointListTheAdapterTensors) {
  if (testing::loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  testing::TempDir dir;
  const std::string ckpt = dir.sub("checkpoint-3");
  std::filesystem::create_directory(ckpt);
  for (const char* f : {"adapter_config.json", "adapter_model.safetensors"})
    std::filesystem::copy_file(gpt2_fixture("gpt2_lora/") + f, ckpt + "/" + f);
  std::filesystem::copy_file(dir.write("state.json", R"({"global_step": 3, "log_history": []})"),
                             ckpt + "/trainer_state.json");
  for (const std::string& path : {gpt2_fixture("gpt2_lora"), ckpt}) {
    testing::CliResult r = testing::run_loom_cli(dir, {"inspect", path});
    ASSERT_EQ(r.exit_code, 0) << path << ": " << r.err;
    EXPECT_NE(r.out.find("adapter_model.safetensors (PEFT adapter, peft_type \"LORA\""),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("lora_alpha 16"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("base_model.model.transformer.h.0.attn.c_attn.lora_A.weight"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("tensors: 12\nparameters: 2816\n"), std::string::npos) << r.out;
  }
  testing::CliResult r = testing::run_loom_cli(dir, {"inspect", ckpt});
  EXPECT_NE(r.out.find("global_step: 3\n"), std::string::npos) << r.out;
}

TEST(InspectCli, MissingOrCorruptIsOneErrorLine) {
  if (testing::loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  testing::TempDir dir;
  std::string corrupt = dir.write("bad.safetensors", std::string("\x10\0\0\0\0\0\0\0{\"a\":", 13));
  std::string empty_dir = dir.sub("empty");
  std::filesystem::create_directory(empty_dir);
  for (const std::string& path : {dir.sub("nope.safetensors"), corrupt, empty_dir}) {
    testing::CliResult r = testing::run_loom_cli(dir, {"inspect", path});
    EXPECT_EQ(r.exit_code, 1) << path;
    EXPECT_EQ(r.err.rfind("loom: error: ", 0), 0u) << r.err;
    EXPECT_EQ(testing::count_cli_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(path), std::string::npos) << "names the path: " << r.err;
  }
}

// `loom frobnicate` / `loom trian`: one error line naming the word and the
// subcommands, with a suggestion when one is close (was CLI11's "The
// following argument was not expected").
TEST(LoomCliSubcommand, UnknownIsOneErrorLineWithSuggestion) {
  if (testing::loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  testing::TempDir dir;
  testing::CliResult typo = testing::run_loom_cli(dir, {"trian", "--max_steps", "1"});
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_EQ(typo.err,
            "loom: error: unknown subcommand 'trian' (did you mean 'train'?; subcommands: info, "
            "generate, inspect, plot, tokenize, train, evaluate)\n");
  testing::CliResult far = testing::run_loom_cli(dir, {"frobnicate"});
  EXPECT_EQ(far.exit_code, 1);
  EXPECT_EQ(testing::count_cli_lines(far.err), 1) << far.err;
  EXPECT_NE(far.err.find("unknown subcommand 'frobnicate' (subcommands: info,"), std::string::npos)
      << far.err;
  EXPECT_EQ(testing::run_loom_cli(dir, {"info"}).exit_code, 0);
}

}  // namespace
}  // namespace loom
