// TrainingArguments: the Hugging Face Trainer's arguments, with transformers'
// names and defaults (transformers/training_args.py, TrainingArguments), plus
// `device` ("cpu" | "lazy"). One table drives setting a field by name from a
// string (the `loom train --name value` flags), reading and writing JSON
// (`--config file.json`, a checkpoint's training_args.json) and the list of
// fields with their help text, so the CLI maps flags onto fields directly.
//
//   loom::TrainingArguments args;            // transformers' defaults
//   args.output_dir = "out";
//   args.set("learning_rate", "3e-4");       // parsed as the field's type
//   args.set("eval_strategy", "steps");
//   args.set("lerning_rate", "1");           // loom::Error: unknown argument
//                                            // 'lerning_rate' (did you mean 'learning_rate'?)
//   args.validate();                         // fills derived defaults, checks combinations
//
// validate() does what transformers' __post_init__ does: it fills the
// derived defaults (eval_steps falls back to logging_steps; do_eval is set by
// an eval strategy; metric_for_best_model defaults to "loss" with
// load_best_model_at_end; greater_is_better to !metric.endswith("loss")) and
// rejects invalid values and inconsistent combinations, each with a message
// "[TrainingArguments] <name>: ..." naming the argument.
//
// Two 4.x names that transformers 5 dropped are kept: warmup_ratio (used
// when warmup_steps is 0) and overwrite_output_dir.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/device.h"

namespace loom {

struct TrainingArguments {
  // ---- Output and what to run. ----
  std::string output_dir = "trainer_output";  ///< checkpoints and final files go here
  /// Start over in an output_dir that already holds checkpoints (the old
  /// checkpoint-N directories are removed when training starts); without it,
  /// such a directory is an error unless resuming.
  bool overwrite_output_dir = false;
  bool do_train = false;
  bool do_eval = false;  ///< set by validate() when eval_strategy != "no"
  bool do_predict = false;

  // ---- Batches. ----
  int64_t per_device_train_batch_size = 8;
  int64_t per_device_eval_batch_size = 8;
  /// Micro-batches per optimizer step; the loss of each is scaled by its
  /// share of the label tokens in the window (transformers' num_items_in_batch).
  int64_t gradient_accumulation_steps = 1;
  bool dataloader_drop_last = false;
  int64_t dataloader_num_workers = 0;
  /// Data parallel (mpirun -np N): gradients are all-reduced in buckets of at
  /// most this many MiB, in reverse parameter order (torch DDP's bucket_cap_mb).
  double ddp_bucket_cap_mb = 25;

  // ---- Optimizer (AdamW, torch's update) and schedule. ----
  /// "adamw_torch", "adamw_torch_fused" (the same AdamW here) or "sgd".
  std::string optim = "adamw_torch_fused";
  double learning_rate = 5e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  /// Gradients are clipped to this global L2 norm; <= 0 disables clipping
  /// (the norm is still logged).
  double max_grad_norm = 1.0;
  /// May be fractional: max_steps = ceil(num_train_epochs * steps per epoch).
  double num_train_epochs = 3.0;
  /// > 0 overrides num_train_epochs; -1 = train for num_train_epochs.
  int64_t max_steps = -1;
  /// One of optim::schedule_names(): linear, cosine, cosine_with_restarts,
  /// polynomial, constant, constant_with_warmup, inverse_sqrt.
  std::string lr_scheduler_type = "linear";
  /// >= 1: warm-up steps; in (0, 1): a ratio of the total steps (transformers 5).
  double warmup_steps = 0;
  /// Ratio of the total steps used when warmup_steps is 0 (transformers 4).
  double warmup_ratio = 0;

  // ---- Logging. ----
  std::string logging_strategy = "steps";  ///< "no" | "steps" | "epoch"
  /// Log every this many optimizer steps; in (0, 1): a ratio of max_steps.
  double logging_steps = 500;
  bool logging_first_step = false;
  /// A NaN/inf step loss is replaced by the mean of the losses since the last
  /// log (cpu device only, as transformers skips it on XLA).
  bool logging_nan_inf_filter = true;
  /// Plain log lines instead of a progress bar; unset: a bar when stderr is a terminal.
  std::optional<bool> disable_tqdm;
  /// Where the run is reported, comma-separated: "tensorboard" (event files
  /// in logging_dir, and training_curves.svg at the end of `loom train`),
  /// "all" (every integration loom has: tensorboard) or "none". transformers
  /// 4's default "all" (transformers 5 defaults to "none"); other
  /// transformers integrations (wandb, mlflow, ...) are an error.
  std::string report_to = "all";
  /// TensorBoard's log directory; unset: validate() sets
  /// output_dir/runs/<Mon DD_HH-MM-SS>_<host> (transformers' default_logdir).
  std::optional<std::string> logging_dir;

