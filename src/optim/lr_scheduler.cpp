// LRScheduler (loom/optim.h): drives an optimizer's parameter groups as
// torch.optim.lr_scheduler.LambdaLR does (lr = base_lr * lambda(last_epoch)),
// with the lambdas of lr_schedule.cpp (schedule_factor), and saves/loads its
// state as JSON. The learning rate is computed on the host each step; the
// optimizers pass it to the graph as device data, so a schedule never
// recompiles.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/json_parse.h"
#include "loom/error.h"
#include "loom/optim.h"

namespace loom::optim {

LRScheduler::LRScheduler(const std::string& name, Optimizer& optimizer, ScheduleOptions options)
    : name_(name), optimizer_(&optimizer), options_(std::move(options)) {
  auto it = optimizer.defaults().find("lr");
  LOOM_CHECK(it != optimizer.defaults().end(), "[lr_scheduler] optimizer has no default lr");
  lr_init_ = it->second;
  for (const ParamGroup& g : optimizer.param_groups()) base_lrs_.push_back(g.lr());
  apply_lr();  // schedule_factor checks the name and options before any lr is set
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
