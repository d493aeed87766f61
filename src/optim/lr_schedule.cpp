// Learning-rate schedules (loom/optim.h): the lr_lambda functions of
// transformers.optimization (get_scheduler; the _get_*_lr_lambda helpers in
// transformers/optimization.py), evaluated in double in the same operation
// order as the Python, and LRScheduler, which drives an optimizer's groups as
// torch.optim.lr_scheduler.LambdaLR does (lr = base_lr * lambda(last_epoch)).
// The learning rate is computed here on the host each step; the optimizers
// pass it to the graph as device data, so a schedule never recompiles.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numbers>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/json_parse.h"
#include "loom/error.h"
#include "loom/optim.h"

namespace loom::optim {
namespace {

bool needs_training_steps(const std::string& name) {
  return name == "linear" || name == "cosine" || name == "cosine_with_restarts" ||
         name == "polynomial";
}

// The checks get_scheduler and the schedule functions make, plus loom's:
// counts are non-negative, polynomial's decay span is not empty.
void check_schedule(const std::string& name, const ScheduleOptions& o, double lr_init) {
  const auto& names = schedule_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    fail("[lr_scheduler] unknown schedule '", name, "' (known: ", known, ")");
  }
  if (name == "constant") return;
  LOOM_CHECK(o.num_warmup_steps.has_value(), "[lr_scheduler] ", name, " requires num_warmup_steps");
  LOOM_CHECK(*o.num_warmup_steps >= 0, "[lr_scheduler] num_warmup_steps must be >= 0, got ",
             *o.num_warmup_steps);
  if (needs_training_steps(name)) {
    LOOM_CHECK(o.num_training_steps.has_value(), "[lr_scheduler] ", name,
               " requires num_training_steps");
    LOOM_CHECK(*o.num_training_steps >= 0, "[lr_scheduler] num_training_steps must be >= 0, got ",
               *o.num_training_steps);
  }
  if (name == "polynomial") {
    LOOM_CHECK(lr_init > o.lr_end, "[lr_scheduler] lr_end (", o.lr_end,
               ") must be smaller than initial lr (", lr_init, ")");
    LOOM_CHECK(*o.num_training_steps != *o.num_warmup_steps,
               "[lr_scheduler] polynomial needs "
               "num_training_steps != num_warmup_steps (both ",
               *o.num_warmup_steps, ")");
  }
  if (name == "inverse_sqrt" && o.timescale.has_value()) {
    LOOM_CHECK(*o.timescale > 0, "[lr_scheduler] timescale must be > 0, got ", *o.timescale);
  }
}

double warmup_factor(int64_t step, int64_t warmup) {
  return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup));
}

double decay_factor(const std::string& name, int64_t step, const ScheduleOptions& o,
                    double lr_init) {
  const int64_t w = *o.num_warmup_steps;
  if (name == "constant_with_warmup") return 1.0;
  if (name == "inverse_sqrt") {
    int64_t timescale = o.timescale.value_or(w != 0 ? w : 10000);
    int64_t shift = timescale - w;
    return 1.0 / std::sqrt(static_cast<double>(step + shift) / static_cast<double>(timescale));
  }
  const int64_t n = *o.num_training_steps;
  if (name == "linear") {
    return std::max(
        0.0, static_cast<double>(n - step) / static_cast<double>(std::max<int64_t>(1, n - w)));
  }
  if (name == "polynomial") {
    if (step > n) return o.lr_end / lr_init;
    double lr_range = lr_init - o.lr_end;
    double pct_remaining = 1.0 - static_cast<double>(step - w) / static_cast<double>(n - w);
    return (lr_range * std::pow(pct_remaining, o.power) + o.lr_end) / lr_init;
  }
  double progress =
      static_cast<double>(step - w) / static_cast<double>(std::max<int64_t>(1, n - w));
  if (name == "cosine") {
    double cycles = o.num_cycles.value_or(0.5);
    return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * cycles * 2.0 * progress)));
  }
  // cosine_with_restarts
  double cycles = o.num_cycles.value_or(1.0);
  if (progress >= 1.0) return 0.0;
  return std::max(0.0,
                  0.5 * (1.0 + std::cos(std::numbers::pi * std::fmod(cycles * progress, 1.0))));
}

}  // namespace

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names = {"linear",      "cosine",   "cosine_with_restarts",
                                                 "polynomial",  "constant", "constant_with_warmup",
                                                 "inverse_sqrt"};
  return names;
}

