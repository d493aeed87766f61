// TensorBoardCallback and report_to/logging_dir: a Trainer run writes one
// event file whose scalars are log_history's entries under transformers'
// tags (read back by the test reader), flushed at every log; the "args"
// text; loom's lazy/ scalars on the lazy device only; report_to's values
// and errors; the default logging_dir.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "common/error_of.h"
#include "common/tb_event_reader.h"
#include "loom/tensorboard.h"
#include "train/train_test_util.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using testing::TbEvent;

TrainingArguments tb_args(const std::string& dir, const std::string& device) {
  TrainingArguments a = testing::quiet_args(dir, device);
  a.per_device_train_batch_size = 4;
  a.max_steps = 6;
  a.logging_steps = 2;
  a.eval_strategy = "steps";
  a.eval_steps = 3;
  a.report_to = "tensorboard";
  a.logging_dir = dir + "/tb";
  return a;
}

// tag -> step -> value.
std::map<std::string, std::map<int64_t, float>> scalars_of(const std::vector<TbEvent>& events) {
  std::map<std::string, std::map<int64_t, float>> out;
  for (const TbEvent& e : events)
    for (const auto& v : e.values)
      if (v.has_simple_value) out[v.tag][e.step] = v.simple_value;
  return out;
}

TEST(TensorBoardCallback, TagsFollowTransformersRewriteLogs) {
  EXPECT_EQ(tensorboard_tag("loss"), "train/loss");
  EXPECT_EQ(tensorboard_tag("learning_rate"), "train/learning_rate");
  EXPECT_EQ(tensorboard_tag("eval_loss"), "eval/loss");
  EXPECT_EQ(tensorboard_tag("eval_perplexity"), "eval/perplexity");
  EXPECT_EQ(tensorboard_tag("test_f1"), "test/f1");
  EXPECT_EQ(tensorboard_tag("train_runtime"), "train/train_runtime");
}

TEST(TensorBoardCallback, EventsAreTheLogHistory) {
  testing::TempDir dir;
  Trainer t(testing::tiny_gpt2(3), tb_args(dir.path(), "cpu"), testing::token_dataset(24),
            testing::token_dataset(8), {.compute_metrics = perplexity_metrics});
  testing::silence(t);
  t.train();
  const std::vector<std::string> files = testing::tb_event_files(dir.sub("tb"));
  ASSERT_EQ(files.size(), 1u);
  const std::vector<TbEvent> events = testing::tb_read_events(files[0]);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  ASSERT_EQ(events[1].values.size(), 1u);
  EXPECT_EQ(events[1].values[0].tag, "args/text_summary");
  EXPECT_NE(events[1].values[0].text.find("\"learning_rate\": 0.01"), std::string::npos);
  const auto scalars = scalars_of(events);
  size_t checked = 0;
  for (const Logs& entry : t.state().log_history) {
    const int64_t step = static_cast<int64_t>(entry.at("step"));
    for (const auto& [key, value] : entry) {
      if (key == "step") continue;
      const std::string tag = tensorboard_tag(key);
      ASSERT_TRUE(scalars.count(tag) && scalars.at(tag).count(step)) << tag << " at " << step;
      EXPECT_EQ(scalars.at(tag).at(step), static_cast<float>(value)) << tag << " at " << step;
      ++checked;
    }
  }
  EXPECT_GE(checked, 3u * 4u + 2u * 3u);  // logs at 2, 4, 6; evaluations at 3, 6
  EXPECT_EQ(scalars.at("train/loss").size(), 3u);
  EXPECT_EQ(scalars.at("eval/perplexity").size(), 2u);
  EXPECT_FALSE(scalars.count("lazy/CompileTime")) << "cpu device: no lazy metrics";
}

