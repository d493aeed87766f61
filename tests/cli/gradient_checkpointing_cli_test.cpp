// `loom train --gradient_checkpointing` (docs/remat.md) through the built
// binary: the tiny from-scratch GPT-2 run (dropout 0.1 on) with and without
// the flag logs the same losses bit for bit (trainer_state.json) and saves
// the same weights byte for byte, the flag lands in training_args.json, and
// lazy_metrics.json's training-step executable plans a smaller arena. Skips
// when the binary is not built.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "cli/tiny_train.h"

namespace loom::testing {
namespace {

nlohmann::json read_cli_json(const std::string& path) {
  return nlohmann::json::parse(read_cli_file(path), nullptr, /*allow_exceptions=*/false);
}

std::vector<double> logged_losses(const std::string& out) {
  std::vector<double> losses;
  nlohmann::json state = read_cli_json(out + "/trainer_state.json");
  for (const auto& entry : state["log_history"])
    if (entry.contains("loss")) losses.push_back(entry["loss"].get<double>());
  return losses;
}

int64_t largest_arena(const std::string& out) {
  nlohmann::json lazy = read_cli_json(out + "/lazy_metrics.json");
  int64_t best = 0;
  for (const auto& [key, e] : lazy["executables"].items())
    best = std::max(best, e.value("arena_bytes", int64_t{0}));
  return best;
}

TEST(LoomCliGradientCheckpointing, SameLossesAndWeightsSmallerArena) {
  if (loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built next to the tests";
  TempDir dir;
  const std::string corpus = write_tiny_corpus(dir, 150);
  auto run = [&](const std::string& name, bool checkpointing) {
    const std::string out = dir.sub(name);
    auto flags = tiny_train_flags(corpus, out);
    flags.insert(flags.end(), {"--max_steps", "4", "--logging_steps", "1", "--block_size", "16",
                               "--eval_strategy", "no", "--save_strategy", "no"});
    if (checkpointing) flags.push_back("--gradient_checkpointing");
    CliResult r = run_loom_cli(dir, flags);
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    return out;
  };
  const std::string plain = run("plain", false), remat = run("remat", true);
  std::vector<double> want = logged_losses(plain), got = logged_losses(remat);
  ASSERT_EQ(want.size(), 4u);
  EXPECT_EQ(got, want);
  EXPECT_EQ(read_cli_file(remat + "/model.safetensors"),
            read_cli_file(plain + "/model.safetensors"));
  EXPECT_EQ(read_cli_json(remat + "/training_args.json").value("gradient_checkpointing", false),
            true);
  EXPECT_EQ(read_cli_json(plain + "/training_args.json").value("gradient_checkpointing", true),
            false);
  EXPECT_LT(largest_arena(remat), largest_arena(plain));
}

}  // namespace
}  // namespace loom::testing
