// `loom train --task sft` with packing and across ranks (issue 37,
// deliverables 3 and 4), through the built binary on a tiny random Qwen3 and
// conversations of varying length (assistant-only loss):
//  - --packing true (BFD, padding-free): a whole packed epoch compiles no
//    graph after its first step (lazy_metrics.json's UncachedCompile is the
//    same after 1 step and after the epoch), the packing line is printed, and
//    the losses are finite;
//  - TRL's SFTTrainer losses with accumulation 4 x 2 and with packing;
//  - mpirun -np 2 x batch 4 (and x batch 2 x accumulation 2) equals one
//    process x batch 8: every micro-batch's loss is over the target tokens of
//    the whole step across ranks (num_items_in_batch), so rows of unequal
//    target counts give the one-process losses and weights.
// Skips when the binary (or, for the ranks, mpirun / MPI) is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "cli/mpi_train_runs.h"
#include "loom/dist.h"

namespace loom::testing {
namespace {
namespace fs = std::filesystem;

const std::string kSftPackFixtures = std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/sft";

class SftPackingCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
    fs::create_directories(dir_.sub("tok"));
    fs::copy_file(std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/tokenizers/qwen2/tokenizer.json",
                  dir_.sub("tok/tokenizer.json"));
    fs::copy_file(kSftPackFixtures + "/qwen2_tokenizer_config.json",
                  dir_.sub("tok/tokenizer_config.json"));
  }
  // `n` conversations whose answers grow with the row: 1 to 12 words.
  std::string conversations(int n) {
    const char* words[] = {"blue", "green", "four", "yes", "maybe", "a", "long", "river"};
    std::string rows;
    for (int i = 0; i < n; ++i) {
      std::string answer;
      for (int w = 0; w <= (i * 5) % 12; ++w)
        answer += std::string(w ? " " : "") + words[(i + w) % 8];
      rows += R"({"messages": [{"role": "user", "content": "question )" + std::to_string(i) +
              R"("}, {"role": "assistant", "content": ")" + answer + R"("}]})" + "\n";
    }
    return dir_.write("train" + std::to_string(n) + ".jsonl", rows);
  }
  std::vector<std::string> flags(const std::string& train, const std::string& out, int batch) {
    return {"train",
            "--task",
            "sft",
            "--model_type",
            "qwen3",
            "--config_overrides",
            "num_hidden_layers=1,hidden_size=32,intermediate_size=64,num_attention_heads=4,"
            "num_key_value_heads=2,head_dim=8,max_position_embeddings=64",
            "--tokenizer_name",
            dir_.sub("tok"),
            "--chat_template_path",
            kSftPackFixtures + "/chatml_generation.jinja",
            "--assistant_only_loss",
            "true",
            "--train_file",
            train,
            "--max_length",
            "64",
            "--output_dir",
            out,
            "--per_device_train_batch_size",
            std::to_string(batch),
            "--logging_steps",
            "1",
            "--save_strategy",
            "no",
            "--report_to",
            "none",
            "--device",
            "lazy",
            "--seed",
            "3",
            "--disable_tqdm"};
  }
  TempDir dir_;
};

int64_t uncached_compiles(const std::string& out) {
  nlohmann::json j = read_json(out + "/lazy_metrics.json");
  return j.at("counters").value("UncachedCompile", int64_t{-1});
}

TEST_F(SftPackingCli, ZeroRecompilesOverAPackedEpoch) {
  const std::string train = conversations(40);
  auto run = [&](const std::string& name, std::vector<std::string> extra) {
    auto f = flags(train, dir_.sub(name), 2);
    f.insert(f.end(), {"--packing", "true"});
    f.insert(f.end(), extra.begin(), extra.end());
    CliResult r = run_loom_cli(dir_, f);
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    return r;
  };
  CliResult one = run("one_step", {"--max_steps", "1"});
  CliResult epoch = run("epoch", {"--num_train_epochs", "1"});
  EXPECT_NE(epoch.out.find("40 sequences packed (bfd) into"), std::string::npos) << epoch.out;
  nlohmann::json state = read_json(dir_.sub("epoch") + "/trainer_state.json");
  std::vector<double> losses = logged(state, "loss");
  ASSERT_GE(losses.size(), 4u) << "a packed epoch of several steps";
  for (double l : losses) EXPECT_TRUE(std::isfinite(l) && l > 0) << l;
  const int64_t first = uncached_compiles(dir_.sub("one_step"));
  ASSERT_GT(first, 0);
  EXPECT_EQ(uncached_compiles(dir_.sub("epoch")), first)
      << "graphs compiled after the first step of a packed epoch of " << losses.size() << " steps";
}

