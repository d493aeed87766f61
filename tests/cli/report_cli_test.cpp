// What `loom train` leaves for eyes, through the built binary: TensorBoard
// event files in logging_dir whose scalars are trainer_state.json's logs
// (read back with the test reader: tags, steps, values, CRCs), the lazy/
// scalars, training_curves.svg; `loom plot` redraws it; `loom inspect`
// prints the metrics report; --report_to none writes neither; bad values are
// one error line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "cli/tiny_train.h"
#include "common/tb_event_reader.h"
#include "loom/tensorboard.h"

namespace loom::testing {
namespace {

namespace fs = std::filesystem;

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  }
  std::vector<std::string> flags(const std::string& out) {
    auto f = tiny_train_flags(write_tiny_corpus(dir_, 120), out);
    f.insert(f.end(), {"--block_size", "16", "--max_steps", "4", "--logging_steps", "1",
                       "--save_strategy", "no", "--overwrite_output_dir"});
    return f;
  }
  TempDir dir_;
};

// tag -> step -> value of every scalar in the event files of `logdir`.
std::map<std::string, std::map<int64_t, float>> scalars_in(const std::string& logdir) {
  std::map<std::string, std::map<int64_t, float>> out;
  for (const std::string& file : tb_event_files(logdir))
    for (const TbEvent& e : tb_read_events(file))
      for (const TbValue& v : e.values)
        if (v.has_simple_value) out[v.tag][e.step] = v.simple_value;
  return out;
}

TEST_F(ReportCli, TrainWritesEventFilesAndCurvesThatMatchTheState) {
  const std::string out = dir_.sub("out");
  auto f = flags(out);
  f.insert(f.end(), {"--logging_dir", dir_.sub("tb")});
  CliResult r = run_loom_cli(dir_, f);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  ASSERT_EQ(tb_event_files(dir_.sub("tb")).size(), 1u);
  const auto scalars = scalars_in(dir_.sub("tb"));
  const nlohmann::json state = nlohmann::json::parse(read_cli_file(out + "/trainer_state.json"));
  int checked = 0;
  for (const auto& entry : state["log_history"]) {
    const int64_t step = entry["step"].get<int64_t>();
    for (const auto& [key, value] : entry.items()) {
      if (key == "step") continue;
      const std::string tag = tensorboard_tag(key);  // its names: TensorBoardCallback tests
      ASSERT_TRUE(scalars.count(tag) && scalars.at(tag).count(step)) << tag << " at " << step;
      EXPECT_EQ(scalars.at(tag).at(step), static_cast<float>(value.get<double>())) << tag;
      ++checked;
    }
  }
  EXPECT_GE(checked, 4 * 4 + 2 * 4);  // 4 training logs of 4 values, 2 evaluations
  for (const char* tag :
       {"train/loss", "train/learning_rate", "train/grad_norm", "eval/loss", "eval/perplexity",
        "lazy/CompileTime", "lazy/ExecuteTime", "lazy/UncachedCompile"})
    EXPECT_TRUE(scalars.count(tag)) << tag;
  // Compiles happen in the first interval; later ones only execute cached graphs.
  EXPECT_GT(scalars.at("lazy/CompileTime").at(1), 0.0f);
  EXPECT_GT(scalars.at("lazy/ExecuteTime").at(3), 0.0f);
  EXPECT_GE(scalars.at("lazy/UncachedCompile").at(4), 1.0f);

  const std::string svg = read_cli_file(out + "/training_curves.svg");
  EXPECT_NE(svg.find("data-label=\"train loss\""), std::string::npos);
  EXPECT_NE(svg.find("GPT2LMHeadModel training curves: out"), std::string::npos);
  EXPECT_NE(r.out.find("wrote " + out + "/training_curves.svg"), std::string::npos) << r.out;

  fs::remove(out + "/training_curves.svg");
  fs::remove(out + "/training_curves.png");  // written when rsvg-convert is installed
  CliResult p = run_loom_cli(dir_, {"plot", out, "--no_png"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(read_cli_file(out + "/training_curves.svg"), svg);
  EXPECT_FALSE(fs::exists(out + "/training_curves.png"));

  CliResult i = run_loom_cli(dir_, {"inspect", out});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  for (const char* needle :
       {"lazy_metrics.json:\nMetric: CompileTime\n  TotalSamples: ", "  Percentiles: 1%=",
        "Counter: UncachedCompile\n  Value: ", "Recompile causes:", "parameters: "})
    EXPECT_NE(i.out.find(needle), std::string::npos) << needle << "\n" << i.out;
  CliResult j = run_loom_cli(dir_, {"inspect", out + "/lazy_metrics.json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(j.out.find("parameters:"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("Metric: ExecuteTime"), std::string::npos) << j.out;
}

TEST_F(ReportCli, ReportToNoneWritesNoEventsNoCurves) {
  const std::string out = dir_.sub("out");
  auto f = flags(out);
  f.insert(f.end(), {"--report_to", "none"});
  CliResult r = run_loom_cli(dir_, f);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out + "/trainer_state.json"));
  EXPECT_FALSE(fs::exists(out + "/runs"));
  EXPECT_FALSE(fs::exists(out + "/training_curves.svg"));
  // The default logging_dir: output_dir/runs/<Mon DD_HH-MM-SS>_<host>.
  const nlohmann::json args = nlohmann::json::parse(read_cli_file(out + "/training_args.json"));
  const std::string logdir = args["logging_dir"].get<std::string>();
  EXPECT_EQ(logdir.rfind(out + "/runs/", 0), 0u) << logdir;
  EXPECT_EQ(logdir[out.size() + 6 + 5], '_') << logdir;  // "Dec01_..."
}

TEST_F(ReportCli, BadInputIsOneErrorLine) {
  auto f = flags(dir_.sub("out"));
  f.insert(f.end(), {"--report_to", "wandb"});
  expect_one_error_line(run_loom_cli(dir_, f), "report_to: 'wandb' is not available in loom");
  expect_one_error_line(run_loom_cli(dir_, {"plot", dir_.sub("nowhere")}),
                        "nowhere/trainer_state.json: cannot open");
  for (const char* d : {"bad", "empty", "m"}) fs::create_directories(dir_.sub(d));
  dir_.write("bad/trainer_state.json", "{\"log_history\": 3}");
  expect_one_error_line(run_loom_cli(dir_, {"plot", dir_.sub("bad")}), "trainer_state");
  dir_.write("empty/trainer_state.json", "{\"log_history\": []}");
  expect_one_error_line(run_loom_cli(dir_, {"plot", dir_.sub("empty")}), "no logged values");
  // --output names the SVG: another extension is refused, and nothing is written.
  expect_one_error_line(
      run_loom_cli(dir_, {"plot", dir_.sub("empty"), "--output", dir_.sub("x.png")}),
      "--output " + dir_.sub("x.png") + ": must name an .svg file");
  EXPECT_FALSE(fs::exists(dir_.sub("x.png")));
  dir_.write("m/lazy_metrics.json", "[1, 2]");
  expect_one_error_line(run_loom_cli(dir_, {"inspect", dir_.sub("m")}),
                        "lazy_metrics.json: not a JSON object");
}

}  // namespace
}  // namespace loom::testing