TEST(TensorBoardCallback, EachLogIsOnDiskBeforeTheRunEnds) {
  testing::TempDir dir;
  TrainingArguments args = tb_args(dir.path(), "lazy");
  TensorBoardCallback cb;
  TrainerState state;
  TrainerControl control;
  metrics::reset();
  cb.on_train_begin(args, state, control);
  state.global_step = 5;
  metrics::add_time("CompileTime", 3'000'000);
  metrics::add_time("ExecuteTime", 500'000);
  metrics::add_counter("UncachedCompile");
  cb.on_log(args, state, control, {{"loss", 2.0}, {"learning_rate", 1e-3}});
  // No on_train_end: what a crash leaves is already readable.
  auto scalars = scalars_of(testing::tb_read_events(cb.event_file()));
  EXPECT_EQ(scalars.at("train/loss").at(5), 2.0f);
  EXPECT_EQ(scalars.at("lazy/CompileTime").at(5), 3.0f);  // ms since the file opened
  EXPECT_EQ(scalars.at("lazy/ExecuteTime").at(5), 0.5f);
  EXPECT_EQ(scalars.at("lazy/UncachedCompile").at(5), 1.0f);
  state.global_step = 10;
  metrics::add_time("CompileTime", 1'000'000);
  cb.on_log(args, state, control, {{"loss", 1.5}});
  cb.on_log(args, state, control, {{"eval_loss", 1.75}});  // no lazy/ for an eval log
  scalars = scalars_of(testing::tb_read_events(cb.event_file()));
  EXPECT_EQ(scalars.at("lazy/CompileTime").at(10), 1.0f);  // since the previous log
  EXPECT_EQ(scalars.at("lazy/ExecuteTime").at(10), 0.0f);
  EXPECT_EQ(scalars.at("eval/loss").at(10), 1.75f);
  EXPECT_EQ(scalars.at("lazy/CompileTime").size(), 2u);
  metrics::reset();
}

TEST(TensorBoardCallback, ReportToSelectsTheCallback) {
  testing::TempDir dir;
  auto names = [&](const std::string& report_to) {
    TrainingArguments a = tb_args(dir.path(), "cpu");
    a.report_to = report_to;
    Trainer t(testing::tiny_gpt2(3), a, testing::token_dataset(8), testing::token_dataset(4));
    std::vector<std::string> out;
    for (const auto& cb : t.callbacks()) out.push_back(cb->name());
    return out;
  };
  auto has_tb = [&](const std::string& r) {
    auto n = names(r);
    return std::find(n.begin(), n.end(), "TensorBoardCallback") != n.end();
  };
  EXPECT_TRUE(has_tb("tensorboard"));
  EXPECT_TRUE(has_tb("all"));
  EXPECT_TRUE(has_tb(" tensorboard , all"));
  EXPECT_FALSE(has_tb("none"));
  EXPECT_EQ(TrainingArguments().report_to, "all");

  // transformers' training_args.json holds a list.
  TrainingArguments from_hf = TrainingArguments::from_json(R"({"report_to": ["tensorboard"]})");
  EXPECT_EQ(from_hf.report_to, "tensorboard");
  EXPECT_TRUE(from_hf.reports_to("tensorboard"));
  EXPECT_EQ(TrainingArguments::from_json(R"({"report_to": []})").report_to, "none");

  TrainingArguments a;
  a.report_to = "wandb";
  EXPECT_EQ(testing::error_of([&] { a.validate(); }),
            "[TrainingArguments] report_to: 'wandb' is not available in loom (use tensorboard, "
            "all or none)");
  a.report_to = "none,tensorboard";
  EXPECT_NE(testing::error_of([&] { a.validate(); }).find("'none' cannot be combined"),
            std::string::npos);
  a.report_to = " , ";
  EXPECT_NE(testing::error_of([&] { a.validate(); }).find("report_to: must name"),
            std::string::npos);
}

TEST(TensorBoardCallback, DefaultLoggingDirIsRunsDateHost) {
  testing::TempDir dir;
  TrainingArguments a = testing::quiet_args(dir.path());
  a.max_steps = 2;
  a.logging_steps = 1;
  a.validate();
  ASSERT_TRUE(a.logging_dir.has_value());
  const fs::path logdir = *a.logging_dir;
  EXPECT_EQ(logdir.parent_path(), fs::path(dir.path()) / "runs");
  // transformers' default_logdir: "%b%d_%H-%M-%S_<host>", e.g. "Dec01_09-16-26_box".
  const std::string name = logdir.filename().string();
  ASSERT_GT(name.size(), 15u) << name;
  EXPECT_EQ(name[5], '_') << name;
  EXPECT_EQ(name[8], '-') << name;
  EXPECT_EQ(name[14], '_') << name;
  Trainer t(testing::tiny_gpt2(3), a, testing::token_dataset(8));
  testing::silence(t);
  t.train();
  EXPECT_EQ(testing::tb_event_files(*a.logging_dir).size(), 1u);
}

}  // namespace
}  // namespace loom
