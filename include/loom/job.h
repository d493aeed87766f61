// The training job as a library call: a task (causal-lm, masked-lm,
// text-classification) applied to rows — files, or rows handed over in
// memory — turned into what the Trainer takes: tokenized datasets, the
// task's collator, the model (pretrained from a directory or hub id, or from
// a model_type + config overrides) with LoRA adapters, and compute_metrics.
// It does what transformers' run_clm.py / run_mlm.py / run_glue.py set up,
// with their argument names (ModelArguments, DataTrainingArguments) and PEFT's
// LoraConfig names; `loom train` / `loom evaluate` are this plus flags.
//
//   loom::JobArguments job;
//   job.model_type = "gpt2";
//   job.config_overrides = "n_layer=2,n_embd=64,n_head=2,n_positions=64";
//   job.tokenizer_name = "assets/tokenizers/gpt2";
//   job.train_rows = loom::DataRows::texts({"first text", "second text", ...});
//   job.block_size = 32;
//   loom::TrainingArguments args;
//   args.output_dir = "out";
//   loom::Job built = loom::build_job(job, args, {.want_eval = false});
//   loom::Trainer trainer(built.model, args, built.data.train, built.data.eval,
//                         built.options);
//   trainer.train();
//
// Every step throws loom::Error naming the argument (as its flag, e.g.
// "[data] --train_file 'x': no such file") or the file and line at fault.
// Assumes the model registry (loom/model_registry.h) knows the model types.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/dataset.h"
#include "loom/pretrained_model.h"
#include "loom/tokenizer.h"
#include "loom/trainer.h"
#include "loom/training_args.h"

