// Checkpoint safety: an unusable output_dir fails before the first step with
// a loom::Error naming it; rotation never deletes the checkpoint it just
// wrote; resuming from a checkpoint that is not the newest moves the newer
// ones of the abandoned run aside (output_dir/abandoned-<time>/); a checkpoint moved aside by a
// save killed while replacing it (checkpoint-N.old-PID) is put back at start-up and leftovers are
// removed; resume_from_checkpoint "last" passes over incomplete newer checkpoints (warning) to the
// newest complete one. Assumes a POSIX file system; the read-only directory case is skipped as root
// (root ignores permissions).
// A property test damages a saved checkpoint at random (a file deleted,
// truncated, or two files swapped): resuming from it is a loom::Error naming a
// damaged file, never a silent resume (a failure prints the round).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "common/error_of.h"
#include "train/checkpoint_complete.h"
#include "train/checkpoint_files.h"
#include "train/train_test_util.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

// Counts train begins and optimizer steps.
struct StepCounter : TrainerCallback {
  int train_begins = 0;
  int steps = 0;
  std::string name() const override { return "StepCounter"; }
  void on_train_begin(const TrainingArguments&, const TrainerState&, TrainerControl&) override {
    ++train_begins;
  }
  void on_step_end(const TrainingArguments&, const TrainerState&, TrainerControl&) override {
    ++steps;
  }
};

TrainingArguments saving_args(const std::string& dir, int64_t max_steps, double save_steps) {
  TrainingArguments args = testing::quiet_args(dir);
  args.max_steps = max_steps;
  args.per_device_train_batch_size = 4;
  args.save_strategy = "steps";
  args.save_steps = save_steps;
  return args;
}

// Trains a tiny GPT-2 on 16 examples (4 batches per epoch) from `resume`.
std::shared_ptr<StepCounter> run(const TrainingArguments& args,
                                 std::optional<std::string> resume = std::nullopt) {
  Trainer t(testing::tiny_gpt2(1), args, testing::token_dataset(16));
  testing::silence(t);
  auto counter = std::make_shared<StepCounter>();
  t.add_callback(counter);
  t.train(resume);
  return counter;
}

std::vector<std::string> names_containing(const std::string& dir, const std::string& part) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.find(part) != std::string::npos) out.push_back(n);
  }
  return out;
}

int64_t saved_global_step(const std::string& checkpoint) {
  std::ifstream in(checkpoint + "/trainer_state.json");
  return nlohmann::json::parse(in).at("global_step").get<int64_t>();
}

TEST(TrainerCheckpointSafety, OutputDirUnderARegularFileFailsBeforeTheFirstStep) {
  testing::TempDir tmp;
  tmp.write("file.txt", "not a directory");
  const std::string out = tmp.sub("file.txt/out");
  Trainer t(testing::tiny_gpt2(1), saving_args(out, 3, 1), testing::token_dataset(16));
  testing::silence(t);
  auto counter = std::make_shared<StepCounter>();
  t.add_callback(counter);
  const std::string err = testing::error_of([&] { t.train(); });
  EXPECT_NE(err.find("[TrainingArguments] output_dir '" + out + "': "), std::string::npos) << err;
  EXPECT_NE(err.find("ot a directory"), std::string::npos) << err;
  EXPECT_EQ(counter->train_begins, 0);
  EXPECT_EQ(counter->steps, 0);
  EXPECT_TRUE(fs::is_regular_file(tmp.sub("file.txt")));
}

TEST(TrainerCheckpointSafety, OutputDirThatIsARegularFileFails) {
  testing::TempDir tmp;
  const std::string out = tmp.write("file.txt", "x");
  Trainer t(testing::tiny_gpt2(1), saving_args(out, 3, 1), testing::token_dataset(16));
  testing::silence(t);
  const std::string err = testing::error_of([&] { t.train(); });
  EXPECT_NE(err.find("[TrainingArguments] output_dir '" + out + "': "), std::string::npos) << err;
}

TEST(TrainerCheckpointSafety, ReadOnlyOutputDirFailsBeforeTheFirstStep) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permissions are not enforced";
  testing::TempDir tmp;
  const std::string out = tmp.sub("ro");
  fs::create_directories(out);
  ASSERT_EQ(::chmod(out.c_str(), 0500), 0);
  Trainer t(testing::tiny_gpt2(1), saving_args(out, 3, 1), testing::token_dataset(16));
  testing::silence(t);
  auto counter = std::make_shared<StepCounter>();
  t.add_callback(counter);
  const std::string err = testing::error_of([&] { t.train(); });
  ::chmod(out.c_str(), 0700);
  EXPECT_NE(err.find("[TrainingArguments] output_dir '" + out + "': "), std::string::npos) << err;
  EXPECT_NE(err.find("ermission denied"), std::string::npos) << err;
  EXPECT_EQ(counter->steps, 0);
}

