// Checkpoints: the files of checkpoint-N (model, config, tokenizer, optimizer,
// scheduler, rng state, trainer_state.json with transformers' fields,
// training_args.json), save_total_limit rotation that keeps the newest and
// the best, leftover tmp directories ignored and removed, errors for a
// missing or incomplete checkpoint, and resume from "last".
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/error_of.h"
#include "train/checkpoint_files.h"
#include "train/train_test_util.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json parse_json_file(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

using testing::error_of;

TEST(TrainerCheckpoint, WritesEveryFile) {
  testing::TempDir dir, tok;
  // Tokenizer files are copied as they are.
  std::ofstream(tok.sub("vocab.json")) << R"({"a": 0})";
  std::ofstream(tok.sub("merges.txt")) << "#version: 0.2\n";
  TrainingArguments args = testing::quiet_args(dir.path());
  args.max_steps = 4;
  args.save_strategy = "steps";
  args.save_steps = 2;
  args.logging_steps = 1;
  args.per_device_train_batch_size = 4;
  Trainer trainer(testing::tiny_gpt2(1), args, testing::token_dataset(16), nullptr,
                  {.tokenizer_dir = tok.path()});
  testing::silence(trainer);
  trainer.train();
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-2", "checkpoint-4"}));
  const std::string c = dir.sub("checkpoint-2");
  for (const char* f :
       {"model.safetensors", "config.json", "vocab.json", "merges.txt", "optimizer.safetensors",
        "scheduler.json", "rng_state.json", "trainer_state.json", "training_args.json"})
    EXPECT_TRUE(fs::is_regular_file(c + "/" + f)) << f;
  json st = parse_json_file(c + "/trainer_state.json");
  EXPECT_EQ(st.at("global_step"), 2);
  EXPECT_EQ(st.at("max_steps"), 4);
  EXPECT_EQ(st.at("logging_steps"), 1);
  EXPECT_EQ(st.at("save_steps"), 2);
  EXPECT_EQ(st.at("train_batch_size"), 4);
  EXPECT_TRUE(st.at("trial_name").is_null());
  EXPECT_TRUE(st.at("is_world_process_zero").get<bool>());
  EXPECT_DOUBLE_EQ(st.at("epoch").get<double>(), 0.5);  // 2 of 4 batches
  ASSERT_EQ(st.at("log_history").size(), 2u);
  EXPECT_TRUE(st.at("log_history")[0].at("step").is_number_integer());
  EXPECT_TRUE(st.at("stateful_callbacks").contains("TrainerControl"));
  EXPECT_GT(st.at("total_flos").get<double>(), 0);
  json ta = parse_json_file(c + "/training_args.json");
  EXPECT_EQ(ta.at("save_steps"), 2.0);
  EXPECT_EQ(ta.at("output_dir"), dir.path());
  json rng = parse_json_file(c + "/rng_state.json");
  EXPECT_EQ(rng.at("generator").at("seed"), 42);
  EXPECT_EQ(rng.at("sampler").at("batches_in_epoch"), 2);
  // The saved model loads back and equals the trained one at step 4.
  auto reloaded = GPT2LMHeadModel::from_pretrained(dir.sub("checkpoint-4"));
  testing::expect_bitwise_equal(testing::snapshot(*reloaded), testing::snapshot(trainer.model()));
  EXPECT_TRUE(fs::is_regular_file(dir.sub("lazy_metrics.json")));
}

TEST(TrainerCheckpoint, RotationKeepsNewestAndBest) {
  // Six checkpoints; limit 2; the best is checkpoint-2.
  testing::TempDir dir;
  for (int s : {2, 4, 6, 8, 10, 12})
    fs::create_directories(dir.sub("checkpoint-" + std::to_string(s)));
  fs::create_directories(dir.sub("other"));
  train::rotate_checkpoints(dir.path(), 2, dir.sub("checkpoint-2"));
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-2", "checkpoint-12"}));
  EXPECT_TRUE(fs::exists(dir.sub("other")));
  // Limit 1 with a best that is not the newest keeps both (never the best).
  train::rotate_checkpoints(dir.path(), 1, dir.sub("checkpoint-2"));
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-2", "checkpoint-12"}));
  train::rotate_checkpoints(dir.path(), 1, std::nullopt);
  EXPECT_EQ(testing::checkpoint_names(dir.path()), (std::vector<std::string>{"checkpoint-12"}));
  // Numerical, not lexical, order: checkpoint-9 is older than checkpoint-10.
  for (int s : {9, 10}) fs::create_directories(dir.sub("checkpoint-" + std::to_string(s)));
  EXPECT_EQ(train::sorted_checkpoints(dir.path()).front(), dir.sub("checkpoint-9"));
  EXPECT_EQ(get_last_checkpoint(dir.path()), dir.sub("checkpoint-12"));
}

