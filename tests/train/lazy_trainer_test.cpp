// The Trainer on the lazy device, through the metrics counters: training with
// evaluation, logging and checkpoints compiles a bounded number of graphs
// (one training step, one evaluation step; UncachedCompile <= 3), never syncs
// outside mark_step (EarlySync 0: the running loss is read only after a
// step's graph was cut), writes lazy_metrics.json, and follows the eager cpu
// device's numbers.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "train/train_test_util.h"

namespace loom {
namespace {

TrainingArguments lazy_args(const std::string& dir, const std::string& device, int64_t ga) {
  TrainingArguments a = testing::quiet_args(dir, device);
  a.per_device_train_batch_size = 4;
  a.per_device_eval_batch_size = 4;
  a.gradient_accumulation_steps = ga;
  a.max_steps = 8;
  a.logging_steps = 2;
  a.eval_strategy = "steps";
  a.eval_steps = 4;
  a.save_strategy = "steps";
  a.save_steps = 4;
  return a;
}

class LazyTrainer : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { testing::reset_lazy_and_wait(); }
};

TEST_P(LazyTrainer, TrainAndEvalCompileABoundedNumberOfGraphs) {
  testing::TempDir dir;
  // Model uploads happen before counting.
  auto model = testing::tiny_gpt2(8, 0.1);
  Trainer t(model, lazy_args(dir.path(), "lazy", GetParam()), testing::token_dataset(32),
            testing::token_dataset(8), {.compute_metrics = perplexity_metrics});
  testing::silence(t);
  lazy::mark_step();
  metrics::reset();
  t.train();
  EXPECT_LE(metrics::counter("UncachedCompile"), 3) << metrics::report();
  EXPECT_EQ(metrics::counter("EarlySync"), 0) << metrics::report();
  EXPECT_GE(metrics::counter("CachedCompile"), 8) << metrics::report();
  EXPECT_EQ(testing::logged(t.state(), "eval_loss").size(), 2u);
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-4", "checkpoint-8"}));
  std::ifstream in(dir.sub("lazy_metrics.json"));
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("counters").at("UncachedCompile").get<int64_t>(),
            metrics::counter("UncachedCompile"));
}

// TrainPeakRssBytes is the process's high-water mark (VmHWM) at the loop's
// end: a second train() in the same process keeps the maximum (it was a sum).
// VmHWM is not exactly monotonic: Linux (6.2+) folds the current RSS into it
// from per-CPU counters read approximately (percpu_counter_read_positive), so
// a later read can be a few hundred kB lower than an earlier one. The bound
// allows that error (kVmHwmSlack), far below the second run's peak that a
// sum would add (tens of MB for this model and process).
TEST_P(LazyTrainer, TrainPeakRssIsAMaximumNotASum) {
  testing::TempDir d1, d2;
  metrics::reset();
  for (const testing::TempDir* d : {&d1, &d2}) {
    auto model = testing::tiny_gpt2(8, 0.1);
    TrainingArguments a = lazy_args(d->path(), "lazy", GetParam());
    a.max_steps = 2;
    a.eval_strategy = "no";
    a.save_strategy = "no";
    Trainer t(model, a, testing::token_dataset(32), testing::token_dataset(8), {});
    testing::silence(t);
    t.train();
  }
  std::ifstream status("/proc/self/status");
  std::string key;
  int64_t hwm_kb = 0;
  while (status >> key)
    if (key == "VmHWM:") status >> hwm_kb;
  const int64_t peak = metrics::counter("TrainPeakRssBytes");
  EXPECT_GT(peak, 0);
  constexpr int64_t kVmHwmSlack = 4 << 20;
  EXPECT_LE(peak, hwm_kb * 1024 + kVmHwmSlack)
      << "a sum of two runs' peaks exceeds the process's peak";
}

TEST_P(LazyTrainer, FollowsTheEagerDevice) {
  testing::TempDir d1, d2;
  auto run = [&](const std::string& dir, const std::string& device) {
    Trainer t(testing::tiny_gpt2(9, 0.1), lazy_args(dir, device, GetParam()),
              testing::token_dataset(32), testing::token_dataset(8));
    testing::silence(t);
    t.train();
    return std::make_pair(t.state(), testing::snapshot(t.model()));
  };
  auto [se, pe] = run(d1.path(), "cpu");
  auto [sl, pl] = run(d2.path(), "lazy");
  auto le = testing::logged(se, "loss"), ll = testing::logged(sl, "loss");
  ASSERT_EQ(le.size(), ll.size());
  for (size_t i = 0; i < le.size(); ++i) EXPECT_NEAR(ll[i].second, le[i].second, 1e-4) << i;
  auto ee = testing::logged(se, "eval_loss"), el = testing::logged(sl, "eval_loss");
  ASSERT_EQ(ee.size(), el.size());
  for (size_t i = 0; i < ee.size(); ++i) EXPECT_NEAR(el[i].second, ee[i].second, 1e-4) << i;
  for (const auto& [name, v] : pe)
    for (size_t i = 0; i < v.size(); ++i) ASSERT_NEAR(pl.at(name)[i], v[i], 1e-4) << name;
}

INSTANTIATE_TEST_SUITE_P(Accumulation, LazyTrainer, ::testing::Values(1, 2));

}  // namespace
}  // namespace loom