namespace loom {

/// Which model (transformers' ModelArguments of run_clm / run_mlm / run_glue).
struct ModelArguments {
  /// A directory with config.json + weights (+ tokenizer files): a
  /// save_pretrained directory, a checkpoint-N of `loom train`, a PEFT
  /// adapter directory, or a hub id resolved in the local Hugging Face cache.
  std::string model_name_or_path;
  /// Train from scratch: a registered model_type ("gpt2", "bert", "llama",
  /// ...; transformers' defaults, then config_overrides); exclusive with
  /// model_name_or_path.
  std::string model_type;
  /// Train from scratch with this config (run_clm's --config_name): a
  /// directory holding config.json, a config.json file, or a hub id in the
  /// local cache; its model_type picks the model, config_overrides apply on
  /// top. Exclusive with model_name_or_path and model_type.
  std::string config_name;
  /// "n_layer=4,n_embd=256": config fields set before the model is built
  /// (transformers' PretrainedConfig.update_from_string).
  std::string config_overrides;
  /// Tokenizer directory or hub id; empty: model_name_or_path.
  std::string tokenizer_name;
  /// Hub ids: the branch, tag or commit of the cached snapshot (loom/hub.h).
  std::string revision = "main";
  /// run_clm's torch_dtype: "auto" or "float32" (loom keeps weights in f32).
  std::string torch_dtype = "auto";
};

/// Rows handed over in memory instead of a file (a Python list, a C++
/// vector): each a text (as a .txt file's lines, without the line-break
/// handling) or the text of one JSON object (as a .jsonl file's rows, with
/// text_column / label_column naming its keys).
struct DataRows {
  enum class Kind { text, json };
  Kind kind = Kind::text;
  std::vector<std::string> rows;
  static DataRows texts(std::vector<std::string> rows) { return {Kind::text, std::move(rows)}; }
  static DataRows json(std::vector<std::string> rows) { return {Kind::json, std::move(rows)}; }
};

/// The data (transformers' DataTrainingArguments of run_clm / run_mlm / run_glue).
struct DataTrainingArguments {
  std::string train_file;       ///< .txt, .csv, .tsv, .jsonl or .json
  std::string validation_file;  ///< same formats
  /// In place of train_file / validation_file (not both): rows in memory.
  std::optional<DataRows> train_rows;
  std::optional<DataRows> validation_rows;
  /// Without validation data: the first this-many percent of the training
  /// lines/rows are held back for evaluation (run_clm's train[:N%]).
  int64_t validation_split_percentage = 5;
  std::string text_column = "text";
  std::string text_pair_column;  ///< second text of pair tasks; empty: none
  std::string label_column = "label";
  /// causal-lm: tokens per block; unset: min(1024, n_positions).
  std::optional<int64_t> block_size;
  /// masked-lm: tokens per block; text-classification: truncation length.
  /// Unset: min(512, max_position_embeddings) for masked-lm, 128 for
  /// classification (run_glue).
  std::optional<int64_t> max_seq_length;
  /// text-classification: pad every batch to max_seq_length (run_glue's
  /// default; one graph on the lazy device); false: pad to the longest.
  bool pad_to_max_length = true;
  int64_t pad_to_multiple_of = 0;  ///< round padded lengths up (0: no rounding)
  bool keep_linebreaks = true;     ///< causal-lm .txt: keep each line's "\n"
  double mlm_probability = 0.15;   ///< masked-lm: share of tokens masked
  /// Keep only the first N training / evaluation examples (after grouping).
  std::optional<int64_t> max_train_samples;
  std::optional<int64_t> max_eval_samples;
};

/// LoRA (PEFT's LoraConfig names; loom/lora.h): train adapters on a frozen
/// base; checkpoints hold adapter_config.json + adapter_model.safetensors.
/// Needs model_name_or_path and causal-lm.
struct LoraArguments {
  bool use_lora = false;
  int64_t lora_r = 8;
  double lora_alpha = 8;  ///< PEFT's default (scaling alpha / r = 1)
  double lora_dropout = 0.0;
  /// Comma-separated suffixes ("q_proj,v_proj") or "all-linear"; empty: PEFT's
  /// default for the model type (llama/qwen2: q_proj,v_proj; gpt2: c_attn).
  std::string lora_target_modules;
  /// output_dir gets the merged weights (W + B A alpha / r) as a normal
  /// checkpoint instead of the adapter (save_merged_lora).
  bool merge_lora = false;
};

/// Supervised fine-tuning, task "sft" (TRL's SFTConfig names; docs/sft.md):
/// rows of .jsonl / .json files in TRL's dataset schemas, tokenized as TRL's
/// SFTTrainer does, one example per row.
struct SftArguments {
  /// Keep the first max_length tokens of each row (TRL's truncation_mode
  /// keep_start); nullopt: no truncation (the model's positions still bound it).
  std::optional<int64_t> max_length = 1024;
  /// Loss on completion tokens only; nullopt: true for prompt-completion rows.
  std::optional<bool> completion_only_loss;
  /// Loss on the chat template's `{% generation %}` tokens only.
  bool assistant_only_loss = false;
  std::string dataset_text_field = "text";  ///< the text key of language-modeling rows
  std::string eos_token;           ///< appended to non-conversational text; empty: the tokenizer's
  std::string chat_template_path;  ///< a .jinja file replacing the tokenizer's template
  /// Pack the examples into rows of max_length tokens (needs max_length):
  /// "bfd" (TRL's best-fit decreasing, padding-free: position ids restart per
  /// sequence, no attention across sequences) or "wrapped" (docs/sft.md).
  bool packing = false;
  std::string packing_strategy = "bfd";
  /// Each batch's examples in one row, position ids restarting per example.
  bool padding_free = false;
  /// A dataset folder or "org/name[@revision]" in the local Hugging Face
  /// cache (TRL's ScriptArguments; loom/hub.h resolve_dataset_dir), in place
  /// of train_file; its split files by datasets' conventions
  /// (dataset_split_files). sft only.
  std::string dataset_name;
  std::string dataset_config;  ///< the config's folder (push_to_hub's layout)
  std::string dataset_train_split = "train";
  /// Evaluated when given no validation_file and the dataset has its files;
  /// else validation_split_percentage of the train split is held back.
  std::string dataset_test_split = "test";
};

/// Everything a job is built from, besides TrainingArguments.
struct JobArguments : ModelArguments, DataTrainingArguments, LoraArguments, SftArguments {
  /// kTaskCausalLM, kTaskMaskedLM, kTaskTextClassification or kTaskSft
  /// (loom/model_registry.h); empty: from the model (gpt2 -> causal-lm;
  /// bert -> masked-lm, or text-classification for a classifier checkpoint).
  std::string task;
};

/// What model a job uses, before any weight is loaded.
struct ModelPlan {
  std::string task;        ///< causal-lm | masked-lm | text-classification
  std::string model_type;  ///< a registered model_type (loom/model_registry.h)
  /// config.json text (overrides applied), parsed by the model type's entry.
  std::string config_json;
  std::string config_where;    ///< the file or flag it came from, for errors
  std::string pretrained_dir;  ///< empty: from scratch
  /// A LoRA adapter directory given as model_name_or_path (its base is
  /// pretrained_dir); the model is the base with the adapter, trainable.
  std::string adapter_dir;
  int64_t max_positions = 0;  ///< n_positions / max_position_embeddings
  /// Class names from a classification checkpoint's id2label (empty when the
  /// names are transformers' placeholders LABEL_i or the model is not one).
  std::vector<std::string> label_names;
  /// A fine-tuned classifier's num_labels (its id2label size); 0 otherwise.
  int64_t num_labels = 0;
};

/// Tokenized datasets of a job.
struct JobData {
  /// Null unless asked for. A .txt language-modelling file gives a
  /// data::TokenBlockDataset over its token cache (loom/token_cache.h);
  /// tables and rows in memory give examples in memory.
  std::shared_ptr<const data::Dataset> train;
  std::shared_ptr<const data::Dataset> eval;  ///< null when there is no eval data
  std::vector<std::string> label_names;       ///< classification class names (may be empty)
  int64_t num_labels = 0;                     ///< classification classes
};

/// A built job: what the Trainer takes.
struct Job {
  ModelPlan plan;
  JobData data;
  std::shared_ptr<PretrainedModel> model;  ///< on the cpu; the Trainer moves it
  /// The task's collator, compute_metrics and tokenizer_dir.
  TrainerOptions options;
  std::string tokenizer_dir;  ///< the tokenizer's directory (hub ids resolved)
};

/// How build_job runs.
struct JobOptions {
  bool want_train = true;  ///< build the training set (and check LoRA / memory)
  bool want_eval = true;   ///< build the evaluation set
  /// Names of the arguments the caller set on purpose (a command line's
  /// flags): training an adapter further refuses a given lora_* that differs
  /// from its adapter_config.json, and a given prediction_loss_only is kept.
  std::set<std::string> given{};
  /// A model already built (Python's `Trainer(model=loom_model)`): used in
  /// place of build_model's, on the plan of model_name_or_path / model_type /
  /// config_name (which should describe it: the datasets are cut to its
  /// positions). Null: build_job builds the model.
  std::shared_ptr<PretrainedModel> model{};
};

/// Resolves hub ids, loads the tokenizer, then plan_model + load_job_data +
/// build_model (+ apply_lora when training), the task's collator and
/// compute_metrics (perplexity for language models, with
/// training.prediction_loss_only set unless given; accuracy and F1 for
/// classification). Throws loom::Error from any step.
Job build_job(const JobArguments& job, TrainingArguments& training, const JobOptions& options = {});

/// Reads model_name_or_path/config.json (or makes the model_type's default
/// config, sets vocab_size to the tokenizer's and applies config_overrides)
/// and picks the task. Throws loom::Error for neither or both of
/// model_name_or_path / model_type, a task the model cannot do, an unknown
/// or mistyped override key, or a tokenizer larger than the vocabulary.
ModelPlan plan_model(const JobArguments& job, const Tokenizer& tokenizer);

/// Applies "key=value,key=value" to a config's JSON text (transformers'
/// update_from_string): the key must exist in `config_json`; the value is
/// parsed as the existing value's type (int, float, bool, string; a null
/// field takes a number or a string). Throws loom::Error "[config_overrides]
/// ..." naming the key.
std::string apply_config_overrides(const std::string& config_json, const std::string& overrides);

/// Loads and tokenizes the job's files or rows for `plan.task`: sft one
/// example per row (load_sft_data, below); causal-lm
/// concatenates every line (or text cell) and cuts block_size blocks
/// (run_clm's group_texts); masked-lm the same with special tokens per line
/// and max_seq_length blocks (run_mlm); text-classification one example per
/// row, truncated to max_seq_length (run_glue). Without validation data and
/// with `want_eval`, the first validation_split_percentage % of the training
/// lines or rows become the eval set. Throws loom::Error for a missing file,
/// a table without the named column, text (a .txt file or text rows) for
/// classification, a block_size above the model's positions, or no example.
JobData load_job_data(const JobArguments& job, const ModelPlan& plan, const Tokenizer& tokenizer,
                      bool want_train, bool want_eval);

/// Task sft: the train / validation .jsonl or .json files (or JSON rows in
/// memory) in TRL's schemas, tokenized as TRL's SFTTrainer (docs/sft.md):
/// input_ids and labels (-100 where the loss is masked), truncated to
/// max_length; prints one line per split with the rows truncated and
/// dropped. The chat template comes from chat_template_path or the tokenizer
/// folder (tokenizer_name, else model_name_or_path). Throws loom::Error
/// "[sft] <file>:<line>: ..." for a row without a known schema, mixed
/// schemas, an unknown role, a template error, and --packing without max_length.
JobData load_sft_data(const JobArguments& job, const ModelPlan& plan, const Tokenizer& tokenizer,
                      bool want_train, bool want_eval);

/// Task sft's padded batch lengths (one compiled graph each on a lazy
/// device): 16, 32, 64, ... below `max_length`, then `max_length` itself;
/// {max_length} when it is 16 or less.
std::vector<int64_t> sft_length_buckets(int64_t max_length);

/// The model for `plan` on the cpu device: pretrained weights (a fresh
/// classification head sized `num_labels` when the checkpoint has none), or
/// initialized from loom's generator seeded with `seed`.
std::shared_ptr<PretrainedModel> build_model(const ModelPlan& plan, const JobData& data,
                                             uint64_t seed);

/// Before a from-scratch model is built for training: its parameters x 4
/// bytes x the copies training keeps (weights, gradients and, for AdamW, two
/// moments: 4; sgd: 2) against the available memory. Throws loom::Error
/// "[loom train] ... more than the N GB of memory available ...".
void check_training_fits(const ModelPlan& plan, const TrainingArguments& args);

/// Refuses, by name, an argument in `given` that the job's task does not read
/// (so none is accepted and ignored): block_size and keep_linebreaks outside
/// causal-lm, mlm_probability outside masked-lm, max_seq_length outside
/// masked-lm and text-classification (on sft: "TRL's old name: --max_length"),
/// pad_to_max_length / label_column / text_pair_column outside
/// text-classification, pad_to_multiple_of outside text-classification and
/// sft, and SFTConfig's arguments (max_length, packing, ...) outside sft; and
/// lora_r / lora_alpha / lora_dropout / lora_target_modules without use_lora.
/// build_job calls it after plan_model, before any data is read. Throws
/// loom::Error "[job] --<name>: read by task ... only; this job's task is ...".
void check_arguments_serve_task(const JobArguments& job, const ModelPlan& plan,
                                const std::set<std::string>& given);

/// Refuses merge_lora without use_lora, and use_lora without
/// model_name_or_path (loom::Error "[loom train] ...").
void check_lora_arguments(const JobArguments& job);
/// With job.use_lora, `model` wrapped by loom::get_peft_model (LoraConfig
/// from the lora_* arguments; base_model_name_or_path = plan.pretrained_dir);
/// else `model`. When `model` already is an adapter it trains on with its
/// adapter_config.json; a lora_r/lora_alpha/lora_dropout/lora_target_modules
/// in `given` with another value throws loom::Error "[loom train] --lora_r 4
/// differs from the adapter's 8 ...". Throws loom::Error for a task other
/// than causal-lm and what get_peft_model throws.
std::shared_ptr<PretrainedModel> apply_lora(const JobArguments& job,
                                            const std::set<std::string>& given,
                                            const ModelPlan& plan,
                                            std::shared_ptr<PretrainedModel> model);
/// merge_lora: merges the adapters of `model` (a PeftModelForCausalLM) into
/// the base weights and writes them to `output_dir` as a save_pretrained
/// directory (config.json + model.safetensors + the tokenizer files of
/// `tokenizer_dir`), removing adapter files there; other contents stay.
void save_merged_lora(PretrainedModel& model, const std::string& output_dir,
                      const std::string& tokenizer_dir);

/// The model state's memory per rank, in bytes (f32), in the TrainingArguments'
/// fsdp mode over the ranks of the process group (loom/dist.h).
struct JobMemory {
  std::string mode;  ///< "ddp", "shard_grad_op" or "full_shard"
  double params = 0, params_at_rest = 0, grads = 0, optimizer = 0;
  double total() const { return params + grads + optimizer; }
};
/// The memory of `job`'s model state per rank with `args` (its fsdp, optim
/// and device: off a lazy device, full_shard keeps gathered copies whole).
JobMemory job_memory_per_rank(const Job& job, const TrainingArguments& args);
/// Every rank, before the Trainer allocates the optimizer state: the state
/// (the built model's f32 weights already count) must fit in the memory this
/// process may still take (the cgroup limit included). Nothing to check on
/// a device whose backend holds the memory (loom/device_traits.h: plans_memory).
/// Throws loom::Error "[loom train] memory per rank (ddp): the model's state
/// needs ..., but this rank has ...", naming --fsdp full_shard when that fits.
void check_job_memory(const Job& job, const TrainingArguments& args);

}  // namespace loom
