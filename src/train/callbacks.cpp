// The standard callbacks' decisions: DefaultFlowCallback (the log / evaluate
// / save cadence) and EarlyStoppingCallback, and TrainerControl's exported
// state — transformers' trainer_callback.py, event for event.
#include <cmath>

#include <nlohmann/json.hpp>

#include "io/json_parse.h"
#include "loom/callbacks.h"
#include "loom/error.h"

namespace loom {

// ---- DefaultFlowCallback (transformers' DefaultFlowCallback.on_step_end /
// on_epoch_end). ----

void DefaultFlowCallback::on_step_end(const TrainingArguments& args, const TrainerState& state,
                                      TrainerControl& control) {
  const int64_t step = state.global_step;
  if (step == 1 && args.logging_first_step) control.should_log = true;
  if (args.logging_strategy == "steps" && step % state.logging_steps == 0)
    control.should_log = true;
  const bool eval_due = args.eval_strategy == "steps" && step % state.eval_steps == 0 &&
                        args.eval_delay <= static_cast<double>(step);
  if (eval_due) control.should_evaluate = true;
  if (args.save_strategy == "steps" && state.save_steps > 0 && step % state.save_steps == 0)
    control.should_save = true;
  if (step >= state.max_steps) {
    control.should_training_stop = true;
    // transformers 5: evaluate and save at the end when step-based and this
    // step was not already on the cadence.
    if (args.eval_strategy == "steps" && step % state.eval_steps != 0 &&
        args.eval_delay <= static_cast<double>(step))
      control.should_evaluate = true;
    if (args.save_strategy == "steps") control.should_save = true;
  }
}

void DefaultFlowCallback::on_epoch_end(const TrainingArguments& args, const TrainerState& state,
                                       TrainerControl& control) {
  if (args.logging_strategy == "epoch") control.should_log = true;
  if (args.eval_strategy == "epoch" && args.eval_delay <= state.epoch)
    control.should_evaluate = true;
  if (args.save_strategy == "epoch") control.should_save = true;
}

// ---- TrainerControl. ----

std::string TrainerControl::state_json() const {
  nlohmann::json j = {{"args",
                       {{"should_training_stop", should_training_stop},
                        {"should_epoch_stop", should_epoch_stop},
                        {"should_save", should_save},
                        {"should_evaluate", should_evaluate},
                        {"should_log", should_log}}},
                      {"attributes", nlohmann::json::object()}};
  return j.dump();
}

// ---- EarlyStoppingCallback. ----

EarlyStoppingCallback::EarlyStoppingCallback(int64_t patience, double threshold)
    : patience_(patience), threshold_(threshold) {
  LOOM_CHECK(patience >= 1, "[EarlyStoppingCallback] early_stopping_patience must be >= 1, got ",
             patience);
  LOOM_CHECK(threshold >= 0, "[EarlyStoppingCallback] early_stopping_threshold must be >= 0, got ",
             threshold);
}

void EarlyStoppingCallback::on_train_begin(const TrainingArguments& args, const TrainerState&,
                                           TrainerControl&) {
  LOOM_CHECK(args.metric_for_best_model.has_value(),
             "[EarlyStoppingCallback] requires metric_for_best_model to be set");
  LOOM_CHECK(args.eval_strategy != "no",
             "[EarlyStoppingCallback] requires eval_strategy 'steps' or 'epoch', got 'no'");
}

void EarlyStoppingCallback::on_evaluate(const TrainingArguments& args, const TrainerState& state,
                                        TrainerControl& control, const Logs& metrics) {
  auto it = metrics.find(args.best_metric_key());
  if (it == metrics.end()) return;  // transformers warns and disables early stopping
  const double value = it->second;
  const bool greater = args.greater_is_better.value_or(false);
  const bool better =
      !state.best_metric || ((greater ? value > *state.best_metric : value < *state.best_metric) &&
                             std::fabs(value - *state.best_metric) > threshold_);
  counter_ = better ? 0 : counter_ + 1;
  if (counter_ >= patience_) control.should_training_stop = true;
}

std::optional<std::string> EarlyStoppingCallback::state_json() const {
  nlohmann::json j = {
      {"args", {{"early_stopping_patience", patience_}, {"early_stopping_threshold", threshold_}}},
      {"attributes", {{"early_stopping_patience_counter", counter_}}}};
  return j.dump();
}

void EarlyStoppingCallback::load_state_json(const std::string& text) {
  io::check_json_depth(text, "[EarlyStoppingCallback] saved state");
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    counter_ = j.at("attributes").at("early_stopping_patience_counter").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    fail("[EarlyStoppingCallback] malformed saved state: ", e.what());
  }
}

}  // namespace loom
