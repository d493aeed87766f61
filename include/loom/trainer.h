// loom::Trainer — the Hugging Face Trainer in C++: train(), evaluate() and
// predict() of a PretrainedModel on datasets, with transformers' training
// loop, logging / evaluation / save cadence, checkpoints and metric names, on
// the eager `cpu` device or the `lazy` device (one mark_step per optimizer
// step, so a training step compiles once and is then fetched from the cache).
//
//   loom::TrainingArguments args;
//   args.output_dir = "out";  args.device = "lazy";
//   args.set("eval_strategy", "steps");  args.eval_steps = 50;
//   auto model = std::make_shared<loom::GPT2LMHeadModel>(cfg);
//   loom::Trainer trainer(model, args, train_ds, eval_ds,
//                         {.data_collator = std::make_shared<loom::data::CausalLMCollator>(),
//                          .tokenizer_dir = "assets/tokenizers/gpt2",
//                          .compute_metrics = loom::perplexity_metrics});
//   loom::TrainOutput out = trainer.train();          // or train("last") to resume
//   loom::Logs m = trainer.evaluate();                // {"eval_loss", "eval_perplexity", ...}
//   trainer.save_model();                             // output_dir: config, weights, tokenizer
//
// The loop (transformers' Trainer._inner_training_loop / _run_epoch):
// for each optimizer step, gradient_accumulation_steps micro-batches are
// taken; each micro-batch's mean loss is scaled by its share of the label
// tokens of the window (labels != -100, counted after the causal-LM shift),
// so the accumulated gradient is that of one big batch (transformers'
// num_items_in_batch); the gradients are clipped to max_grad_norm (the norm is
// logged as grad_norm), AdamW steps, the schedule steps, gradients are reset
// and, on the lazy device, lazy::mark_step() runs — also after each
// micro-batch but the last, so a window is one graph per micro-batch and
// holds one micro-batch's activations at a time. The running loss stays a
// device tensor and is read only at logging steps. Logs, evaluation and
// checkpoints follow DefaultFlowCallback; a logged "loss" is the mean of the
// step losses since the previous log, "learning_rate" the rate the last step
// used, "epoch" the fractional epoch.
//
// Checkpoints: output_dir/checkpoint-<global_step>/ holds model.safetensors,
// config.json, the tokenizer files (copied from tokenizer_dir),
// optimizer.safetensors, scheduler.json, rng_state.json (loom's generator,
// the sampler position and the running loss), trainer_state.json
// (transformers' fields) and training_args.json. A checkpoint is written into
// output_dir/tmp-checkpoint-<step>, every file fsynced, then renamed into
// place, so a process killed while saving leaves the previous checkpoints
// whole; a save that fails (disk full) removes its tmp directory; leftover
// tmp-* directories are ignored when resuming and removed
// when training starts, and a checkpoint moved aside to checkpoint-<N>.old-<pid>
// by a save that replaced it and was killed is renamed back. Rotation
// (save_total_limit) never deletes the newest checkpoint, the best, nor the
// one just written. Resuming from a checkpoint that is not the newest
// deletes the newer ones (another run's) when the run saves checkpoints.
// Resuming restores the weights, optimizer, schedule, generator, running loss
// and data position, so a resumed run logs the same losses and ends with the
// same weights, bit for bit, as an uninterrupted one; the batches of the
// resumed epoch already trained are skipped at the sampler (never loaded).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/callbacks.h"
#include "loom/collator.h"
#include "loom/dataset.h"
#include "loom/models.h"
#include "loom/optim.h"
#include "loom/training_args.h"

