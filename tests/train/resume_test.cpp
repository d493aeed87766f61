// Exact resume: a run stopped mid-epoch (with gradient accumulation, dropout
// on, shuffled data over several epochs) and resumed by a new Trainer from
// its checkpoint logs the same loss, grad_norm and learning_rate at every
// step, and ends with the same weights, bit for bit, as the uninterrupted
// run — on the cpu and on the lazy device. And a process killed while
// writing a checkpoint leaves the previous checkpoint whole: the child (this
// test binary, run again with a filter) dies right after writing the model
// file of its second checkpoint; the parent then finds the last complete
// checkpoint, loads it, and resumes to the same final weights as an
// uninterrupted run. A resumed epoch skips its trained batches at the
// sampler: Dataset::get is never called for them.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/backends.h"
#include "train/train_test_util.h"

extern char** environ;

namespace loom {
namespace {

namespace fs = std::filesystem;

// Sets should_training_stop (and should_save) at step `at`.
struct StopAt : TrainerCallback {
  int64_t at;
  explicit StopAt(int64_t s) : at(s) {}
  std::string name() const override { return "StopAt"; }
  void on_step_end(const TrainingArguments&, const TrainerState& s, TrainerControl& c) override {
    if (s.global_step == at) c.should_training_stop = c.should_save = true;
  }
};

// 40 examples, batch 4, accumulation 2: 10 batches = 5 optimizer steps per
// epoch; 12 steps = 2.4 epochs. Logs every step; no periodic saves.
TrainingArguments resume_args(const std::string& dir, const std::string& device) {
  TrainingArguments a = testing::quiet_args(dir, device);
  a.per_device_train_batch_size = 4;
  a.gradient_accumulation_steps = 2;
  a.max_steps = 12;
  a.logging_steps = 1;
  a.warmup_steps = 3;
  a.weight_decay = 0.01;
  a.save_strategy = "no";
  return a;
}

struct RunResult {
  TrainerState state;
  std::map<std::string, std::vector<float>> params;
};

RunResult run_trainer(const TrainingArguments& args, uint64_t init_seed,
                      std::vector<std::shared_ptr<TrainerCallback>> callbacks,
                      std::optional<std::string> resume = std::nullopt) {
  TrainerOptions opt;
  opt.callbacks = std::move(callbacks);
  Trainer t(testing::tiny_gpt2(init_seed, 0.1), args, testing::token_dataset(40, 8, true), nullptr,
            opt);
  testing::silence(t);
  t.train(resume);
  return {t.state(), testing::snapshot(t.model())};
}

// Every step log (the entries holding "loss") of `a` and `b`: same steps, and
// bitwise the same loss, grad_norm, learning_rate and epoch.
void expect_same_logs(const TrainerState& a, const TrainerState& b) {
  std::vector<const Logs*> la, lb;
  for (const Logs& e : a.log_history)
    if (e.count("loss")) la.push_back(&e);
  for (const Logs& e : b.log_history)
    if (e.count("loss")) lb.push_back(&e);
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); ++i) {
    for (const char* key : {"step", "loss", "grad_norm", "learning_rate", "epoch"}) {
      double x = la[i]->at(key), y = lb[i]->at(key);
      EXPECT_EQ(std::memcmp(&x, &y, sizeof(double)), 0)
          << key << " of log " << i << " (step " << la[i]->at("step") << "): " << x << " vs " << y;
    }
  }
}

class ExactResume : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    LOOM_SKIP_IF_UNAVAILABLE(GetParam());
    if (Device(GetParam()).is_lazy()) testing::reset_lazy_and_wait();
  }
};

// The eager cpu and the lazy device of every registered backend that runs
// whole models (common/backends.h).
std::vector<std::string> resume_devices() {
  std::vector<std::string> out = {"cpu"};
  for (const std::string& d : testing::lazy_devices(/*models=*/true)) out.push_back(d);
  return out;
}

