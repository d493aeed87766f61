// Trainer::Impl: the Trainer's state shared by its implementation files —
// trainer.cpp (construction, logging, callbacks, save_model), trainer_loop.cpp
// (train), evaluation.cpp (evaluate / predict) and checkpoint_save.cpp /
// checkpoint_load.cpp (checkpoints). Mirrors the attributes of transformers'
// Trainer (_tr_loss, _total_loss_scalar, _globalstep_last_logged, ...).
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/dataloader.h"
#include "loom/trainer.h"
#include "train/fsdp.h"

namespace loom {

/// Wall-clock seconds since the epoch (transformers' time.time()).
inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

/// `v` rounded to `digits` decimals, as Python's round() for speed metrics.
inline double round_to(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

/// The numbers of transformers' set_initial_training_values.
struct TrainPlan {
  int64_t steps_in_epoch = 0;              ///< batches per epoch (len(dataloader))
  int64_t num_update_steps_per_epoch = 0;  ///< optimizer steps per epoch
  int64_t max_steps = 0;
  int64_t num_train_epochs = 0;
  int64_t num_examples = 0;
  double num_train_samples = 0;
};

/// Where a resumed run starts (transformers' _init_training_state).
struct ResumePoint {
  std::string dir;  ///< empty: a fresh run
  int64_t epochs_trained = 0;
  int64_t batches_to_skip = 0;  ///< micro-batches of the resumed epoch already trained
};

/// Whether `model`'s loss skips labels of -100 (cross_entropy's
/// ignore_index), so that data-parallel padding samples can be masked
/// (data::PaddingMaskCollator): causal and masked LMs, single-label
/// classification; not regression (MSE) or multi-label classification (BCE),
/// whose -100 would be a target.
bool loss_ignores_padding_labels(const PretrainedModel& model);

struct Trainer::Impl {
  Trainer* self = nullptr;
  std::shared_ptr<PretrainedModel> model;
  TrainingArguments args;
  Device device;
  std::shared_ptr<const data::Dataset> train_dataset, eval_dataset;
  TrainerOptions options;
  std::vector<std::shared_ptr<TrainerCallback>> callbacks;
  TrainerState state;
  TrainerControl control;
  std::unique_ptr<optim::Optimizer> optimizer;
  /// --fsdp: the shards the optimizer updates (train/fsdp.h); null for DDP.
  std::unique_ptr<train::FsdpEngine> fsdp;
  // The first optimizer step made the moments' host zeros; their freed
  // blocks leave the host's cache then (core/allocator.h).
  bool start_up_blocks_released = false;
  std::unique_ptr<optim::LRScheduler> scheduler;
  bool shifts_labels = false;
  int64_t flos_params = 0;  ///< non-embedding parameters (transformers' floating_point_ops)
  /// Whether args.bf16 runs under autocast on `device` (choose_autocast);
  /// decided on first use.
  std::optional<bool> autocast_on;

  // Running loss: a rank-0 f32 device tensor, read only when logging.
  Tensor tr_loss;
  double total_loss_scalar = 0;
  int64_t globalstep_last_logged = 0;
  double last_step_end = -1;  // now_seconds() at the previous optimizer step's end (TrainStepTime)
  int64_t initial_global_step = 0;
  double current_flos = 0;
  // Data position (rng_state.json).
  int64_t epoch_index = 0;
  int64_t batches_done_in_epoch = 0;

  template <typename F>
  void each(F&& f) {
    for (auto& cb : callbacks) f(*cb);
  }

  // trainer.cpp
  data::DataLoader make_loader(std::shared_ptr<const data::Dataset> dataset, int64_t batch_size,
                               bool shuffle) const;
  ModelInputs to_inputs(const data::Batch& batch) const;
  Logs log(Logs logs);
  void store_flos();
  Tensor zero_scalar() const;
  /// True when forward passes run under AutocastGuard: args.bf16 and the
  /// device has native bf16 matmuls (loom/autocast.h choose_autocast). The
  /// first call with args.bf16 prints "[Trainer] precision: ..." to stderr.
  bool use_autocast();
  /// Data parallel: throws loom::Error naming the first rank whose training
  /// arguments, parameters or autocast decision (use_autocast) differ from rank 0's.
  void check_same_setup_on_all_ranks();

  // trainer_loop.cpp
  TrainOutput train(std::optional<std::string> resume);
  TrainPlan plan(int64_t steps_in_epoch) const;
  void create_optimizer_and_scheduler(int64_t max_steps);
  /// Rank 0 warns when data-parallel padding samples cannot be masked.
  void warn_unmasked_padding() const;
  void run_epoch(int64_t epoch, const data::DataLoader& loader, const TrainPlan& plan,
                 int64_t skip);
  void optimizer_step(int64_t epoch, int64_t step, const TrainPlan& plan, Tensor& grad_norm,
                      double& learning_rate);
  Tensor training_step(const data::Batch& batch, const Tensor& num_items, size_t window);
  Tensor count_items(const std::vector<data::Batch>& window) const;
  void maybe_log_save_evaluate(const Tensor& grad_norm, double learning_rate);
  TrainOutput finalize(const TrainPlan& plan, double start_time);

  // evaluation.cpp
  struct LoopOutput {
    Tensor predictions, label_ids;
    Logs metrics;
    int64_t num_samples = 0;
  };
  LoopOutput evaluation_loop(std::shared_ptr<const data::Dataset> dataset,
                             const std::string& prefix, bool prediction_loss_only);
  Logs evaluate(std::shared_ptr<const data::Dataset> dataset, const std::string& prefix);
  bool determine_best_metric(const Logs& metrics);

  // checkpoint_save.cpp / checkpoint_load.cpp
  void save_checkpoint();
  void write_optimizer_shard(const std::string& tmp_dir);
  void gather_rank_states();
  std::vector<std::string> rank_rng_states;  ///< data parallel: rank k's rng_state JSON
  void write_checkpoint_files(const std::string& tmp_dir);
  void write_model_files(const std::string& dir) const;
  ResumePoint load_checkpoint(const std::string& dir, const TrainPlan& plan);
  void load_best_model();
};

/// transformers' LabelSmoother (trainer_pt_utils.py): (1 - f) * NLL + f *
/// mean over classes of -log p, over the labels that are not -100; with
/// `shift` (a causal LM) the logits at t [B, T, V] predict the label at t + 1
/// of labels [B, T]. Returns the mean, [] f32. Used by compute_loss and, as in
/// HF's prediction_step, by the evaluation loop.
Tensor trainer_label_smoothed_loss(Tensor logits, Tensor labels, bool shift, double factor);

}  // namespace loom