namespace loom {

/// What compute_metrics receives (transformers' EvalPrediction), on the host
/// (cpu device). predictions: the model's logits of every example
/// concatenated along dim 0 ([N, num_labels] for classification, [N, T, V]
/// for language models, dim 1 padded with -100 where batch lengths differ);
/// label_ids: the batches' "labels" concatenated the same way (undefined when
/// the dataset has none). Both are undefined with prediction_loss_only.
struct EvalPrediction {
  Tensor predictions;
  Tensor label_ids;
  /// The mean evaluation loss (eval_loss), NaN when the model returned none.
  double loss = 0;
};

/// Metrics from predictions: names without the "eval_" prefix (the Trainer
/// adds it), e.g. {"accuracy": 0.9}.
using ComputeMetrics = std::function<Logs(const EvalPrediction&)>;

/// Trainer::train's result (transformers' TrainOutput).
struct TrainOutput {
  int64_t global_step = 0;
  double training_loss = 0;  ///< mean step loss over this call's steps (train_loss)
  /// train_runtime, train_samples_per_second, train_steps_per_second,
  /// total_flos, train_loss, epoch.
  Logs metrics;
};

/// Trainer::predict's result (transformers' PredictionOutput).
struct PredictionOutput {
  Tensor predictions;  ///< host logits, as EvalPrediction::predictions
  Tensor label_ids;    ///< host labels, or undefined
  Logs metrics;        ///< test_loss, test_runtime, ..., compute_metrics' with "test_"
};

/// The Trainer's optional parts (transformers' Trainer arguments).
struct TrainerOptions {
  /// Examples -> batches; default data::PaddingCollator with pad id 0.
  std::shared_ptr<const data::Collator> data_collator{};
  /// A directory whose tokenizer files (tokenizer.json, tokenizer_config.json,
  /// special_tokens_map.json, vocab.json, merges.txt, vocab.txt,
  /// added_tokens.json; those present) are copied into every checkpoint and by
  /// save_model (transformers' processing_class). Empty: none.
  std::string tokenizer_dir{};
  /// Called after each evaluation; its metrics are logged with "eval_".
  ComputeMetrics compute_metrics{};
  /// Added after DefaultFlowCallback, before the progress/printer callback.
  std::vector<std::shared_ptr<TrainerCallback>> callbacks{};
  /// Whether the model shifts labels (causal LM) so item counting skips the
  /// first label of each row. Unset: true when the model is a loom::CausalLM.
  std::optional<bool> loss_shifts_labels{};
};

class Trainer {
 public:
  /// Validates `args` (TrainingArguments::validate), seeds loom's generator
  /// with args.seed, moves `model` to args.device and adds the callbacks:
  /// DefaultFlowCallback, TensorBoardCallback when args.reports_to
  /// "tensorboard" (loom/tensorboard.h), options.callbacks, then ProgressCallback (stderr is
  /// a terminal and disable_tqdm unset or false) or PrinterCallback. Throws
  /// loom::Error for a null model, invalid arguments, eval_strategy other than
  /// "no" without an eval_dataset ("[Trainer] eval_strategy ..."), or a
  /// missing tokenizer_dir.
  Trainer(std::shared_ptr<PretrainedModel> model, TrainingArguments args,
          std::shared_ptr<const data::Dataset> train_dataset = nullptr,
          std::shared_ptr<const data::Dataset> eval_dataset = nullptr, TrainerOptions options = {});
  virtual ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Trains (see the top of this file). `resume_from_checkpoint` (else
  /// args.resume_from_checkpoint) is a checkpoint directory or "last" (the
  /// newest complete checkpoint-N of output_dir: newer incomplete ones — a
  /// file missing, trainer_state.json unreadable, a safetensors file
  /// truncated — are passed over with a warning on stderr). Before any step, output_dir is
  /// created and a probe file written and removed in it. Throws loom::Error
  /// "[TrainingArguments] output_dir '<dir>': <reason>" when that fails
  /// (a parent is a regular file, no permission, ...), and "[Trainer] ..."
  /// for a missing train_dataset, a dataset with no batch, output_dir holding
  /// checkpoints while neither resuming nor overwrite_output_dir, a
  /// checkpoint that is missing or incomplete (naming the file; for "last",
  /// when no checkpoint is complete, each one's problem), a model that
  /// returns no loss, a metric_for_best_model the evaluation does not
  /// produce; plus the I/O errors of saving (after removing the partial
  /// tmp-checkpoint-<step>). Writes output_dir/lazy_metrics.json
  /// (loom::metrics::report_json()) at the end.
  TrainOutput train(std::optional<std::string> resume_from_checkpoint = std::nullopt);

  /// Evaluates on `eval_dataset` (else the constructor's): metrics
  /// <prefix>_loss (mean of the batches' losses weighted by batch size),
  /// compute_metrics' with the prefix, <prefix>_runtime,
  /// <prefix>_samples_per_second, <prefix>_steps_per_second, and epoch.
  /// Logs them, calls on_evaluate, returns them. Throws loom::Error without a
  /// dataset.
  Logs evaluate(std::shared_ptr<const data::Dataset> eval_dataset = nullptr,
                const std::string& metric_key_prefix = "eval");

  /// Runs the model over `test_dataset` and returns the host logits, labels
  /// and metrics (prefix "test"); calls on_predict; does not log.
  PredictionOutput predict(std::shared_ptr<const data::Dataset> test_dataset,
                           const std::string& metric_key_prefix = "test");

  /// Writes the model (save_pretrained), the tokenizer files and
  /// training_args.json to `dir` (default output_dir).
  void save_model(const std::string& dir = "");
  /// Writes trainer_state.json to output_dir.
  void save_state() const;
  /// transformers' save_metrics: writes `metrics` to
  /// output_dir/<split>_results.json (indent 4, keys sorted) and, with
  /// `combined`, merges them into output_dir/all_results.json, the files `loom
  /// train` writes. Only the world's process zero writes. Throws loom::Error
  /// "[Trainer] <path>: cannot write file", or for an unreadable all_results.json.
  void save_metrics(const std::string& split, const Logs& metrics, bool combined = true) const;

  /// Adds "epoch" to `logs`, appends them (with "step") to
  /// state().log_history and calls on_log; returns the logs with "epoch".
  Logs log(Logs logs);

  void add_callback(std::shared_ptr<TrainerCallback> callback);
  /// Removes and returns the first callback named `name` (nullptr if none).
  std::shared_ptr<TrainerCallback> pop_callback(const std::string& name);
  void remove_callback(const std::string& name) { pop_callback(name); }
  const std::vector<std::shared_ptr<TrainerCallback>>& callbacks() const;

  const TrainingArguments& args() const;
  const TrainerState& state() const;
  TrainerControl& control();
  PretrainedModel& model() const;
  const Device& device() const;
  /// Created by train(); nullptr before.
  optim::Optimizer* optimizer() const;
  optim::LRScheduler* lr_scheduler() const;

  /// The loss of one micro-batch (transformers' compute_loss): the model's
  /// loss, scaled by labels-in-this-batch / `num_items_in_batch` when that
  /// is defined (a rank-0 f32 device tensor: the label tokens of the whole
  /// accumulation window). With that count, a batch with no counted label
  /// (every label -100: under data parallel, a rank's batch made only of
  /// DistributedSampler padding) gives exactly 0 and zero gradients, not the
  /// NaN of the model's mean over no labels. Override for a custom loss; the
  /// result must be a rank-0 tensor on the model's device.
  virtual Tensor compute_loss(PretrainedModel& model, const ModelInputs& inputs,
                              const Tensor& num_items_in_batch);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// The newest checkpoint-<N> directory of `output_dir` by N (transformers'
/// get_last_checkpoint), or nullopt (also when output_dir does not exist);
/// tmp-checkpoint-* and checkpoint-N.old-* directories never count. Throws
/// loom::Error "[checkpoint] <output_dir>: cannot list directory (...)" when
/// it exists but cannot be read.
std::optional<std::string> get_last_checkpoint(const std::string& output_dir);

// ---- compute_metrics helpers (the `evaluate` library's definitions). ----

/// Fraction of positions where preds == labels, ignoring labels == -100.
/// Throws loom::Error when the sizes differ; 0 when nothing counts.
double accuracy_score(const std::vector<int64_t>& preds, const std::vector<int64_t>& labels);
/// F1 of class `pos_label` (average "binary") or the unweighted mean of the
/// per-class F1 over the classes present in preds or labels ("macro"), as
/// sklearn.metrics.f1_score (a class with no predicted and no true positives
/// scores 0). Labels == -100 are ignored. Throws loom::Error for another
/// average or mismatched sizes.
double f1_score(const std::vector<int64_t>& preds, const std::vector<int64_t>& labels,
                const std::string& average = "binary", int64_t pos_label = 1);
/// Sequence classification: argmax of predictions [N, C] over C against
/// label_ids [N] -> {"accuracy", "f1"} (binary F1 for C == 2, macro
/// otherwise). Throws loom::Error without predictions/labels or for other shapes.
Logs classification_metrics(const EvalPrediction& p);
/// exp(loss), +inf on overflow (transformers' run_clm / run_mlm perplexity).
double perplexity(double loss);
/// Language models: {"perplexity": exp(eval loss)}; needs no predictions, so
/// pair it with prediction_loss_only.
Logs perplexity_metrics(const EvalPrediction& p);

namespace detail {
/// Tests only: called with each file name as a checkpoint is being written
/// (after the file is complete, before the directory is renamed into place),
/// e.g. to simulate a process killed mid-save. Empty function: none.
void set_checkpoint_file_hook(std::function<void(const std::string& file)> hook);
}  // namespace detail

}  // namespace loom