// TRL's SFTTrainer (tools/make_sft_loss_fixtures.py: trl_losses_ga_packed.json)
// on the shipped tiny Qwen3 and 8 conversations for 12 steps: batch 4 x
// accumulation 2 (uneven target counts per micro-batch), and packed (BFD,
// padding-free) with batch 8; loom's losses on the lazy device within 1e-5.
TEST_F(SftPackingCli, LossesEqualTrlWithAccumulationAndPacking) {
  nlohmann::json trl = read_json(kSftPackFixtures + "/trl_losses_ga_packed.json");
  ASSERT_FALSE(trl.is_discarded());
  auto run = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> f = {"train",
                                  "--task",
                                  "sft",
                                  "--model_name_or_path",
                                  kSftPackFixtures + "/tiny_qwen3",
                                  "--chat_template_path",
                                  kSftPackFixtures + "/chatml_generation.jinja",
                                  "--train_file",
                                  kSftPackFixtures + "/loss_rows.jsonl",
                                  "--assistant_only_loss",
                                  "true",
                                  "--max_length",
                                  "64",
                                  "--max_steps",
                                  "12",
                                  "--learning_rate",
                                  "0.01",
                                  "--logging_steps",
                                  "1",
                                  "--save_strategy",
                                  "no",
                                  "--output_dir",
                                  dir_.sub(name),
                                  "--device",
                                  "lazy",
                                  "--disable_tqdm"};
    f.insert(f.end(), extra.begin(), extra.end());
    CliResult r = run_loom_cli(dir_, f);
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    return logged(read_json(dir_.sub(name) + "/trainer_state.json"), "loss");
  };
  const auto ga =
      run("ga2", {"--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "2"});
  expect_close(ga, trl["ga2"]["losses"].get<std::vector<double>>(), 1e-5, "ga 2 x 4 vs TRL");
  const auto packed = run("packed", {"--per_device_train_batch_size", "8", "--packing", "true"});
  expect_close(packed, trl["packed"]["losses"].get<std::vector<double>>(), 1e-5, "packed vs TRL");
}

TEST_F(SftPackingCli, TwoRanksEqualOneProcessOverTheStepsTargetTokens) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "mpirun not found (Debian: openmpi-bin)";
  if (!dist::mpi_available()) GTEST_SKIP() << "loom was built without MPI (LOOM_MPI)";
  // 8 rows, a step holds all of them: the same rows in every step, whatever the shards.
  const std::string train = conversations(8);
  auto run = [&](const std::string& name, int np, int batch, int ga) {
    auto f = flags(train, dir_.sub(name), batch);
    f.insert(f.end(), {"--max_steps", "4", "--optim", "sgd", "--learning_rate", "0.5",
                       "--lr_scheduler_type", "constant", "--max_grad_norm", "0",
                       "--gradient_accumulation_steps", std::to_string(ga)});
    CliResult r = run_ranks(dir_, np, f);
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    return read_json(dir_.sub(name) + "/trainer_state.json");
  };
  nlohmann::json one = run("one", 0, 8, 1);
  for (auto [name, batch, ga] : {std::tuple{"two", 4, 1}, std::tuple{"two_ga", 2, 2}}) {
    nlohmann::json two = run(name, 2, batch, ga);
    ASSERT_EQ(logged(one, "loss").size(), 4u);
    expect_close(logged(two, "loss"), logged(one, "loss"), 1e-5, std::string(name) + " loss");
    EXPECT_LE(max_weight_difference(dir_.sub(name) + "/model.safetensors",
                                    dir_.sub("one") + "/model.safetensors"),
              1e-5)
        << name;
  }
}

}  // namespace
}  // namespace loom::testing
