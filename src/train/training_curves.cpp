// training_curves.svg from trainer_state.json (training_curves.h).
#include "train/training_curves.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "loom/error.h"

namespace loom::train {
namespace {
namespace fs = std::filesystem;

constexpr const char* kTrainColor = "#1f77b4";
constexpr const char* kEvalColor = "#ff7f0e";

// eval_ entries that are speed or bookkeeping, not model quality.
bool is_eval_metric(const std::string& key) {
  static const std::set<std::string> skip = {"eval_loss", "eval_runtime", "eval_samples_per_second",
                                             "eval_steps_per_second", "eval_samples"};
  return key.rfind("eval_", 0) == 0 && !skip.count(key);
}

// (step, value) of every log entry holding `key`.
io::ChartSeries series_of(const TrainerState& s, const std::string& key, const std::string& label,
                          const char* color, bool markers) {
  io::ChartSeries out{label, {}, {}, color, markers};
  for (const Logs& e : s.log_history) {
    auto v = e.find(key), step = e.find("step");
    if (v == e.end() || step == e.end()) continue;
    out.x.push_back(step->second);
    out.y.push_back(v->second);
  }
  return out;
}

void add_panel(io::ChartPage& page, io::ChartPanel panel, double last_step) {
  panel.x_min = 0;
  panel.x_max = last_step;
  std::vector<io::ChartSeries> kept;
  for (auto& s : panel.series)
    if (!s.x.empty()) kept.push_back(std::move(s));
  if (kept.empty()) return;
  panel.series = std::move(kept);
  page.panels.push_back(std::move(panel));
}

// A log axis for a metric that spans more than 20x (perplexity falls from
// ~50000 to a few hundred), linear otherwise.
bool wants_log(const io::ChartSeries& s) {
  double lo = INFINITY, hi = 0;
  for (double y : s.y) {
    if (!std::isfinite(y)) continue;
    if (y <= 0) return false;
    lo = std::min(lo, y);
    hi = std::max(hi, y);
  }
  return hi > 20 * lo;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "[plot] ", path, ": cannot open (is this a `loom train` output_dir?)");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string model_name(const std::string& output_dir) {
  std::ifstream in(fs::path(output_dir) / "config.json");
  if (!in) return "model";
  nlohmann::json c = nlohmann::json::parse(in, nullptr, false);
  if (c.is_object() && c.contains("architectures") && c["architectures"].is_array() &&
      !c["architectures"].empty() && c["architectures"][0].is_string())
    return c["architectures"][0].get<std::string>();
  if (c.is_object() && c.contains("model_type") && c["model_type"].is_string())
    return c["model_type"].get<std::string>();
  return "model";
}

// "160 steps, epoch 0.2073; last train loss 5.61; last eval loss 5.745".
std::string summary_line(const TrainerState& s) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%lld steps, epoch %.4g", static_cast<long long>(s.global_step),
                s.epoch);
  std::string out = buf;
  for (const char* key : {"loss", "eval_loss"}) {
    for (auto it = s.log_history.rbegin(); it != s.log_history.rend(); ++it) {
      auto v = it->find(key);
      if (v == it->end()) continue;
      std::snprintf(buf, sizeof buf, "; last %s %.4g", key[0] == 'l' ? "train loss" : "eval loss",
                    v->second);
      out += buf;
      break;
    }
  }
  return out;
}

}  // namespace

io::ChartPage training_curves(const TrainerState& state, const std::string& title,
                              const std::string& subtitle) {
  io::ChartPage page{title, subtitle, {}, 2};
  const double last = static_cast<double>(state.global_step);
  add_panel(page,
            {"Loss",
             "step",
             "loss",
             false,
             {series_of(state, "loss", "train loss", kTrainColor, false),
              series_of(state, "eval_loss", "eval loss", kEvalColor, true)}},
            last);
  add_panel(page,
            {"Learning rate",
             "step",
             "learning rate",
             false,
             {series_of(state, "learning_rate", "learning_rate", kTrainColor, false)}},
            last);
  add_panel(page,
            {"Gradient norm",
             "step",
             "grad norm (before clipping)",
             false,
             {series_of(state, "grad_norm", "grad_norm", kTrainColor, false)}},
            last);
  std::set<std::string> metrics;
  for (const Logs& e : state.log_history)
    for (const auto& kv : e)
      if (is_eval_metric(kv.first)) metrics.insert(kv.first);
  for (const std::string& m : metrics) {
    io::ChartSeries s = series_of(state, m, m, kEvalColor, true);
    const bool log_y = wants_log(s);
    std::string name = "Eval " + m.substr(5);
    add_panel(page, {name, "step", m + (log_y ? " (log scale)" : ""), log_y, {s}}, last);
  }
  return page;
}

std::string write_training_curves(const std::string& output_dir, const std::string& svg_path) {
  const std::string state_path = (fs::path(output_dir) / "trainer_state.json").string();
  const TrainerState state = TrainerState::from_json(read_file(state_path), state_path);
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(output_dir, ec);
  if (ec || dir.filename().empty()) dir = fs::path(output_dir).lexically_normal();
  const std::string run = dir.filename().string();
  io::ChartPage page = training_curves(
      state, model_name(output_dir) + " training curves: " + (run.empty() ? output_dir : run),
      summary_line(state));
  LOOM_CHECK(!page.panels.empty(), "[plot] ", state_path,
             ": log_history holds no logged values to plot");
  const std::string out =
      svg_path.empty() ? (fs::path(output_dir) / "training_curves.svg").string() : svg_path;
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f << io::render_svg(page);
  f.flush();
  LOOM_CHECK(f.good(), "[plot] ", out, ": cannot write file");
  return out;
}

}  // namespace loom::train