TEST_P(ExactResume, StopAndResumeMidEpochEqualsUninterrupted) {
  testing::TempDir a_dir, b_dir;
  RunResult a = run_trainer(resume_args(a_dir.path(), GetParam()), 5, {});
  ASSERT_EQ(testing::logged(a.state, "loss").size(), 12u);

  // B: stop at step 7 (epoch 1, after 2 of 5 steps, i.e. 4 of 10 batches).
  RunResult b1 =
      run_trainer(resume_args(b_dir.path(), GetParam()), 5, {std::make_shared<StopAt>(7)});
  EXPECT_EQ(b1.state.global_step, 7);
  ASSERT_EQ(testing::checkpoint_names(b_dir.path()), std::vector<std::string>{"checkpoint-7"});
  // A new Trainer with another initialization (overwritten by the checkpoint).
  RunResult b2 = run_trainer(resume_args(b_dir.path(), GetParam()), 99, {}, "last");
  EXPECT_EQ(b2.state.global_step, 12);
  expect_same_logs(a.state, b2.state);
  testing::expect_bitwise_equal(a.params, b2.params);
  const auto train_loss_a = testing::logged(a.state, "train_loss");
  const auto train_loss_b = testing::logged(b2.state, "train_loss");
  ASSERT_EQ(train_loss_a.size(), 1u);
  ASSERT_EQ(train_loss_b.size(), 1u);
  EXPECT_EQ(train_loss_a[0].second, train_loss_b[0].second);
}

TEST_P(ExactResume, ResumeAtAnEpochBoundary) {
  testing::TempDir a_dir, b_dir;
  RunResult a = run_trainer(resume_args(a_dir.path(), GetParam()), 5, {});
  run_trainer(resume_args(b_dir.path(), GetParam()), 5, {std::make_shared<StopAt>(5)});
  RunResult b =
      run_trainer(resume_args(b_dir.path(), GetParam()), 6, {}, b_dir.sub("checkpoint-5"));
  expect_same_logs(a.state, b.state);
  testing::expect_bitwise_equal(a.params, b.params);
}

INSTANTIATE_TEST_SUITE_P(Devices, ExactResume, ::testing::ValuesIn(resume_devices()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return testing::device_test_name(info.param);
                         });

// ---- Skipping at the sampler (transformers#8876). ----

// token_dataset, counting get() calls.
struct CountingDataset : data::Dataset {
  std::shared_ptr<data::InMemoryDataset> inner = testing::token_dataset(40, 8, true);
  mutable std::atomic<int64_t> gets{0};
  int64_t size() const override { return inner->size(); }
  data::Example get(int64_t i) const override {
    ++gets;
    return inner->get(i);
  }
};

// Resuming at step 7 (epoch 1, 4 of 10 batches done) fetches only the 6
// batches left of that epoch (24 examples), not the 4 skipped ones as
// well, says so in the log, and ends where an uninterrupted run does.
TEST(ResumeSkip, SkippedBatchesAreNotLoaded) {
  testing::TempDir a_dir, b_dir;
  auto run = [](const std::string& dir, std::shared_ptr<const data::Dataset> ds,
                std::vector<std::shared_ptr<TrainerCallback>> cbs,
                std::optional<std::string> resume) {
    TrainingArguments args = resume_args(dir, "cpu");
    args.max_steps = 10;  // ends with epoch 1: no batch of epoch 2 is prefetched
    TrainerOptions opt;
    opt.callbacks = std::move(cbs);
    Trainer t(testing::tiny_gpt2(5, 0.1), args, std::move(ds), nullptr, opt);
    testing::silence(t);
    t.train(resume);
    return RunResult{t.state(), testing::snapshot(t.model())};
  };
  RunResult a = run(a_dir.path(), testing::token_dataset(40, 8, true), {}, std::nullopt);
  run(b_dir.path(), testing::token_dataset(40, 8, true), {std::make_shared<StopAt>(7)},
      std::nullopt);
  auto counting = std::make_shared<CountingDataset>();
  // Counts from the start of training (after the checkpoint is loaded).
  struct ResetAtTrainBegin : TrainerCallback {
    std::shared_ptr<CountingDataset> ds;
    std::string name() const override { return "ResetAtTrainBegin"; }
    void on_train_begin(const TrainingArguments&, const TrainerState&, TrainerControl&) override {
      ds->gets = 0;
    }
  };
  auto reset = std::make_shared<ResetAtTrainBegin>();
  reset->ds = counting;
  ::testing::internal::CaptureStderr();
  RunResult b = run(b_dir.path(), counting, {reset}, "last");
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(counting->gets.load(), 24) << "Dataset::get calls of the resumed run";
  EXPECT_NE(log.find("skipping 4 batches of epoch 1 at the sampler"), std::string::npos) << log;
  EXPECT_EQ(b.state.global_step, 10);
  expect_same_logs(a.state, b.state);
  testing::expect_bitwise_equal(a.params, b.params);
}