  // ---- Evaluation. ----
  std::string eval_strategy = "no";  ///< "no" | "steps" | "epoch"
  /// Evaluate every this many steps (eval_strategy "steps"); unset or 0:
  /// logging_steps. In (0, 1): a ratio of max_steps.
  std::optional<double> eval_steps;
  /// Do not evaluate before this many steps (or epochs with "epoch").
  double eval_delay = 0;
  bool eval_on_start = false;
  /// Only the loss: predictions are not gathered, compute_metrics gets none.
  bool prediction_loss_only = false;

  // ---- Checkpoints. ----
  std::string save_strategy = "steps";  ///< "no" | "steps" | "epoch" | "best"
  double save_steps = 500;              ///< in (0, 1): a ratio of max_steps
  /// Keep at most this many checkpoint-N directories (the newest and the best
  /// are never deleted); unset or <= 0: keep all.
  std::optional<int64_t> save_total_limit;
  /// Checkpoints hold only the model (and tokenizer): no optimizer, scheduler
  /// or RNG state, so they cannot be resumed from.
  bool save_only_model = false;
  bool load_best_model_at_end = false;
  /// "loss" / "eval_loss" / "accuracy" / ... ("eval_" is prepended when missing).
  std::optional<std::string> metric_for_best_model;
  std::optional<bool> greater_is_better;
  /// A checkpoint directory, or "last" (the newest complete checkpoint-N of
  /// output_dir). Trainer::train's argument overrides it.
  std::optional<std::string> resume_from_checkpoint;
  /// Do not skip the batches already seen in the resumed epoch.
  bool ignore_data_skip = false;
  /// Restore stateful callbacks (EarlyStoppingCallback's counter) on resume.
  bool restore_callback_states_from_checkpoint = false;

  // ---- Randomness and precision. ----
  int64_t seed = 42;                 ///< loom::manual_seed at Trainer construction (dropout)
  std::optional<int64_t> data_seed;  ///< the sampler's shuffle; unset: seed
  /// Autocast matmuls and attention to bf16 (loom/autocast.h); weights,
  /// optimizer state and the loss stay f32.
  bool bf16 = false;
  /// Recompute each decoder layer's activations in backward instead of keeping
  /// them (PretrainedModel::gradient_checkpointing_enable, docs/remat.md): the
  /// same losses bit for bit, less activation memory, about one more forward.
  /// Saves memory on a lazy device; on the eager cpu device it changes nothing.
  bool gradient_checkpointing = false;

  // ---- More of transformers' names (docs/cli.md "Hugging Face habits"). ----
  /// transformers' LabelSmoother: with a value > 0 the training loss is
  /// (1 - f) * NLL + f * the mean over classes of -log p, from the logits
  /// (labels shifted for a causal LM), in place of the model's loss, in
  /// training (Trainer::compute_loss; evaluation reports the model's loss). In [0, 1).
  double label_smoothing_factor = 0;
  /// A name for the run (transformers' run_name); written to
  /// training_args.json; validate() sets it to output_dir when unset.
  std::optional<std::string> run_name;
  /// Always true: safetensors is the only format loom writes (validate()
  /// refuses false).
  bool save_safetensors = true;
  /// Compute on the host CPU only (transformers' use_cpu): refuses a device
  /// whose backend is not cpu ("lazy:xla" with use_cpu is an error).
  bool use_cpu = false;
  /// transformers' include_num_input_tokens_seen: count the input_ids of every
  /// training micro-batch (numel, padding included) in
  /// TrainerState::num_input_tokens_seen and add it to every log entry. Data
  /// parallel: each rank's batch counts as this rank's (world_size times).
  bool include_num_input_tokens_seen = false;
  /// transformers' lr_scheduler_kwargs: a JSON object of the schedule's extra
  /// arguments: num_cycles (cosine, cosine_with_restarts), lr_end and power
  /// (polynomial), timescale (inverse_sqrt). validate() refuses other keys
  /// and keys of another schedule, as get_scheduler's TypeError.
  std::string lr_scheduler_kwargs = "{}";