TEST(TrainerCheckpointSafety, RotationKeepsTheCheckpointJustWritten) {
  testing::TempDir dir;
  for (int s : {100, 150, 200, 300})
    fs::create_directories(dir.sub("checkpoint-" + std::to_string(s)));
  train::rotate_checkpoints(dir.path(), 2, std::nullopt, dir.sub("checkpoint-150"));
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-150", "checkpoint-300"}));
}

TEST(TrainerCheckpointSafety, ResumingFromAnOlderCheckpointMovesTheNewerOnesAside) {
  testing::TempDir dir;
  run(saving_args(dir.path(), 6, 2));
  ASSERT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-2", "checkpoint-4", "checkpoint-6"}));

  // A resumed run that saves nothing leaves the directory alone.
  TrainingArguments no_save = saving_args(dir.path(), 3, 1);
  no_save.save_strategy = "no";
  run(no_save, dir.sub("checkpoint-2"));
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-2", "checkpoint-4", "checkpoint-6"}));
  EXPECT_TRUE(names_containing(dir.path(), train::kAbandonedPrefix).empty());

  // Resume from 2, saving every step with limit 2: 4 and 6 (the abandoned
  // run) are moved into abandoned-<time>/ at the start, so rotation neither
  // deletes them nor 2-then-3 in favour of the stale 6, this run writes its
  // own checkpoint-4, and "last" afterwards is that one.
  TrainingArguments args = saving_args(dir.path(), 4, 1);
  args.save_total_limit = 2;
  ::testing::internal::CaptureStderr();
  auto counter = run(args, dir.sub("checkpoint-2"));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(counter->steps, 2);
  const std::vector<std::string> aside = names_containing(dir.path(), train::kAbandonedPrefix);
  ASSERT_EQ(aside.size(), 1u);
  const std::string moved = dir.sub(aside[0]);
  EXPECT_NE(log.find("abandoned run (checkpoint-4, checkpoint-6) to " + moved), std::string::npos)
      << log;
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-3", "checkpoint-4"}));
  EXPECT_EQ(testing::checkpoint_names(moved),
            (std::vector<std::string>{"checkpoint-4", "checkpoint-6"}));
  EXPECT_EQ(saved_global_step(moved + "/checkpoint-6"), 6);  // the abandoned run's, intact
  ASSERT_EQ(get_last_checkpoint(dir.path()), dir.sub("checkpoint-4"));
  std::ifstream in(dir.sub("checkpoint-4/trainer_state.json"));
  const auto st = nlohmann::json::parse(in);
  EXPECT_EQ(st.at("max_steps"), 4);  // this run's, not the abandoned run's 6
  EXPECT_EQ(st.at("save_steps"), 1);
  std::ifstream old_in(moved + "/checkpoint-4/trainer_state.json");
  EXPECT_EQ(nlohmann::json::parse(old_in).at("max_steps"), 6);  // moved, not overwritten
}

TEST(TrainerCheckpointSafety, AbandonedFolderNamesDoNotCollide) {
  testing::TempDir dir;
  for (const char* n : {"checkpoint-1", "checkpoint-5", "checkpoint-7"})
    fs::create_directories(dir.sub(n));
  const train::AbandonedCheckpoints first =
      train::move_checkpoints_after(dir.path(), 1, dir.sub("checkpoint-1"));
  EXPECT_EQ(first.names, (std::vector<std::string>{"checkpoint-5", "checkpoint-7"}));
  fs::create_directories(dir.sub("checkpoint-5"));
  const train::AbandonedCheckpoints second = train::move_checkpoints_after(dir.path(), 1, "");
  EXPECT_EQ(second.names, (std::vector<std::string>{"checkpoint-5"}));
  EXPECT_NE(first.dir, second.dir);  // same second: "-2" appended
  EXPECT_TRUE(fs::is_directory(first.dir + "/checkpoint-5"));
  EXPECT_TRUE(fs::is_directory(second.dir + "/checkpoint-5"));
  EXPECT_EQ(testing::checkpoint_names(dir.path()), (std::vector<std::string>{"checkpoint-1"}));
  EXPECT_TRUE(train::move_checkpoints_after(dir.path(), 1, "").dir.empty());  // nothing to move
}

