// HF's config-file forms through the built binary (issue 42, row 5): a single
// .json / .yaml argument is the config (HfArgumentParser's parse_json_file /
// parse_yaml_file), list values as HF writes them (report_to: [tensorboard],
// fsdp as a list), the command line overriding the file, and run_args.json in
// output_dir re-running the job. Skips when the binary is not built.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "cli/tiny_train.h"

namespace loom::testing {
namespace {
namespace fs = std::filesystem;

class ConfigFileCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  }
  // tiny_train_flags as (name, value) pairs; a bare boolean flag is "true".
  std::vector<std::pair<std::string, std::string>> tiny_pairs(const std::string& out) {
    std::vector<std::string> flags = tiny_train_flags(write_tiny_corpus(dir_, 150), out);
    std::vector<std::pair<std::string, std::string>> pairs;
    for (size_t i = 1; i < flags.size(); ++i) {
      const bool bare = i + 1 == flags.size() || flags[i + 1].rfind("--", 0) == 0;
      pairs.emplace_back(flags[i].substr(2), bare ? "true" : flags[i + 1]);
      if (!bare) ++i;
    }
    return pairs;
  }
  // The same as a flat YAML mapping (flag: value lines).
  std::string tiny_yaml(const std::string& out) {
    std::string yaml = "# tiny GPT-2\n";
    for (const auto& [name, value] : tiny_pairs(out)) yaml += name + ": '" + value + "'\n";
    return yaml;
  }
  nlohmann::json read_json_file(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
  }
  TempDir dir_;
};

TEST_F(ConfigFileCli, AYamlArgumentIsTheConfigWithListsAndTheCommandLineWins) {
  const std::string out = dir_.sub("out");
  const std::string yaml = dir_.write("args.yaml", tiny_yaml(out) +
                                                       "max_steps: 4\nreport_to:\n  - tensorboard\n"
                                                       "fsdp: [no_shard]\n");
  CliResult r = run_loom_cli(dir_, {"train", yaml, "--max_steps", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(read_json_file(out + "/trainer_state.json").value("global_step", -1), 2);
  nlohmann::json args = read_json_file(out + "/training_args.json");
  EXPECT_EQ(args.value("report_to", ""), "tensorboard");
  // run_args.json holds every flag; it is a config that re-runs the job.
  nlohmann::json run = read_json_file(out + "/run_args.json");
  EXPECT_EQ(run.value("max_steps", ""), "2");
  EXPECT_EQ(run.value("model_type", ""), "gpt2");
  EXPECT_EQ(run.value("fsdp", ""), "no_shard");
  EXPECT_FALSE(run.contains("config"));
  const std::string again = dir_.sub("again");
  r = run_loom_cli(dir_, {"train", out + "/run_args.json", "--output_dir", again});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  // The same run: the same losses at the same steps (timings differ).
  auto losses = [&](const std::string& dir) {
    std::vector<std::pair<int64_t, double>> found;
    const nlohmann::json state = read_json_file(dir + "/trainer_state.json");
    for (const auto& e : state.at("log_history"))
      for (const char* key : {"loss", "eval_loss"})
        if (e.contains(key))
          found.emplace_back(e.at("step").get<int64_t>(), e.at(key).get<double>());
    return found;
  };
  EXPECT_FALSE(losses(out).empty());
  EXPECT_EQ(losses(again), losses(out)) << "the re-run from run_args.json is not the same run";
}

TEST_F(ConfigFileCli, AJsonArgumentTakesHfListsAndBadConfigsAreOneErrorLine) {
  const std::string out = dir_.sub("out");
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : tiny_pairs(out)) j[name] = value;
  j["max_steps"] = 1;
  j["report_to"] = nlohmann::json::array();  // HF's "no integration"
  j["fsdp"] = nlohmann::json::array();
  const std::string json = dir_.write("args.json", j.dump());
  CliResult r = run_loom_cli(dir_, {"train", json});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(read_json_file(out + "/training_args.json").value("report_to", ""), "none");
  EXPECT_FALSE(fs::exists(out + "/runs")) << "report_to [] wrote TensorBoard files";

  expect_one_error_line(run_loom_cli(dir_, {"train", json, "--config", json}), "two config files");
  expect_one_error_line(run_loom_cli(dir_, {"train", json, json}), "two config files");
  const std::string nested = dir_.write("nested.yaml", "output_dir: x\nmodel:\n  n_layer: 2\n");
  expect_one_error_line(run_loom_cli(dir_, {"train", nested}),
                        "nested.yaml:3: nested mappings are not supported");
  const std::string deep = dir_.write("deep.json", R"({"report_to": [["tensorboard"]]})");
  expect_one_error_line(run_loom_cli(dir_, {"train", deep}),
                        "report_to: expected a list of strings, numbers or bools");
  const std::string txt = dir_.write("args.txt", "{}");
  expect_one_error_line(run_loom_cli(dir_, {"train", "--config", txt}),
                        "expected a .json, .yaml or .yml file");
  expect_one_error_line(run_loom_cli(dir_, {"train", "args.cfg"}),
                        "unexpected argument 'args.cfg'");
}

}  // namespace
}  // namespace loom::testing