  // ---- loom. ----
  /// Where the model trains: "cpu" (eager) or "lazy" (traced and compiled; a
  /// loom::Device spec such as "cpu:reference" or "lazy:cpu" is accepted).
  /// A parsed value: set("device", text) throws loom::Error
  /// "[TrainingArguments] device: 'x' is not a device ..." for bad text;
  /// validate() checks the backend exists here. JSON and get() write "lazy"
  /// for lazy:cpu:0 (the default lazy device), else Device::str().
  Device device;

  // ---- Several processes (docs/distributed.md). ----
  /// The ProcessGroup backend (loom/dist.h): "mpi", or unset / "auto" for
  /// mpi when launched by mpirun, else one process (transformers' ddp_backend).
  std::optional<std::string> ddp_backend;
  /// Seconds a collective waits for the other ranks before the job fails
  /// (transformers' ddp_timeout, default 1800).
  int64_t ddp_timeout = 1800;
  /// Sharded data parallel (transformers' fsdp; docs/distributed.md): ""
  /// (off: DDP), "shard_grad_op" (ZeRO-2: gradients, AdamW state and master
  /// weights sharded) or "full_shard" (ZeRO-3: the parameters too); HF's
  /// "auto_wrap" may be added (loom always wraps each decoder layer).
  std::string fsdp;
  /// transformers' fsdp_config: a JSON object (text, or a file holding it);
  /// loom reads transformer_layer_cls_to_wrap (default: the model's layer class).
  std::string fsdp_config;

  // ---- By name. ----

  /// Sets the field `name` from its text form: bools accept
  /// true/false/1/0/yes/no/on/off (any case); integers must be whole numbers;
  /// optional fields accept "none"/"null" to unset. A leading "--" on `name`
  /// is ignored. Throws loom::Error "[TrainingArguments] unknown argument 'x'
  /// (did you mean 'y'?)" for an unknown name, and "[TrainingArguments] <name>:
  /// expected <type>, got 'v'" for a value that does not parse. Values are
  /// checked against each other by validate(), not here.
  void set(const std::string& name, const std::string& value);
  /// The text form of a field ("none" for an unset optional); loom::Error for
  /// an unknown name (with a suggestion).
  std::string get(const std::string& name) const;

  /// Reads a JSON object of field names to values (numbers, bools, strings,
  /// null; a list of strings, as transformers writes report_to, is joined
  /// with commas, [] giving "none"); keys not given keep their defaults. Throws loom::Error
  /// "[TrainingArguments] <where>: ..." for malformed JSON or a non-object,
  /// plus set()'s errors (unknown key with a suggestion, bad value).
  static TrainingArguments from_json(const std::string& text, const std::string& where = "<json>");
  /// from_json on a file's text; loom::Error naming the file when unreadable.
  static TrainingArguments from_json_file(const std::string& path);
  /// Every field as a JSON object, keys sorted, two-space indent (the
  /// checkpoint's training_args.json; unset optionals are null).
  std::string to_json() const;

  /// One field's description, for `loom train --help`.
  struct FieldInfo {
    std::string name;
    std::string type;  ///< "bool", "int", "float", "string", "int?", "float?", "string?", "bool?"
    std::string help;
  };
  /// All fields in declaration order.
  static const std::vector<FieldInfo>& fields();
  /// The known field closest to `name` by edit distance, or "" when none is
  /// close (distance > max(2, |name| / 3)).
  static std::string suggest(const std::string& name);

  // ---- Checks and derived values. ----

  /// Fills derived defaults and checks every field and combination (see the
  /// top of this file). Idempotent. Throws loom::Error "[TrainingArguments]
  /// <name>: ..." naming the first bad argument.
  void validate();

  /// Warm-up steps for `num_training_steps`: warmup_steps when >= 1,
  /// ceil(num_training_steps * warmup_steps) when in (0, 1), else
  /// ceil(num_training_steps * warmup_ratio) (transformers' get_warmup_steps).
  int64_t get_warmup_steps(int64_t num_training_steps) const;
  /// The seed of the training sampler: data_seed when set, else seed.
  uint64_t sampler_seed() const { return static_cast<uint64_t>(data_seed ? *data_seed : seed); }
  /// The metric compared for the best model, with "eval_" prepended
  /// ("eval_loss"); empty when metric_for_best_model is unset.
  std::string best_metric_key() const;
  /// Whether report_to names `integration` ("tensorboard"), directly or by "all".
  bool reports_to(const std::string& integration) const;
};

}  // namespace loom
