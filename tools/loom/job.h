// The work shared by `loom train` and `loom evaluate`: from JobArgs to a
// tokenizer, a model, datasets, a collator and compute_metrics, as
// transformers' run_clm.py / run_mlm.py / run_glue.py set them up, and the
// results files and printed metrics of their ends.
//
// Steps (each throws loom::Error naming the flag or the file at fault):
//   plan_model()    — which task and model: a config from model_name_or_path
//                     or from model_type + config_overrides; no weights yet;
//   load_job_data() — tokenized train / eval datasets for the task;
//   build_model()   — the model (weights loaded, or initialized from seed);
//   prepare_job()   — all of the above plus the Trainer's options.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "job_args.h"
#include "loom/config.h"
#include "loom/dataset.h"
#include "loom/tokenizer.h"
#include "loom/trainer.h"

namespace loom::cli {

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

/// Reads model_name_or_path/config.json (or makes the model_type's default
/// config, sets vocab_size to the tokenizer's and applies config_overrides)
/// and picks the task. Throws loom::Error for neither or both of
/// model_name_or_path / model_type, a task the model cannot do, an unknown
/// or mistyped override key, or a tokenizer larger than the vocabulary.
ModelPlan plan_model(const JobArgs& job, const Tokenizer& tokenizer);

/// Applies "key=value,key=value" to a config's JSON text (transformers'
/// update_from_string): the key must exist in `config_json`; the value is
/// parsed as the existing value's type (int, float, bool, string; a null
/// field takes a number or a string). Throws loom::Error "[config_overrides]
/// ..." naming the key.
std::string apply_config_overrides(const std::string& config_json, const std::string& overrides);

/// Tokenized datasets of a job.
struct JobData {
  /// Null unless asked for. A .txt language-modelling file gives a
  /// data::TokenBlockDataset over its token cache (loom/token_cache.h);
  /// tables give examples in memory.
  std::shared_ptr<const data::Dataset> train;
  std::shared_ptr<const data::Dataset> eval;  ///< null when there is no eval data
  std::vector<std::string> label_names;       ///< classification class names (may be empty)
  int64_t num_labels = 0;                     ///< classification classes
};

/// Loads and tokenizes the job's files for `plan.task`: causal-lm concatenates
/// every line (or text cell) and cuts block_size blocks (run_clm's
/// group_texts); masked-lm the same with special tokens per line and
/// max_seq_length blocks (run_mlm); text-classification one example per row,
/// truncated to max_seq_length (run_glue). Without validation_file and with
/// `want_eval`, the first validation_split_percentage % of train_file's lines
/// or rows become the eval set. Throws loom::Error for a missing file, a
/// table without the named column, a .txt file for classification, a
/// block_size above the model's positions, or no example at all.
JobData load_job_data(const JobArgs& job, const ModelPlan& plan, const Tokenizer& tokenizer,
                      bool want_train, bool want_eval);

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

/// Refuses --merge_lora without --use_lora, and --use_lora without
/// --model_name_or_path (loom::Error "[loom train] ...").
void check_lora_flags(const JobArgs& job);
/// With job.use_lora, `model` wrapped by loom::get_peft_model (LoraConfig
/// from the --lora_* flags; base_model_name_or_path = the pretrained dir);
/// else `model`. When `model` already is an adapter (--model_name_or_path
/// an adapter directory) it trains on with its adapter_config.json; a
/// --lora_r/--lora_alpha/--lora_dropout/--lora_target_modules in `given`
/// (the flags on the command line) with another value throws loom::Error
/// "[loom train] --lora_r 4 differs from the adapter's 8 ...". Throws
/// loom::Error for a task other than causal-lm and what get_peft_model throws.
std::shared_ptr<PretrainedModel> apply_lora(const JobArgs& job,
                                            const std::map<std::string, std::string>& given,
                                            const ModelPlan& plan,
                                            std::shared_ptr<PretrainedModel> model);
/// --merge_lora: merges the adapters of `model` (a PeftModelForCausalLM)
/// into the base weights and writes them to `output_dir` as a normal
/// save_pretrained directory (config.json + model.safetensors + the
/// tokenizer files), removing adapter files there; other contents stay.
void save_merged_lora(PretrainedModel& model, const std::string& output_dir,
                      const std::string& tokenizer_dir);

/// Everything the Trainer needs.
struct PreparedJob {
  ModelPlan plan;
  JobData data;
  std::shared_ptr<PretrainedModel> model;
  TrainerOptions options;
  std::string tokenizer_dir;
};

/// plan_model + load_job_data + build_model, the collator for the task and
/// compute_metrics (perplexity for language models, with
/// prediction_loss_only set unless given; accuracy and F1 for
/// classification). `training` may be adjusted (prediction_loss_only).
PreparedJob prepare_job(const JobCommand& cmd, TrainingArguments& training, bool want_train,
                        bool want_eval);

/// Writes `metrics` to `path` as transformers' save_metrics does (indent 4,
/// keys sorted). Throws loom::Error on an I/O failure.
void write_metrics_json(const std::string& path, const Logs& metrics);
/// Prints transformers' log_metrics block to stdout:
/// "***** eval metrics *****" then "  key = value" lines.
void print_metrics(const std::string& split, const Logs& metrics);

}  // namespace loom::cli
