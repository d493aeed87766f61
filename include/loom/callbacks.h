// Trainer callbacks, state and control, as transformers' trainer_callback.py:
// TrainerState (saved as a checkpoint's trainer_state.json with transformers'
// fields), TrainerControl (the flags callbacks set to steer the loop),
// TrainerCallback with transformers' event names, and the standard callbacks
// (DefaultFlowCallback, ProgressCallback, PrinterCallback,
// EarlyStoppingCallback).
//
//   // Stop after step 10 and save there.
//   struct StopAt10 : loom::TrainerCallback {
//     std::string name() const override { return "StopAt10"; }
//     void on_step_end(const loom::TrainingArguments&, const loom::TrainerState& s,
//                      loom::TrainerControl& c) override {
//       if (s.global_step == 10) c.should_training_stop = c.should_save = true;
//     }
//   };
//   trainer.add_callback(std::make_shared<StopAt10>());
//
// Events run the callbacks in the order they were added; before an event the
// Trainer resets the flags transformers' CallbackHandler resets
// (on_step_begin: should_log/evaluate/save; on_epoch_begin:
// should_epoch_stop; on_train_begin: should_training_stop; on_log, on_save,
// on_evaluate: their own flag).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/training_args.h"

namespace loom {

/// A log entry or a metrics dictionary: name -> value ("loss", "grad_norm",
/// "learning_rate", "epoch", "eval_loss", "train_runtime", ...). Sorted by
/// name; an entry of TrainerState::log_history also holds "step".
using Logs = std::map<std::string, double>;

/// transformers' TrainerState. Steps are optimizer (update) steps.
struct TrainerState {
  double epoch = 0;  ///< epochs done, fractional (epoch + batches done / batches per epoch)
  int64_t global_step = 0;
  int64_t max_steps = 0;
  int64_t logging_steps = 500;
  int64_t eval_steps = 500;
  int64_t save_steps = 500;
  std::optional<int64_t> train_batch_size;
  int64_t num_train_epochs = 0;
  int64_t num_input_tokens_seen = 0;
  double total_flos = 0;  ///< 6 * non-embedding parameters * input tokens
  std::vector<Logs> log_history;
  std::optional<double> best_metric;
  std::optional<int64_t> best_global_step;
  std::optional<std::string> best_model_checkpoint;
  bool is_local_process_zero = true;
  bool is_world_process_zero = true;
  bool is_hyper_param_search = false;
  /// Stateful callbacks by class name -> their state as JSON text
  /// ({"args": {...}, "attributes": {...}}), as transformers stores them.
  std::map<std::string, std::string> stateful_callbacks;

  /// trainer_state.json text: transformers' TrainerState.save_to_json
  /// (json.dumps(asdict(state), indent=2, sort_keys=True) + "\n"), with
  /// trial_name and trial_params null; in log_history "step" is an integer.
  std::string to_json() const;
  /// Parses trainer_state.json text (also files written by transformers;
  /// unknown keys are ignored). Throws loom::Error "[trainer_state] <where>:
  /// ..." for malformed JSON or a field of the wrong type.
  static TrainerState from_json(const std::string& text, const std::string& where = "<json>");
  /// from_json on a file; loom::Error naming the file when unreadable.
  static TrainerState from_json_file(const std::string& path);
};

/// transformers' TrainerControl: flags callbacks set to steer the loop.
struct TrainerControl {
  bool should_training_stop = false;  ///< stop training (never reset during a run)
  bool should_epoch_stop = false;     ///< end this epoch (reset at the next)
  bool should_save = false;           ///< save a checkpoint after this step
  bool should_evaluate = false;       ///< evaluate after this step
  bool should_log = false;            ///< log after this step
  /// {"args": {the five flags}, "attributes": {}} (its stateful_callbacks entry).
  std::string state_json() const;
};

/// Base class: override the events you need; every default does nothing.
/// `state` is the Trainer's (read-only); steer the loop through `control`.
class TrainerCallback {
 public:
  virtual ~TrainerCallback() = default;
  /// The class name (used by remove_callback and stateful_callbacks).
  virtual std::string name() const = 0;

