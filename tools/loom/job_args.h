// JobArgs: the data and model flags of `loom train` / `loom evaluate`: the
// library's JobArguments (loom/job.h, named after transformers' example
// scripts run_clm.py, run_mlm.py, run_glue.py: ModelArguments and
// DataTrainingArguments) plus --xla_plugin and --config; and parse_job_command(), which
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
#include "loom/job.h"
#include "loom/training_args.h"

namespace loom::cli {

/// The job's arguments (loom/job.h: ModelArguments, DataTrainingArguments,
/// LoraArguments and the task, with transformers' and PEFT's names, which are
/// the flag names) plus two that only the command line has.
struct JobArgs : JobArguments {
  /// The PJRT plugin .so for --device lazy:xla (empty: found from
  /// PJRT_DEVICE / LOOM_PJRT_PLUGIN and the pip wheels, docs/backends.md).
  std::string xla_plugin;
  /// A JSON file of flag names to values (all of these and the
  /// TrainingArguments fields); the command line overrides it.
  std::string config;
  /// `loom train`: transformers' EarlyStoppingCallback(patience, threshold)
  /// is added when set (HF's rules: metric_for_best_model and an
  /// eval_strategy are required).
  std::optional<int64_t> early_stopping_patience;
  double early_stopping_threshold = 0.0;
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

/// The FlagSet of `command` ("loom train" or "loom evaluate"): job_flags()
/// then every TrainingArguments field; for evaluate without the flags that
/// only training uses (--use_lora, --model_type, --learning_rate, ...), which
/// are refused there by name.
FlagSet make_job_flag_set(const std::string& command);

/// Builds a JobCommand from `flags` after CLI11 parsed `app`: unknown flags
/// fail (with a suggestion), --config values fill what the command line did
/// not give, every value is set and checked (loom::Error naming the flag).
/// TrainingArguments::validate() is not called here (the Trainer does it).
JobCommand parse_job_command(const FlagSet& flags, const CLI::App& app, const std::string& command);

/// Prints one "loom: note:" line on stderr per transformers 4 name given in
/// `cmd` that transformers 5 removed (warmup_ratio, logging_dir,
/// overwrite_output_dir, save_safetensors), saying what it is there.
void note_retired_names(const JobCommand& cmd);

}  // namespace loom::cli
