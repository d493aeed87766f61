// JobArgs: the data and model flags of `loom train` / `loom evaluate`, named
// after transformers' example scripts (run_clm.py, run_mlm.py, run_glue.py:
// ModelArguments and DataTrainingArguments), and parse_job_command(), which
// turns a subcommand's flags (and an optional --config JSON file) into
// JobArgs + TrainingArguments.
//
//   loom train --task causal-lm --model_type gpt2
//       --config_overrides "n_layer=4,n_embd=256,n_head=4,n_positions=128"
//       --tokenizer_name assets/tokenizers/gpt2 --train_file austen.txt
//       --validation_split_percentage 10 --block_size 128 --device lazy
//       --output_dir out --max_steps 300 --eval_strategy steps --eval_steps 100
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "flags.h"
#include "loom/training_args.h"

namespace loom::cli {

struct JobArgs {
  /// "causal-lm" (GPT-2), "masked-lm" or "text-classification" (BERT);
  /// empty: inferred from the model (gpt2 -> causal-lm; bert -> masked-lm,
  /// or text-classification for a *ForSequenceClassification checkpoint).
  std::string task;
  /// A directory with config.json + weights (+ tokenizer files): a
  /// save_pretrained directory or a checkpoint-N of `loom train`.
  std::string model_name_or_path;
  /// Train from scratch: "gpt2" or "bert" (transformers' defaults, then
  /// config_overrides); exclusive with model_name_or_path.
  std::string model_type;
  /// "n_layer=4,n_embd=256": config fields set before the model is built
  /// (transformers' PretrainedConfig.update_from_string).
  std::string config_overrides;
  /// Tokenizer directory; empty: model_name_or_path.
  std::string tokenizer_name;
  std::string train_file;       ///< .txt, .csv, .tsv, .jsonl or .json
  std::string validation_file;  ///< same formats
  /// Without validation_file: the first this-many percent of train_file's
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
  /// LoRA (PEFT's LoraConfig names; loom/lora.h): train adapters on a frozen
  /// base; checkpoints and output_dir hold adapter_config.json +
  /// adapter_model.safetensors. Needs --model_name_or_path and causal-lm.
  bool use_lora = false;
  int64_t lora_r = 8;
  double lora_alpha = 8;  ///< PEFT LoraConfig's default (scaling alpha / r = 1)
  double lora_dropout = 0.0;
  /// Comma-separated suffixes ("q_proj,v_proj") or "all-linear"; empty: PEFT's
  /// default for the model type (llama/qwen2: q_proj,v_proj; gpt2: c_attn).
  std::string lora_target_modules;
  /// With use_lora: output_dir gets the merged weights (W + B A alpha / r) as
  /// a normal checkpoint instead of the adapter.
  bool merge_lora = false;
  /// Hub ids in model_name_or_path / tokenizer_name: the branch, tag or
  /// commit of the cached snapshot (transformers' revision / run_clm's
  /// model_revision; loom/hub.h).
  std::string revision = "main";
  /// run_clm's torch_dtype: the dtype weights are loaded in. loom keeps
  /// weights in float32, so "auto" and "float32" are accepted (a bf16/f16
  /// checkpoint converts to f32); "bfloat16"/"float16" are refused, naming --bf16.
  std::string torch_dtype = "auto";
  /// The PJRT plugin .so for --device lazy:xla (empty: found from
  /// PJRT_DEVICE / LOOM_PJRT_PLUGIN and the pip wheels, docs/backends.md).
  std::string xla_plugin;
  /// A JSON file of flag names to values (all of these and the
  /// TrainingArguments fields); the command line overrides it.
  std::string config;
};

/// The device `loom train` / `loom evaluate` use without --device: the lazy
/// device (traced and compiled), where the library's TrainingArguments keeps
/// transformers'-style eager "cpu".
inline constexpr const char* kCliDefaultDevice = "lazy";
/// TrainingArguments' defaults as the CLI applies them (device kCliDefaultDevice).
TrainingArguments cli_training_defaults();

/// Every JobArgs flag (name, type, help), in the order `--help` lists them.
const std::vector<FlagInfo>& job_flags();

/// Sets the JobArgs field `name` from text; throws loom::Error "[<command>]
/// --<name>: expected <type>, got 'v'" for a value that does not parse, and
/// for a value outside the allowed set (task, model_type, percentages).
void set_job_arg(JobArgs& job, const std::string& name, const std::string& value);

/// A parsed `loom train` / `loom evaluate` command line.
struct JobCommand {
  JobArgs job;
  TrainingArguments training;
  /// Names given on the command line or in --config.
  std::map<std::string, std::string> given;
};

/// The FlagSet of `loom train` / `loom evaluate`: job_flags() then every
/// TrainingArguments field.
FlagSet make_job_flag_set();

/// Builds a JobCommand from `flags` after CLI11 parsed `app`: unknown flags
/// fail (with a suggestion), --config values fill what the command line did
/// not give, every value is set and checked (loom::Error naming the flag).
/// TrainingArguments::validate() is not called here (the Trainer does it).
JobCommand parse_job_command(const FlagSet& flags, const CLI::App& app, const std::string& command);

}  // namespace loom::cli