TEST(TrainerCheckpointSafety, CheckpointMovedAsideByAnInterruptedReplaceIsRestored) {
  testing::TempDir dir;
  run(saving_args(dir.path(), 2, 1));
  // The state a crash between commit_dir's two renames leaves while replacing
  // checkpoint-2 (the complete new copy still in tmp-checkpoint-2), plus an
  // old copy of checkpoint-1 whose removal was cut short.
  fs::rename(dir.sub("checkpoint-2"), dir.sub("checkpoint-2.old-4242"));
  fs::copy(dir.sub("checkpoint-2.old-4242"), dir.sub("tmp-checkpoint-2"),
           fs::copy_options::recursive);
  fs::copy(dir.sub("checkpoint-1"), dir.sub("checkpoint-1.old-999"), fs::copy_options::recursive);
  ASSERT_EQ(get_last_checkpoint(dir.path()), dir.sub("checkpoint-1"));  // until repaired

  ::testing::internal::CaptureStderr();
  auto counter = run(saving_args(dir.path(), 3, 1), "last");
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("restored " + dir.sub("checkpoint-2")), std::string::npos) << log;
  EXPECT_EQ(counter->steps, 1);  // resumed from checkpoint-2, not checkpoint-1
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-1", "checkpoint-2", "checkpoint-3"}));
  EXPECT_EQ(saved_global_step(dir.sub("checkpoint-2")), 2);
  EXPECT_TRUE(names_containing(dir.path(), ".old-").empty());
  EXPECT_TRUE(names_containing(dir.path(), "tmp-").empty());
}

TEST(TrainerCheckpointSafety, RecoveryRemovesLeftoversWhenTheCheckpointExists) {
  testing::TempDir dir;
  for (const char* n : {"checkpoint-5", "checkpoint-5.old-1", "checkpoint-7.old-2",
                        "checkpoint-7.old-3", "other.old-4"})
    fs::create_directories(dir.sub(n));
  std::ofstream(dir.sub("checkpoint-7.old-2/marker")) << "kept";
  EXPECT_EQ(train::recover_replaced_checkpoints(dir.path()),
            (std::vector<std::string>{"checkpoint-7"}));
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-5", "checkpoint-7"}));
  EXPECT_TRUE(fs::exists(dir.sub("checkpoint-7/marker")));  // the first copy, by name
  EXPECT_EQ(names_containing(dir.path(), ".old-"), (std::vector<std::string>{"other.old-4"}));
}

// Cuts `path` to half its size (a copy or sync cut short).
void truncate_to_half(const std::string& path) { fs::resize_file(path, fs::file_size(path) / 2); }