TEST(TrainerCheckpoint, TrainingRotationNeverDeletesTheBest) {
  // The metric is the eval loss with greater_is_better: the best checkpoint
  // is the one whose evaluation logged the highest loss.
  testing::TempDir dir;
  TrainingArguments args = testing::quiet_args(dir.path());
  args.max_steps = 10;
  args.per_device_train_batch_size = 4;
  args.eval_strategy = "steps";
  args.eval_steps = 2;
  args.save_strategy = "steps";
  args.save_steps = 2;
  args.save_total_limit = 2;
  args.metric_for_best_model = "loss";
  args.greater_is_better = true;
  Trainer trainer(testing::tiny_gpt2(2), args, testing::token_dataset(16),
                  testing::token_dataset(8, 8, true));
  testing::silence(trainer);
  trainer.train();
  auto evals = testing::logged(trainer.state(), "eval_loss");
  ASSERT_EQ(evals.size(), 5u);
  int64_t best_step = evals[0].first;
  double best = evals[0].second;
  for (auto [step, v] : evals)
    if (v > best) best = v, best_step = step;
  std::vector<std::string> want{"checkpoint-" + std::to_string(best_step)};
  if (best_step != 10) want.push_back("checkpoint-10");
  EXPECT_EQ(testing::checkpoint_names(dir.path()), want);
  ASSERT_TRUE(trainer.state().best_model_checkpoint.has_value());
  EXPECT_EQ(fs::path(*trainer.state().best_model_checkpoint).filename(), want.front());
  EXPECT_EQ(trainer.state().best_metric, best);
}

TEST(TrainerCheckpoint, LoadBestModelAtEndRestoresTheBestWeights) {
  testing::TempDir dir;
  TrainingArguments args = testing::quiet_args(dir.path());
  args.max_steps = 6;
  args.per_device_train_batch_size = 4;
  args.eval_strategy = "steps";
  args.eval_steps = 2;
  args.save_strategy = "steps";
  args.save_steps = 2;
  args.load_best_model_at_end = true;
  args.metric_for_best_model = "loss";
  args.greater_is_better = true;  // the worst loss: the first evaluation
  Trainer trainer(testing::tiny_gpt2(2), args, testing::token_dataset(16),
                  testing::token_dataset(8));
  testing::silence(trainer);
  trainer.train();
  ASSERT_TRUE(trainer.state().best_model_checkpoint.has_value());
  auto best = GPT2LMHeadModel::from_pretrained(*trainer.state().best_model_checkpoint);
  testing::expect_bitwise_equal(testing::snapshot(trainer.model()), testing::snapshot(*best));
  auto last = GPT2LMHeadModel::from_pretrained(dir.sub("checkpoint-6"));
  if (*trainer.state().best_model_checkpoint != dir.sub("checkpoint-6")) {
    EXPECT_NE(testing::snapshot(*last), testing::snapshot(trainer.model()));
  }
}

