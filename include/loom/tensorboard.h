// TensorBoardCallback: writes a run's logs as TensorBoard scalars, as
// transformers' integrations.TensorBoardCallback does (report_to
// "tensorboard" or "all" adds it to every Trainer). Tags are transformers'
// rewrite_logs names — "eval_<m>" -> "eval/<m>", "test_<m>" -> "test/<m>",
// anything else "train/<m>" (train/loss, train/learning_rate,
// train/grad_norm, train/epoch, eval/loss, eval/perplexity, ...) — at step
// state.global_step. On the lazy device each training log also gets loom's
// own scalars (loom::metrics):
//   lazy/CompileTime     milliseconds spent compiling since the previous log
//   lazy/ExecuteTime     milliseconds spent executing since the previous log
//   lazy/UncachedCompile graphs compiled so far (a step up = a (re)compile)
// on_train_begin also writes the arguments as the text summary "args".
//
// Files: one events.out.tfevents.* in args.logging_dir per run (io/tb_event.h
// for the format), flushed after every log, so `tensorboard --logdir
// OUTPUT_DIR/runs` shows a live run and a crash leaves every record whole.
//
//   args.report_to = "tensorboard";       // the Trainer adds the callback
//   args.logging_dir = "out/runs/first";  // default: out/runs/<date>_<host>
#pragma once

#include <memory>
#include <string>

#include "loom/callbacks.h"

namespace loom {

namespace io {
class EventFileWriter;
}

/// transformers' rewrite_logs: the TensorBoard tag of a log key
/// ("loss" -> "train/loss", "eval_loss" -> "eval/loss", "test_f1" -> "test/f1").
std::string tensorboard_tag(const std::string& log_key);

class TensorBoardCallback : public TrainerCallback {
 public:
  TensorBoardCallback();
  ~TensorBoardCallback() override;
  std::string name() const override { return "TensorBoardCallback"; }
  /// Opens the event file in args.logging_dir (only on the world's process
  /// zero) and writes the "args" text. Throws loom::Error "[tensorboard]
  /// <path>: ..." when the directory or file cannot be created, or
  /// "[TensorBoardCallback] logging_dir is unset" before validate().
  void on_train_begin(const TrainingArguments& args, const TrainerState& state,
                      TrainerControl& control) override;
  /// Writes every entry of `logs` (rewritten tags) at state.global_step, plus
  /// the lazy/ scalars for a training log on the lazy device; then flushes.
  /// A log before on_train_begin (Trainer::evaluate alone) opens the file first.
  void on_log(const TrainingArguments& args, const TrainerState& state, TrainerControl& control,
              const Logs& logs) override;
  /// Flushes and closes the file.
  void on_train_end(const TrainingArguments& args, const TrainerState& state,
                    TrainerControl& control) override;
  /// The event file written ("" before the first event).
  std::string event_file() const;

 private:
  void open(const TrainingArguments& args, const TrainerState& state);
  std::unique_ptr<io::EventFileWriter> writer_;
  double last_compile_ms_ = 0, last_execute_ms_ = 0;
};

}  // namespace loom