// ---- Kill during save. ----

constexpr const char* kKillEnv = "LOOM_TRAIN_KILL_DIR";

TrainingArguments kill_args(const std::string& dir) {
  TrainingArguments a = resume_args(dir, "cpu");
  a.max_steps = 6;
  a.save_strategy = "steps";
  a.save_steps = 2;
  return a;
}

// The child: trains with checkpoints every 2 steps and dies (_exit) right
// after the model file of the second checkpoint is written.
TEST(TrainerKillChild, DiesWhileSaving) {
  const char* dir = std::getenv(kKillEnv);
  if (!dir) GTEST_SKIP() << "run by TrainerKillDuringSave";
  int models = 0;
  detail::set_checkpoint_file_hook([&](const std::string& file) {
    if (file == "model.safetensors" && ++models == 2) ::_exit(3);
  });
  run_trainer(kill_args(dir), 5, {});
  ::_exit(4);  // not reached when the hook fires
}

TEST(TrainerKillDuringSave, LastCompleteCheckpointLoadsAndResumes) {
  testing::TempDir killed, whole;
  // Run the child: this binary, filtered to the child test.
  std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=TrainerKillChild.DiesWhileSaving";
  std::string env_kill = std::string(kKillEnv) + "=" + killed.path();
  std::vector<std::string> env_s{env_kill};
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  std::vector<char*> envp, argv{exe.data(), filter.data(), nullptr};
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 3) << "the child did not die inside the second save";

  // checkpoint-2 is whole; checkpoint-4 never appeared; its tmp dir is partial.
  EXPECT_EQ(testing::checkpoint_names(killed.path()), std::vector<std::string>{"checkpoint-2"});
  EXPECT_TRUE(fs::exists(killed.sub("tmp-checkpoint-4/model.safetensors")));
  EXPECT_FALSE(fs::exists(killed.sub("tmp-checkpoint-4/trainer_state.json")));
  EXPECT_EQ(get_last_checkpoint(killed.path()), killed.sub("checkpoint-2"));
  auto loaded = GPT2LMHeadModel::from_pretrained(killed.sub("checkpoint-2"));
  EXPECT_EQ(TrainerState::from_json_file(killed.sub("checkpoint-2/trainer_state.json")).global_step,
            2);

  // Resuming from "last" finishes the run exactly as an uninterrupted one.
  RunResult resumed = run_trainer(kill_args(killed.path()), 77, {}, "last");
  RunResult uninterrupted = run_trainer(kill_args(whole.path()), 5, {});
  EXPECT_EQ(resumed.state.global_step, 6);
  EXPECT_FALSE(fs::exists(killed.sub("tmp-checkpoint-4")));
  EXPECT_EQ(testing::checkpoint_names(killed.path()),
            (std::vector<std::string>{"checkpoint-2", "checkpoint-4", "checkpoint-6"}));
  testing::expect_bitwise_equal(resumed.params, uninterrupted.params);
  expect_same_logs(uninterrupted.state, resumed.state);
}

}  // namespace
}  // namespace loom