  virtual void on_init_end(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  virtual void on_train_begin(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  virtual void on_train_end(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  virtual void on_epoch_begin(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  virtual void on_epoch_end(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  /// Before the first micro-batch of an optimizer step.
  virtual void on_step_begin(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  /// After each micro-batch but the last of an optimizer step.
  virtual void on_substep_end(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  virtual void on_pre_optimizer_step(const TrainingArguments&, const TrainerState&,
                                     TrainerControl&) {}
  virtual void on_optimizer_step(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  /// After an optimizer step; global_step and epoch are already updated.
  virtual void on_step_end(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  virtual void on_evaluate(const TrainingArguments&, const TrainerState&, TrainerControl&,
                           const Logs& metrics) {}
  virtual void on_predict(const TrainingArguments&, const TrainerState&, TrainerControl&,
                          const Logs& metrics) {}
  /// After a checkpoint directory is complete.
  virtual void on_save(const TrainingArguments&, const TrainerState&, TrainerControl&) {}
  virtual void on_log(const TrainingArguments&, const TrainerState&, TrainerControl&,
                      const Logs& logs) {}
  /// After each evaluation/prediction batch; `done` of `total` batches.
  virtual void on_prediction_step(const TrainingArguments&, const TrainerState&, TrainerControl&,
                                  int64_t done, int64_t total) {}

  /// Stateful callbacks (transformers' ExportableState) return their state
  /// as JSON text {"args": {...}, "attributes": {...}}; nullopt = stateless.
  virtual std::optional<std::string> state_json() const { return std::nullopt; }
  /// Restores what state_json() returned (on resume, when
  /// restore_callback_states_from_checkpoint). Throws loom::Error when malformed.
  virtual void load_state_json(const std::string& json) {}
};

/// transformers' DefaultFlowCallback: sets should_log / should_evaluate /
/// should_save on their step cadence (global_step % steps == 0, the first
/// step with logging_first_step) or at epoch end, and should_training_stop
/// at max_steps (evaluating and saving there too when step-based).
class DefaultFlowCallback : public TrainerCallback {
 public:
  std::string name() const override { return "DefaultFlowCallback"; }
  void on_step_end(const TrainingArguments& args, const TrainerState& state,
                   TrainerControl& control) override;
  void on_epoch_end(const TrainingArguments& args, const TrainerState& state,
                    TrainerControl& control) override;
};

/// Prints each log as a line, Python-dict style with floats as %.4g
/// ({'loss': 2.345, 'grad_norm': 1.12, 'learning_rate': 5e-05, 'epoch': 0.5}),
/// total_flos left out (transformers' PrinterCallback). To stdout.
class PrinterCallback : public TrainerCallback {
 public:
  std::string name() const override { return "PrinterCallback"; }
  void on_log(const TrainingArguments& args, const TrainerState& state, TrainerControl& control,
              const Logs& logs) override;
};

/// A progress bar on stderr for a terminal (transformers' ProgressCallback
/// with tqdm): "  12/100 [00:03<00:25, 3.51it/s, loss=2.345]", redrawn in
/// place; log lines are printed above it as PrinterCallback prints them.
class ProgressCallback : public TrainerCallback {
 public:
  std::string name() const override { return "ProgressCallback"; }
  void on_train_begin(const TrainingArguments& args, const TrainerState& state,
                      TrainerControl& control) override;
  void on_step_end(const TrainingArguments& args, const TrainerState& state,
                   TrainerControl& control) override;
  void on_log(const TrainingArguments& args, const TrainerState& state, TrainerControl& control,
              const Logs& logs) override;
  void on_prediction_step(const TrainingArguments& args, const TrainerState& state,
                          TrainerControl& control, int64_t done, int64_t total) override;
  void on_evaluate(const TrainingArguments& args, const TrainerState& state,
                   TrainerControl& control, const Logs& metrics) override;
  void on_train_end(const TrainingArguments& args, const TrainerState& state,
                    TrainerControl& control) override;

 private:
  void draw(bool final_line);
  int64_t total_ = 0, current_ = 0, first_step_ = 0;
  double start_ = 0;
  std::optional<double> last_loss_;
  bool active_ = false;
};

/// transformers' EarlyStoppingCallback: on each evaluation compares the
/// metric `metric_for_best_model` ("eval_" prefixed) with state.best_metric
/// (before this evaluation updates it); the counter resets when the metric
/// improves by more than `threshold` (greater or smaller per
/// greater_is_better) and otherwise grows; at `patience` it sets
/// should_training_stop. Stateful: its counter is saved in
/// trainer_state.json.
class EarlyStoppingCallback : public TrainerCallback {
 public:
  explicit EarlyStoppingCallback(int64_t patience = 1, double threshold = 0.0);
  std::string name() const override { return "EarlyStoppingCallback"; }
  /// Throws loom::Error "[EarlyStoppingCallback] ..." without
  /// metric_for_best_model or with eval_strategy "no" (transformers asserts).
  void on_train_begin(const TrainingArguments& args, const TrainerState& state,
                      TrainerControl& control) override;
  void on_evaluate(const TrainingArguments& args, const TrainerState& state,
                   TrainerControl& control, const Logs& metrics) override;
  std::optional<std::string> state_json() const override;
  void load_state_json(const std::string& json) override;
  int64_t patience_counter() const { return counter_; }

 private:
  int64_t patience_;
  double threshold_;
  int64_t counter_ = 0;
};

/// The text transformers' PrinterCallback prints for `logs`: a Python dict,
/// here in key order, every value as %.4g, total_flos left out:
/// "{'epoch': 0.5, 'loss': 2.345}".
std::string format_logs(const Logs& logs);

}  // namespace loom