TEST(TrainerCheckpoint, ResumeErrorsNameTheProblem) {
  testing::TempDir dir;
  TrainingArguments args = testing::quiet_args(dir.path());
  args.max_steps = 2;
  args.per_device_train_batch_size = 4;
  {
    Trainer t(testing::tiny_gpt2(1), args, testing::token_dataset(8));
    testing::silence(t);
    EXPECT_NE(error_of([&] { t.train("last"); }).find("no checkpoint-N directory"),
              std::string::npos);
    EXPECT_NE(error_of([&] { t.train(dir.sub("nope")); }).find("is not a directory"),
              std::string::npos);
  }
  args.save_strategy = "steps";
  args.save_steps = 1;
  {
    Trainer t(testing::tiny_gpt2(1), args, testing::token_dataset(8));
    testing::silence(t);
    t.train();
  }
  // A second fresh run in the same output_dir is refused ...
  {
    Trainer t(testing::tiny_gpt2(1), args, testing::token_dataset(8));
    testing::silence(t);
    EXPECT_NE(error_of([&] { t.train(); }).find("overwrite_output_dir"), std::string::npos);
  }
  // ... and a checkpoint with a missing file names it.
  fs::remove(dir.sub("checkpoint-1/optimizer.safetensors"));
  {
    Trainer t(testing::tiny_gpt2(1), args, testing::token_dataset(8));
    testing::silence(t);
    EXPECT_NE(
        error_of([&] { t.train(dir.sub("checkpoint-1")); }).find("has no optimizer.safetensors"),
        std::string::npos);
  }
  // A corrupt trainer_state.json too.
  std::ofstream(dir.sub("checkpoint-2/trainer_state.json")) << "{not json";
  {
    Trainer t(testing::tiny_gpt2(1), args, testing::token_dataset(8));
    testing::silence(t);
    EXPECT_NE(error_of([&] { t.train("last"); }).find("trainer_state"), std::string::npos);
  }
  // overwrite_output_dir starts over.
  args.overwrite_output_dir = true;
  Trainer t(testing::tiny_gpt2(1), args, testing::token_dataset(8));
  testing::silence(t);
  t.train();
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-1", "checkpoint-2"}));
}

TEST(TrainerCheckpoint, StaleTmpDirectoriesAreIgnoredAndRemoved) {
  testing::TempDir dir;
  TrainingArguments args = testing::quiet_args(dir.path());
  args.max_steps = 2;
  args.per_device_train_batch_size = 4;
  args.save_strategy = "steps";
  args.save_steps = 1;
  {
    Trainer t(testing::tiny_gpt2(1), args, testing::token_dataset(8));
    testing::silence(t);
    t.train();
  }
  fs::create_directories(dir.sub("tmp-checkpoint-9"));
  std::ofstream(dir.sub("tmp-checkpoint-9/model.safetensors")) << "partial";
  EXPECT_EQ(get_last_checkpoint(dir.path()), dir.sub("checkpoint-2"));
  args.max_steps = 3;
  Trainer t(testing::tiny_gpt2(1), args, testing::token_dataset(8));
  testing::silence(t);
  t.train("last");
  EXPECT_FALSE(fs::exists(dir.sub("tmp-checkpoint-9")));
  EXPECT_EQ(t.state().global_step, 3);
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// Writes a checkpoint for tests/train/check_checkpoint_in_transformers.py
// (which loads it with transformers) when LOOM_EXPORT_CHECKPOINT names a
// directory; skipped otherwise. A GPT-2 with the real vocabulary, so the
// tokenizer and the model agree.
TEST(TrainerCheckpointExport, ForTransformers) {
  const char* out = std::getenv("LOOM_EXPORT_CHECKPOINT");
  if (!out) GTEST_SKIP() << "set LOOM_EXPORT_CHECKPOINT to write a checkpoint";
  GPT2Config c = testing::tiny_gpt2_config();
  c.vocab_size = 50257;
  c.n_positions = 32;
  manual_seed(11);
  auto model = std::make_shared<GPT2LMHeadModel>(c);
  TrainingArguments args = testing::quiet_args(out);
  args.per_device_train_batch_size = 2;
  args.max_steps = 2;
  args.logging_steps = 1;
  args.save_strategy = "steps";
  args.save_steps = 2;
  args.overwrite_output_dir = true;
  auto ds = testing::token_dataset(8);
  Trainer t(model, args, ds, nullptr,
            {.tokenizer_dir = std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/tokenizers/gpt2"});
  testing::silence(t);
  t.train();
  ASSERT_TRUE(std::filesystem::exists(std::string(out) + "/checkpoint-2/tokenizer.json"));
}

}  // namespace
}  // namespace loom
