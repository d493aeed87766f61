// training_curves.svg from trainer_state.json: which panels and series a
// run's log_history gives (speed entries left out, a log axis for a metric
// spanning > 20x), the file written with the model and run in its title,
// and the errors for a missing, malformed or empty state.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "train/training_curves.h"

namespace loom {
namespace {

TrainerState logged_state() {
  TrainerState s;
  s.global_step = 40;
  s.epoch = 0.05;
  for (double step = 10; step <= 40; step += 10)
    s.log_history.push_back({{"step", step},
                             {"loss", 10.0 - step / 10.0},
                             {"learning_rate", 1e-3 * step / 40},
                             {"grad_norm", 2.0 / step},
                             {"epoch", step / 800.0}});
  for (double step : {20.0, 40.0})
    s.log_history.push_back({{"step", step},
                             {"eval_loss", 9.0 - step / 20.0},
                             {"eval_perplexity", step == 20 ? 20000.0 : 400.0},
                             {"eval_accuracy", step / 100.0},
                             {"eval_runtime", 1.5},
                             {"eval_samples_per_second", 80.0},
                             {"epoch", step / 800.0}});
  s.log_history.push_back({{"step", 40}, {"train_runtime", 12.0}, {"train_loss", 7.5}});
  return s;
}

TEST(TrainingCurves, PanelsFollowTheLogHistory) {
  io::ChartPage page = train::training_curves(logged_state(), "T", "S");
  std::vector<std::string> titles;
  for (const auto& p : page.panels) titles.push_back(p.title);
  EXPECT_EQ(titles, (std::vector<std::string>{"Loss", "Learning rate", "Gradient norm",
                                              "Eval accuracy", "Eval perplexity"}));
  const io::ChartPanel& loss = page.panels[0];
  ASSERT_EQ(loss.series.size(), 2u);
  EXPECT_EQ(loss.series[0].label, "train loss");
  EXPECT_EQ(loss.series[0].x, (std::vector<double>{10, 20, 30, 40}));
  EXPECT_EQ(loss.series[0].y, (std::vector<double>{9, 8, 7, 6}));
  EXPECT_EQ(loss.series[1].label, "eval loss");
  EXPECT_EQ(loss.series[1].y, (std::vector<double>{8, 7}));
  EXPECT_TRUE(loss.series[1].markers);
  EXPECT_FALSE(page.panels[3].log_y);  // accuracy 0.2 -> 0.4
  EXPECT_TRUE(page.panels[4].log_y);   // perplexity 20000 -> 400
  // No panel for eval_runtime / eval_samples_per_second / train_runtime.
  TrainerState only_eval;
  only_eval.log_history.push_back({{"step", 0}, {"eval_loss", 3.0}, {"eval_runtime", 2.0}});
  io::ChartPage p = train::training_curves(only_eval, "T", "S");
  ASSERT_EQ(p.panels.size(), 1u);
  ASSERT_EQ(p.panels[0].series.size(), 1u);
  EXPECT_EQ(p.panels[0].series[0].label, "eval loss");
}

TEST(TrainingCurves, WritesTheSvgTitledWithModelAndRun) {
  testing::TempDir dir;
  const std::string run = dir.sub("gpt2_run");
  std::filesystem::create_directory(run);
  std::ofstream(run + "/trainer_state.json") << logged_state().to_json();
  std::ofstream(run + "/config.json") << R"({"architectures": ["GPT2LMHeadModel"]})";
  const std::string path = train::write_training_curves(run + "/");
  EXPECT_EQ(path, run + "/training_curves.svg");
  std::ifstream in(path);
  const std::string svg((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(svg.find(">GPT2LMHeadModel training curves: gpt2_run</text>"), std::string::npos)
      << svg.substr(0, 800);
  EXPECT_NE(svg.find("40 steps, epoch 0.05; last train loss 6; last eval loss 7"),
            std::string::npos);
  size_t paths = 0;
  for (size_t p = svg.find("<path class=\"series\""); p != std::string::npos;
       p = svg.find("<path class=\"series\"", p + 1))
    ++paths;
  EXPECT_EQ(paths, 2u + 1u + 1u + 1u + 1u);
}

TEST(TrainingCurves, BadStateNamesTheFile) {
  testing::TempDir dir;
  EXPECT_NE(testing::error_of([&] {
              train::write_training_curves(dir.path());
            }).find("[plot] " + dir.sub("trainer_state.json") + ": cannot open"),
            std::string::npos);
  std::ofstream(dir.sub("trainer_state.json")) << "{\"log_history\": [";
  EXPECT_NE(testing::error_of([&] {
              train::write_training_curves(dir.path());
            }).find("trainer_state.json"),
            std::string::npos);
  std::ofstream(dir.sub("trainer_state.json"), std::ios::trunc) << "{\"log_history\": []}";
  EXPECT_NE(testing::error_of([&] {
              train::write_training_curves(dir.path());
            }).find("no logged values to plot"),
            std::string::npos);
}

}  // namespace
}  // namespace loom