// "last" passes over incomplete newer checkpoints with a warning naming
// each and why, and resumes from the newest complete one (transformers#35782).
TEST(TrainerCheckpointSafety, LastFallsBackToTheNewestCompleteCheckpoint) {
  testing::TempDir dir;
  run(saving_args(dir.path(), 3, 1));
  fs::remove(dir.sub("checkpoint-3/trainer_state.json"));
  truncate_to_half(dir.sub("checkpoint-2/model.safetensors"));
  ::testing::internal::CaptureStderr();
  auto counter = run(saving_args(dir.path(), 4, 1), "last");
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(counter->steps, 3) << "resumed from checkpoint-1";
  EXPECT_NE(log.find("warning: " + dir.sub("checkpoint-3") +
                     " is incomplete (no trainer_state.json); resuming from the newest "
                     "complete checkpoint, checkpoint-1"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("warning: " + dir.sub("checkpoint-2") + " is incomplete ([safetensors] " +
                     dir.sub("checkpoint-2/model.safetensors")),
            std::string::npos)
      << log;
  EXPECT_EQ(
      testing::checkpoint_names(dir.path()),
      (std::vector<std::string>{"checkpoint-1", "checkpoint-2", "checkpoint-3", "checkpoint-4"}));
  EXPECT_EQ(saved_global_step(dir.sub("checkpoint-3")), 3);  // rewritten by this run
}

TEST(TrainerCheckpointSafety, LastWithNoCompleteCheckpointListsWhy) {
  testing::TempDir dir;
  run(saving_args(dir.path(), 2, 1));
  truncate_to_half(dir.sub("checkpoint-2/optimizer.safetensors"));
  std::ofstream(dir.sub("checkpoint-1/trainer_state.json")) << "{\"global_step\": ";
  Trainer t(testing::tiny_gpt2(1), saving_args(dir.path(), 3, 1), testing::token_dataset(16));
  testing::silence(t);
  const std::string err = testing::error_of([&] { t.train("last"); });
  EXPECT_NE(err.find("[Trainer] resume_from_checkpoint 'last': no complete checkpoint in "
                     "output_dir '" +
                     dir.path() + "' (checkpoint-2: [safetensors] " +
                     dir.sub("checkpoint-2/optimizer.safetensors")),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("; checkpoint-1: [trainer_state] "), std::string::npos) << err;
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-1", "checkpoint-2"}));
}

TEST(TrainerCheckpointSafety, CheckpointProblemNamesWhatIsMissingOrDamaged) {
  testing::TempDir dir;
  run(saving_args(dir.path(), 1, 1));
  const std::string c = dir.sub("checkpoint-1");
  EXPECT_EQ(train::checkpoint_problem(c), std::nullopt);
  EXPECT_EQ(train::checkpoint_problem(dir.sub("nope")), "not a directory");
  for (const char* f : {"scheduler.json", "rng_state.json"}) {
    fs::copy(c, dir.sub("copy"), fs::copy_options::recursive);
    fs::remove(dir.sub(std::string("copy/") + f));
    EXPECT_EQ(train::checkpoint_problem(dir.sub("copy")), std::string("no ") + f);
    fs::remove_all(dir.sub("copy"));
  }
  fs::remove(c + "/optimizer.safetensors");
  EXPECT_EQ(train::checkpoint_problem(c),
            "no optimizer.safetensors nor optimizer_shards.json (saved with save_only_model?)");
  fs::remove(c + "/model.safetensors");
  std::ofstream(c + "/optimizer.safetensors") << "x";
  ASSERT_TRUE(train::checkpoint_problem(c).has_value());
  EXPECT_NE(train::checkpoint_problem(c)->find("[from_pretrained]"), std::string::npos)
      << *train::checkpoint_problem(c);
}

// Issue 41, deliverable 4: the files resume reads, damaged at random.
TEST(TrainerCheckpointSafety, RandomDamageOfACheckpointIsNeverASilentResume) {
  testing::TempDir dir;
  run(saving_args(dir.sub("run"), 2, 1));
  const std::string good = dir.sub("run/checkpoint-2");
  // Not config.json: transformers' resume does not need it either.
  const std::vector<std::string> files = {"trainer_state.json", "scheduler.json", "rng_state.json",
                                          "optimizer.safetensors", "model.safetensors"};
  std::mt19937 rng(4110);
  int refused = 0;
  for (int round = 0; round < 24; ++round) {
    const std::string ckpt = dir.sub("damaged-" + std::to_string(round));
    fs::copy(good, ckpt, fs::copy_options::recursive);
    const int kind = round % 3;  // 0 delete, 1 truncate, 2 swap
    const std::string a = files[rng() % files.size()];
    std::string b = files[rng() % files.size()];
    while (b == a) b = files[rng() % files.size()];
    std::string what = std::to_string(round) + ": ";
    if (kind == 0) {
      fs::remove(ckpt + "/" + a);
      what += "deleted " + a;
    } else if (kind == 1) {
      const auto size = fs::file_size(ckpt + "/" + a);
      const auto keep = rng() % (size - 1);  // at least the last two bytes go
      fs::resize_file(ckpt + "/" + a, keep);
      what += "truncated " + a + " to " + std::to_string(keep) + " bytes";
    } else {
      fs::rename(ckpt + "/" + a, ckpt + "/swap.tmp");
      fs::rename(ckpt + "/" + b, ckpt + "/" + a);
      fs::rename(ckpt + "/swap.tmp", ckpt + "/" + b);
      what += "swapped " + a + " and " + b;
    }
    Trainer t(testing::tiny_gpt2(1), saving_args(dir.sub("out-" + std::to_string(round)), 4, 1),
              testing::token_dataset(16));
    testing::silence(t);
    const std::string err = testing::error_of([&] { t.train(ckpt); });
    ASSERT_NE(err, "(no error)") << "round " << what << ": resumed silently";
    const bool names_it =
        err.find(a) != std::string::npos || (kind == 2 && err.find(b) != std::string::npos);
    EXPECT_TRUE(names_it) << "round " << what << ": " << err;
    refused += 1;
  }
  EXPECT_EQ(refused, 24);
  Trainer t(testing::tiny_gpt2(1), saving_args(dir.sub("out-good"), 3, 1),
            testing::token_dataset(16));
  testing::silence(t);
  EXPECT_EQ(testing::error_of([&] { t.train(good); }), "(no error)")
      << "the undamaged copy resumes";
}

}  // namespace
}  // namespace loom