double schedule_factor(const std::string& name, int64_t step, const ScheduleOptions& options,
                       double lr_init) {
  check_schedule(name, options, lr_init);
  LOOM_CHECK(step >= 0, "[lr_scheduler] step must be >= 0, got ", step);
  if (name == "constant") return 1.0;
  if (step < *options.num_warmup_steps) return warmup_factor(step, *options.num_warmup_steps);
  return decay_factor(name, step, options, lr_init);
}

LRScheduler::LRScheduler(const std::string& name, Optimizer& optimizer, ScheduleOptions options)
    : name_(name), optimizer_(&optimizer), options_(std::move(options)) {
  auto it = optimizer.defaults().find("lr");
  LOOM_CHECK(it != optimizer.defaults().end(), "[lr_scheduler] optimizer has no default lr");
  lr_init_ = it->second;
  check_schedule(name_, options_, lr_init_);
  for (const ParamGroup& g : optimizer.param_groups()) base_lrs_.push_back(g.lr());
  apply_lr();
}

void LRScheduler::step() {
  ++last_epoch_;
  apply_lr();
}

void LRScheduler::apply_lr() {
  std::vector<ParamGroup>& groups = optimizer_->param_groups();
  LOOM_CHECK(groups.size() == base_lrs_.size(), "[lr_scheduler] the optimizer has ", groups.size(),
             " parameter groups, the schedule was made for ", base_lrs_.size());
  double factor = schedule_factor(name_, last_epoch_, options_, lr_init_);
  last_lr_.clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i].set_lr(base_lrs_[i] * factor);
    last_lr_.push_back(groups[i].lr());
  }
}

std::string LRScheduler::state_json() const {
  nlohmann::json j = {
      {"name", name_}, {"last_epoch", last_epoch_}, {"base_lrs", base_lrs_}, {"last_lr", last_lr_}};
  return j.dump();
}

void LRScheduler::load_state_json(const std::string& text) {
  io::check_json_depth(text, "[lr_scheduler] state");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("[lr_scheduler] state is not valid JSON: ", e.what());
  }
  LOOM_CHECK(j.is_object() && j.contains("name") && j["name"].is_string() &&
                 j.contains("last_epoch") && j["last_epoch"].is_number_integer() &&
                 j.contains("base_lrs") && j["base_lrs"].is_array(),
             "[lr_scheduler] state needs \"name\" (string), \"last_epoch\" (integer) and "
             "\"base_lrs\" (array), got ",
             text.substr(0, 200));
  std::string name = j["name"].get<std::string>();
  LOOM_CHECK(name == name_, "[lr_scheduler] state of schedule '", name, "' cannot be loaded into '",
             name_, "'");
  int64_t last_epoch = j["last_epoch"].get<int64_t>();
  LOOM_CHECK(last_epoch >= 0, "[lr_scheduler] last_epoch must be >= 0, got ", last_epoch);
  std::vector<double> base_lrs;
  for (const auto& v : j["base_lrs"]) {
    LOOM_CHECK(v.is_number(), "[lr_scheduler] base_lrs holds a non-number ", v.dump());
    base_lrs.push_back(v.get<double>());
  }
  LOOM_CHECK(base_lrs.size() == optimizer_->param_groups().size(), "[lr_scheduler] state has ",
             base_lrs.size(), " base_lrs, the optimizer ", optimizer_->param_groups().size(),
             " parameter groups");
  base_lrs_ = std::move(base_lrs);
  last_epoch_ = last_epoch;
  apply_lr();
}

void LRScheduler::save(const std::string& path) const {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << state_json() << "\n";
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      fail("[lr_scheduler] ", path, ": cannot write");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail("[lr_scheduler] ", path, ": cannot rename the temporary file into place");
  }
}

void LRScheduler::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "[lr_scheduler] ", path, ": cannot open");
  std::stringstream buf;
  buf << in.rdbuf();
  try {
    load_state_json(buf.str());
  } catch (const Error& e) {
    fail(e.what(), " (loading ", path, ")");
  }
}

}  // namespace loom::optim
