// The Trainer's control flow against the Hugging Face Trainer: for each case
// of tests/train/fixtures/trainer_flow.json (written by
// tests/train/make_trainer_fixtures.py with transformers), loom's Trainer runs
// with the same arguments and dataset sizes and must fire the same callback
// events at the same global steps, write the same log_history entries (step,
// keys, epoch), leave the same checkpoint-N directories (rotation, best-model
// protection, save_total_limit 1), pick the same best checkpoint, stop early
// at the same step, and write trainer_state.json with the same keys. The
// metric that selects the best model replays the fixture's sequence, so only
// the flow is compared, never the model's numbers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "train/train_test_util.h"

namespace loom {
namespace {

using nlohmann::json;

const json& flow_fixture() {
  static const json j = [] {
    std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/tests/train/fixtures/trainer_flow.json");
    return json::parse(in);
  }();
  return j;
}

// Records every event as "<event>@<global_step>", as the fixture's Recorder.
struct Recorder : TrainerCallback {
  std::vector<std::string> events;
  std::string name() const override { return "Recorder"; }
  void add(const char* e, const TrainerState& s) {
    events.push_back(std::string(e) + "@" + std::to_string(s.global_step));
  }
#define LOOM_RECORD(ev)                                                                \
  void ev(const TrainingArguments&, const TrainerState& s, TrainerControl&) override { \
    add(#ev, s);                                                                       \
  }
  LOOM_RECORD(on_init_end)
  LOOM_RECORD(on_train_begin)
  LOOM_RECORD(on_train_end)
  LOOM_RECORD(on_epoch_begin)
  LOOM_RECORD(on_epoch_end)
  LOOM_RECORD(on_step_begin)
  LOOM_RECORD(on_substep_end)
  LOOM_RECORD(on_pre_optimizer_step)
  LOOM_RECORD(on_optimizer_step)
  LOOM_RECORD(on_step_end)
  LOOM_RECORD(on_save)
#undef LOOM_RECORD
  void on_evaluate(const TrainingArguments&, const TrainerState& s, TrainerControl&,
                   const Logs&) override {
    add("on_evaluate", s);
  }
  void on_predict(const TrainingArguments&, const TrainerState& s, TrainerControl&,
                  const Logs&) override {
    add("on_predict", s);
  }
  void on_log(const TrainingArguments&, const TrainerState& s, TrainerControl&,
              const Logs&) override {
    add("on_log", s);
  }
  void on_prediction_step(const TrainingArguments&, const TrainerState& s, TrainerControl&, int64_t,
                          int64_t) override {
    add("on_prediction_step", s);
  }
};

std::string as_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

class TrainerFlow : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainerFlow, MatchesTransformers) {
  const json* found = nullptr;
  for (const json& c : flow_fixture().at("cases"))
    if (c.at("name") == GetParam()) found = &c;
  ASSERT_NE(found, nullptr);
  const json& c = *found;
  testing::TempDir dir;
  TrainingArguments args = testing::quiet_args(dir.path());
  args.learning_rate = 1e-3;
  args.seed = 0;
  args.save_strategy = "steps";  // transformers' default (quiet_args turns it off)
  for (const auto& [k, v] : c.at("args").items()) args.set(k, as_text(v));

  auto recorder = std::make_shared<Recorder>();
  TrainerOptions opt;
  if (c.contains("early_stopping") && !c.at("early_stopping").is_null())
    opt.callbacks.push_back(std::make_shared<EarlyStoppingCallback>(
        c.at("early_stopping").at("patience").get<int64_t>(),
        c.at("early_stopping").at("threshold").get<double>()));
  opt.callbacks.push_back(recorder);
  if (!c.at("seq").is_null()) {
    auto seq = c.at("seq").get<std::vector<double>>();
    auto calls = std::make_shared<size_t>(0);
    opt.compute_metrics = [seq, calls](const EvalPrediction&) {
      Logs m{{"score", seq[std::min(*calls, seq.size() - 1)]}};
      ++*calls;
      return m;
    };
  }
  Trainer trainer(testing::tiny_gpt2(1), args, testing::token_dataset(c.at("train"), 6),
                  testing::token_dataset(c.at("eval"), 6), opt);
  testing::silence(trainer);
  trainer.train();

  EXPECT_EQ(recorder->events, c.at("events").get<std::vector<std::string>>());
  const auto& hist = trainer.state().log_history;
  const json& want = c.at("log_history");
  ASSERT_EQ(hist.size(), want.size());
  for (size_t i = 0; i < hist.size(); ++i) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : hist[i])
      if (k != "step") keys.push_back(k);
    EXPECT_EQ(hist[i].at("step"), want[i].at("step").get<double>()) << "entry " << i;
    EXPECT_EQ(keys, want[i].at("keys").get<std::vector<std::string>>()) << "entry " << i;
    EXPECT_NEAR(hist[i].at("epoch"), want[i].at("epoch").get<double>(), 1e-12) << "entry " << i;
  }
  std::vector<std::string> ckpts = testing::checkpoint_names(dir.path());
  EXPECT_EQ(ckpts, c.at("checkpoints").get<std::vector<std::string>>());
  const auto& best = trainer.state().best_model_checkpoint;
  if (c.at("best_model_checkpoint").is_null()) {
    EXPECT_FALSE(best.has_value());
  } else {
    ASSERT_TRUE(best.has_value());
    EXPECT_EQ(std::filesystem::path(*best).filename().string(), c.at("best_model_checkpoint"));
    EXPECT_EQ(trainer.state().best_metric, c.at("best_metric").get<double>());
  }
  EXPECT_EQ(trainer.state().global_step, c.at("global_step").get<int64_t>());
  if (!ckpts.empty()) {
    std::ifstream in(dir.sub(ckpts.back()) + "/trainer_state.json");
    const json state = json::parse(in);
    std::vector<std::string> keys;
    for (const auto& [k, v] : state.items()) keys.push_back(k);
    EXPECT_EQ(keys, c.at("trainer_state_keys").get<std::vector<std::string>>());
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, TrainerFlow,
                         ::testing::Values("steps_cadence", "epoch_cadence_fractional",
                                           "ratios_best_rotation", "save_best_limit_one",
                                           "early_stopping"));

}  // namespace
}  // namespace loom
