// Resuming --fsdp checkpoints on one process (world size 1): "last" finds
// them (their optimizer state is optimizer_shards.json + one shard per rank,
// not optimizer.safetensors); each shard names its rank, world size and step
// in its __metadata__ and a shard that is not its place's is refused, by
// name, before any use ("last" passes over such a checkpoint); resuming
// across sharding (a --fsdp checkpoint without --fsdp and the reverse) gives
// docs/distributed.md's advice, not a save_only_model hint.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/error_of.h"
#include "loom/safetensors.h"
#include "train/checkpoint_complete.h"
#include "train/fsdp_checkpoint.h"
#include "train/train_test_util.h"

namespace loom::fsdp_resume_test {
namespace {

namespace fs = std::filesystem;

struct StepCounter : TrainerCallback {
  int steps = 0;
  std::string name() const override { return "StepCounter"; }
  void on_step_end(const TrainingArguments&, const TrainerState&, TrainerControl&) override {
    ++steps;
  }
};

TrainingArguments args_for(const std::string& dir, int64_t max_steps, const std::string& fsdp) {
  TrainingArguments args = testing::quiet_args(dir);
  args.max_steps = max_steps;
  args.per_device_train_batch_size = 4;
  args.save_strategy = "steps";
  args.save_steps = 2;
  args.fsdp = fsdp;
  return args;
}

// Trains a tiny GPT-2 on 16 examples; the optimizer steps this run took.
int run(const TrainingArguments& args, std::optional<std::string> resume = std::nullopt) {
  Trainer t(testing::tiny_gpt2(1), args, testing::token_dataset(16));
  testing::silence(t);
  auto counter = std::make_shared<StepCounter>();
  t.add_callback(counter);
  t.train(resume);
  return counter->steps;
}

std::string resume_error(const TrainingArguments& args, const std::string& resume) {
  Trainer t(testing::tiny_gpt2(1), args, testing::token_dataset(16));
  testing::silence(t);
  return testing::error_of([&] { t.train(resume); });
}

TEST(FsdpResume, LastFindsTheNewestFsdpCheckpoint) {
  testing::TempDir dir;
  run(args_for(dir.path(), 4, "full_shard"));
  ASSERT_TRUE(fs::exists(dir.sub("checkpoint-4/optimizer_shards.json")));
  EXPECT_FALSE(fs::exists(dir.sub("checkpoint-4/optimizer.safetensors")));
  EXPECT_EQ(train::checkpoint_problem(dir.sub("checkpoint-4")), std::nullopt);
  EXPECT_EQ(run(args_for(dir.path(), 6, "full_shard"), "last"), 2) << "resumed from checkpoint-4";
}

TEST(FsdpResume, EachShardNamesItsRankWorldSizeAndStep) {
  testing::TempDir dir;
  run(args_for(dir.path(), 2, "shard_grad_op"));
  const auto meta =
      safetensors::File::open(dir.sub("checkpoint-2/optimizer_shard_0.safetensors")).metadata();
  EXPECT_EQ(meta.at("fsdp_rank"), "0");
  EXPECT_EQ(meta.at("fsdp_world_size"), "1");
  EXPECT_EQ(meta.at("global_step"), "2");
  EXPECT_EQ(meta.at("optimizer"), "AdamW");
}

TEST(FsdpResume, AShardFromAnotherCheckpointIsRefusedByName) {
  testing::TempDir dir;
  run(args_for(dir.path(), 4, "full_shard"));
  const std::string shard = "/optimizer_shard_0.safetensors";
  fs::copy_file(dir.sub("checkpoint-2") + shard, dir.sub("checkpoint-4") + shard,
                fs::copy_options::overwrite_existing);
  const std::string want =
      "optimizer_shard_0.safetensors holds rank 0's shard of 1 ranks at step 2, expected rank 0 "
      "of 1 at step 4 (a shard moved, or copied from another checkpoint)";
  EXPECT_EQ(train::checkpoint_problem(dir.sub("checkpoint-4")), want);
  const std::string err =
      resume_error(args_for(dir.path(), 6, "full_shard"), dir.sub("checkpoint-4"));
  EXPECT_NE(err.find("[fsdp] " + dir.sub("checkpoint-4") + ": " + want), std::string::npos) << err;
  // "last" passes over it (a warning) to checkpoint-2.
  ::testing::internal::CaptureStderr();
  const int steps = run(args_for(dir.path(), 6, "full_shard"), "last");
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(steps, 4) << "resumed from checkpoint-2";
  EXPECT_NE(log.find("is incomplete (" + want + ")"), std::string::npos) << log;
}

TEST(FsdpResume, AShardOfAnotherWorldSizeOrAMissingShardIsRefused) {
  testing::TempDir dir;
  run(args_for(dir.path(), 2, "full_shard"));
  const std::string c = dir.sub("checkpoint-2");
  nlohmann::json idx = nlohmann::json::parse(std::ifstream(c + "/optimizer_shards.json"));
  idx["world_size"] = 2;
  std::ofstream(c + "/optimizer_shards.json") << idx.dump();
  EXPECT_EQ(train::checkpoint_problem(c),
            "optimizer_shard_0.safetensors holds rank 0's shard of 1 ranks at step 2, expected "
            "rank 0 of 2 at step 2 (a shard moved, or copied from another checkpoint)");
  idx["world_size"] = 1;
  std::ofstream(c + "/optimizer_shards.json") << idx.dump();
  EXPECT_EQ(train::checkpoint_problem(c), std::nullopt);
  fs::remove(c + "/optimizer_shard_0.safetensors");
  EXPECT_EQ(train::checkpoint_problem(c),
            "no optimizer_shard_0.safetensors (optimizer_shards.json names 1 ranks)");
  std::ofstream(c + "/optimizer_shards.json") << "{\"world_size\": ";
  EXPECT_EQ(train::checkpoint_problem(c),
            "optimizer_shards.json is malformed (no world_size >= 1)");
}

TEST(FsdpResume, ResumingAcrossShardingGivesTheDocumentedAdvice) {
  testing::TempDir sharded, whole;
  run(args_for(sharded.path(), 2, "full_shard"));
  run(args_for(whole.path(), 2, ""));
  std::string err = resume_error(args_for(sharded.path(), 4, ""), "last");
  EXPECT_NE(err.find("[Trainer] checkpoint " + sharded.sub("checkpoint-2") +
                     " was saved with --fsdp (optimizer_shards.json and one optimizer shard per "
                     "rank): resume it with --fsdp, on any number of ranks (1 included)"),
            std::string::npos)
      << err;
  err = resume_error(args_for(whole.path(), 4, "full_shard"), "last");
  EXPECT_NE(err.find("[Trainer] checkpoint " + whole.sub("checkpoint-2") +
                     " was saved without --fsdp (it holds optimizer.safetensors, not "
                     "optimizer_shards.json): resume it without --fsdp"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("save_only_model"), std::string::npos) << err;
}

}  // namespace
}  // namespace loom::fsdp_resume_test
