// JobArgs: the table of data/model flags (name, type, help, member) that
// drives `--help`, setting a field from text, and parse_job_command(), which
// merges the command line, a --config JSON file and TrainingArguments.
// Assumes TrainingArguments::set() parses its own fields (training_args.cpp).
#include "job_args.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <variant>

#include "core/parse_number.h"
#include "loom/error.h"
#include "loom/model_registry.h"
#include "loom/xla_plugin.h"

namespace loom::cli {
namespace {

using Member =
    std::variant<std::string JobArgs::*, int64_t JobArgs::*, double JobArgs::*, bool JobArgs::*,
                 std::optional<int64_t> JobArgs::*, std::optional<bool> JobArgs::*>;

struct JobField {
  FlagInfo info;
  Member member;
};

const std::vector<JobField>& job_table() {
  static const std::vector<JobField> table = {
      {{"config", "string", "JSON file of flag names to values; the command line overrides it."},
       &JobArgs::config},
      {{"task", "string",
        "causal-lm (" + model_types_for_task(kTaskCausalLM) + "), masked-lm (" +
            model_types_for_task(kTaskMaskedLM) + ") or text-classification (" +
            model_types_for_task(kTaskTextClassification) + "), or sft (" +
            model_types_for_task(kTaskCausalLM) +
            ": TRL's SFTTrainer data, docs/sft.md); "
            "default: from the model."},
       &JobArgs::task},
      {{"model_name_or_path", "string",
        "Directory with config.json and weights (save_pretrained output or a checkpoint), a PEFT "
        "adapter directory, or a hub id in the local Hugging Face cache (see --revision)."},
       &JobArgs::model_name_or_path},
      {{"model_type", "string",
        "Train from scratch: " + model_type_names() + " (transformers' defaults)."},
       &JobArgs::model_type},
      {{"config_name", "string",
        "Train from scratch with this config: a directory with config.json, a config.json "
        "file or a hub id (run_clm's --config_name; --config_overrides apply on top)."},
       &JobArgs::config_name},
      {{"revision", "string",
        "Hub ids: the branch, tag or commit of the snapshot in the local Hugging Face cache."},
       &JobArgs::revision},
      {{"model_revision", "string", "run_clm's name for --revision."}, &JobArgs::revision},
      {{"torch_dtype", "string",
        "auto or float32 (loom keeps weights in float32; --bf16 autocasts matmuls)."},
       &JobArgs::torch_dtype},
      {{"config_overrides", "string",
        "With --model_type: config fields to set, e.g. \"n_layer=4,n_embd=256,n_head=4\"."},
       &JobArgs::config_overrides},
      {{"tokenizer_name", "string", "Tokenizer directory (default: --model_name_or_path)."},
       &JobArgs::tokenizer_name},
      {{"train_file", "string", "Training data: .txt, .csv, .tsv, .jsonl or .json."},
       &JobArgs::train_file},
      {{"validation_file", "string", "Evaluation data, same formats."}, &JobArgs::validation_file},
      {{"validation_split_percentage", "int",
        "Without --validation_file: the first N% of train_file's lines/rows are held back."},
       &JobArgs::validation_split_percentage},
      {{"text_column", "string", "Text column of .csv/.tsv/.jsonl files."}, &JobArgs::text_column},
      {{"text_pair_column", "string", "Second text column for pair classification."},
       &JobArgs::text_pair_column},
      {{"label_column", "string", "Label column (text-classification)."}, &JobArgs::label_column},
      {{"block_size", "int?", "causal-lm: tokens per block (default min(1024, n_positions))."},
       &JobArgs::block_size},
      {{"max_seq_length", "int?",
        "masked-lm: tokens per block; text-classification: truncation length (default 128)."},
       &JobArgs::max_seq_length},
      {{"pad_to_max_length", "bool",
        "text-classification: pad every batch to max_seq_length (one graph on lazy)."},
       &JobArgs::pad_to_max_length},
      {{"pad_to_multiple_of", "int", "Round padded lengths up to a multiple of this (0: no)."},
       &JobArgs::pad_to_multiple_of},
      {{"keep_linebreaks", "bool", "causal-lm .txt files: keep each line's line break."},
       &JobArgs::keep_linebreaks},
      {{"mlm_probability", "float", "masked-lm: share of tokens chosen for masking."},
       &JobArgs::mlm_probability},
      {{"max_train_samples", "int?", "Keep only the first N training examples."},
       &JobArgs::max_train_samples},
      {{"max_eval_samples", "int?", "Keep only the first N evaluation examples."},
       &JobArgs::max_eval_samples},
      {{"max_length", "int?",
        "sft: keep the first N tokens of each row (TRL's keep_start; none: no truncation)."},
       &JobArgs::max_length},
      {{"completion_only_loss", "bool?",
        "sft: loss on completion tokens only (none: true for prompt-completion rows)."},
       &JobArgs::completion_only_loss},
      {{"assistant_only_loss", "bool",
        "sft: loss on the chat template's {% generation %} tokens only."},
       &JobArgs::assistant_only_loss},
      {{"dataset_text_field", "string", "sft: the text key of language-modeling rows."},
       &JobArgs::dataset_text_field},
      {{"eos_token", "string",
        "sft: token appended to non-conversational text (default: the tokenizer's EOS)."},
       &JobArgs::eos_token},
      {{"chat_template_path", "string", "sft: a .jinja chat template replacing the tokenizer's."},
       &JobArgs::chat_template_path},
      {{"packing", "bool",
        "sft: pack the examples into rows of max_length tokens (padding-free with bfd)."},
       &JobArgs::packing},
      {{"packing_strategy", "string",
        "sft: bfd (TRL's best-fit decreasing, no cross-sequence attention) or wrapped."},
       &JobArgs::packing_strategy},
      {{"padding_free", "bool",
        "sft: each batch's sequences in one row, position ids restarting per sequence."},
       &JobArgs::padding_free},
      {{"dataset_name", "string",
        "sft: a dataset folder or hub dataset id org/name[@revision] in the local Hugging Face "
        "cache, in place of --train_file."},
       &JobArgs::dataset_name},
      {{"dataset_config", "string", "sft: --dataset_name's config (its folder)."},
       &JobArgs::dataset_config},
      {{"dataset_config_name", "string", "run_clm's name for --dataset_config."},
       &JobArgs::dataset_config},
      {{"dataset_train_split", "string", "sft: --dataset_name's training split (default train)."},
       &JobArgs::dataset_train_split},
      {{"dataset_test_split", "string",
        "sft: --dataset_name's evaluation split (default test; when absent, "
        "--validation_split_percentage is held back)."},
       &JobArgs::dataset_test_split},
      {{"use_lora", "bool", "Train LoRA adapters on the frozen model (PEFT's format)."},
       &JobArgs::use_lora},
      {{"use_peft", "bool", "TRL's name (ModelConfig) for --use_lora."}, &JobArgs::use_lora},
      {{"lora_r", "int", "LoRA rank r."}, &JobArgs::lora_r},
      {{"lora_alpha", "float", "LoRA alpha; the update is scaled by alpha / r."},
       &JobArgs::lora_alpha},
      {{"lora_dropout", "float", "Dropout on the LoRA adapters' input."}, &JobArgs::lora_dropout},
      {{"lora_target_modules", "string",
        "Comma-separated module-name suffixes (q_proj,v_proj) or all-linear; default: PEFT's "
        "for the model type."},
       &JobArgs::lora_target_modules},
      {{"merge_lora", "bool",
        "With --use_lora: save merged full weights (W + B A alpha / r) to output_dir."},
       &JobArgs::merge_lora},
      {{"early_stopping_patience", "int?",
        "Stop after this many evaluations without improvement of metric_for_best_model "
        "(transformers' EarlyStoppingCallback; needs an eval_strategy)."},
       &JobArgs::early_stopping_patience},
      {{"early_stopping_threshold", "float",
        "With --early_stopping_patience: how much the metric must improve to count."},
       &JobArgs::early_stopping_threshold},
      {{"xla_plugin", "string",
        "PJRT plugin .so for --device lazy:xla (default: PJRT_DEVICE's pip wheel)."},
       &JobArgs::xla_plugin},
  };
  return table;
}

bool is_none(const std::string& s) { return s == "none" || s == "None" || s == "null"; }

// Values a field may take beyond its type.
void check_allowed(const std::string& name, const JobArgs& job) {
  if (name == "task") {
    const std::string& t = job.task;
    LOOM_CHECK(t.empty() || t == "causal-lm" || t == "masked-lm" || t == "text-classification" ||
                   t == kTaskSft,
               "--task: expected causal-lm, masked-lm, text-classification or sft, got '", t, "'");
  } else if (name == "model_type") {
    bool known = job.model_type.empty();
    for (const ModelTypeEntry& e : model_types()) known = known || e.model_type == job.model_type;
    LOOM_CHECK(known, "--model_type: expected one of ", model_type_names(), ", got '",
               job.model_type, "'");
  } else if (name == "torch_dtype") {
    const std::string& d = job.torch_dtype;
    LOOM_CHECK(d != "bfloat16" && d != "float16" && d != "half", "--torch_dtype ", d,
               ": not supported: loom keeps weights in float32 (use --bf16 ",
               "for bf16 autocast of matmuls and attention)");
    LOOM_CHECK(d == "auto" || d == "float32", "--torch_dtype: expected auto or float32, got '", d,
               "'");
  } else if (name == "validation_split_percentage") {
    int64_t p = job.validation_split_percentage;
    LOOM_CHECK(p >= 0 && p < 100, "--validation_split_percentage: expected 0..99, got ", p);
  } else if (name == "lora_r") {
    LOOM_CHECK(job.lora_r >= 1, "--lora_r: expected an integer >= 1, got ", job.lora_r);
  } else if (name == "lora_alpha") {
    LOOM_CHECK(job.lora_alpha > 0, "--lora_alpha: expected a value > 0, got ", job.lora_alpha);
  } else if (name == "lora_dropout") {
    double p = job.lora_dropout;
    LOOM_CHECK(p >= 0 && p < 1, "--lora_dropout: expected a value in [0, 1), got ", p);
  } else if (name == "mlm_probability") {
    double p = job.mlm_probability;
    LOOM_CHECK(p > 0 && p < 1, "--mlm_probability: expected a value in (0, 1), got ", p);
  } else if (name == "early_stopping_patience") {
    LOOM_CHECK(!job.early_stopping_patience || *job.early_stopping_patience >= 1,
               "--early_stopping_patience: expected an integer >= 1, got ",
               *job.early_stopping_patience);
  } else if (name == "early_stopping_threshold") {
    LOOM_CHECK(job.early_stopping_threshold >= 0, "--early_stopping_threshold: expected >= 0, got ",
               job.early_stopping_threshold);
  } else if (name == "pad_to_multiple_of") {
    LOOM_CHECK(job.pad_to_multiple_of >= 0, "--pad_to_multiple_of: expected >= 0, got ",
               job.pad_to_multiple_of);
  } else if (name == "packing_strategy") {
    const std::string& p = job.packing_strategy;
    LOOM_CHECK(p == "bfd" || p == "wrapped", "--packing_strategy: expected bfd or wrapped, got '",
               p, "'");
  } else if (name == "block_size" || name == "max_length" || name == "max_seq_length" ||
             name == "max_train_samples" || name == "max_eval_samples") {
    const auto& v = name == "block_size"          ? job.block_size
                    : name == "max_length"        ? job.max_length
                    : name == "max_seq_length"    ? job.max_seq_length
                    : name == "max_train_samples" ? job.max_train_samples
                                                  : job.max_eval_samples;
    LOOM_CHECK(!v || *v > 0, "--", name, ": expected a positive integer, got ", *v);
  }
}

struct Setter {
  JobArgs& job;
  const std::string& name;
  const std::string& value;
  [[noreturn]] void bad(const char* type) const {
    fail("--", name, ": expected ", type, ", got '", value, "'");
  }
  void operator()(std::string JobArgs::*m) const { job.*m = value; }
  // Decimal only (core/parse_number.h): "0x10" and int64 overflow are errors.
  int64_t integer() const {
    NumberError why = NumberError::kNone;
    std::optional<int64_t> v = parse_decimal_int(value, &why);
    if (!v) bad(int_expectation(why));
    return *v;
  }
  void operator()(int64_t JobArgs::*m) const { job.*m = integer(); }
  void operator()(double JobArgs::*m) const {
    NumberError why = NumberError::kNone;
    std::optional<double> v = parse_decimal_double(value, &why);
    if (!v) bad(double_expectation(why));
    job.*m = *v;
  }
  void operator()(bool JobArgs::*m) const {
    auto v = parse_bool_text(value);
    if (!v) bad("true or false");
    job.*m = *v;
  }
  void operator()(std::optional<bool> JobArgs::*m) const {
    if (is_none(value)) {
      (job.*m).reset();
      return;
    }
    auto v = parse_bool_text(value);
    if (!v) bad("true, false or none");
    job.*m = *v;
  }
  void operator()(std::optional<int64_t> JobArgs::*m) const {
    if (is_none(value)) {
      (job.*m).reset();
      return;
    }
    job.*m = integer();
  }
};

// A field's default as `--help` shows it ("none" for an unset optional).
struct DefaultText {
  const JobArgs& job;
  std::string operator()(std::string JobArgs::*m) const { return job.*m; }
  std::string operator()(int64_t JobArgs::*m) const { return std::to_string(job.*m); }
  std::string operator()(double JobArgs::*m) const {
    std::string s = std::to_string(job.*m);  // "0.150000" -> "0.15"
    while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.')) {
      const bool dot = s.back() == '.';
      s.pop_back();
      if (dot) break;
    }
    return s;
  }
  std::string operator()(bool JobArgs::*m) const { return job.*m ? "true" : "false"; }
  std::string operator()(std::optional<int64_t> JobArgs::*m) const {
    return job.*m ? std::to_string(*(job.*m)) : "none";
  }
  std::string operator()(std::optional<bool> JobArgs::*m) const {
    return job.*m ? (*(job.*m) ? "true" : "false") : "none";
  }
};

std::string with_default(const std::string& help, const std::string& value) {
  return help + " [default: " + (value.empty() ? "\"\"" : value) + "]";
}

}  // namespace

const std::vector<FlagInfo>& job_flags() {
  static const std::vector<FlagInfo> infos = [] {
    std::vector<FlagInfo> out;
    for (const JobField& f : job_table()) out.push_back(f.info);
    return out;
  }();
  return infos;
}

void set_job_arg(JobArgs& job, const std::string& name, const std::string& value) {
  auto it = std::find_if(job_table().begin(), job_table().end(),
                         [&](const JobField& f) { return f.info.name == name; });
  LOOM_CHECK(it != job_table().end(), "unknown flag --", name);
  std::visit(Setter{job, name, value}, it->member);
  check_allowed(name, job);
}

TrainingArguments cli_training_defaults() {
  TrainingArguments args;
  args.device = kCliDefaultDevice;
  return args;
}

namespace {

// The flags of `loom train` that mean nothing to `loom evaluate` (it builds
// no untrained model, adds no adapter, takes no optimizer step, logs no
// steps and saves no checkpoint), with why, as evaluate's error says it.
const std::map<std::string, std::string>& train_only_flags() {
  static const std::map<std::string, std::string> table = [] {
    const std::string trains = "a `loom train` flag: loom evaluate does not train";
    const std::string untrained =
        "loom evaluate needs trained weights: give --model_name_or_path DIR (this flag builds an "
        "untrained model)";
    const std::string lora =
        "a `loom train` flag: to evaluate a LoRA adapter give its directory as "
        "--model_name_or_path";
    std::map<std::string, std::string> t;
    for (const char* n : {"model_type", "config_name", "config_overrides"}) t[n] = untrained;
    for (const char* n : {"use_lora", "use_peft", "lora_r", "lora_alpha", "lora_dropout",
                          "lora_target_modules", "merge_lora"})
      t[n] = lora;
    // clang-format off
    static const char* const kTrainOnly[] = {
      "max_train_samples", "early_stopping_patience", "early_stopping_threshold",
      "overwrite_output_dir", "per_device_train_batch_size", "gradient_accumulation_steps",
      "ddp_bucket_cap_mb", "optim", "learning_rate", "weight_decay", "adam_beta1", "adam_beta2",
      "adam_epsilon", "max_grad_norm", "num_train_epochs", "max_steps", "lr_scheduler_type",
      "lr_scheduler_kwargs", "warmup_steps", "warmup_ratio", "logging_strategy", "logging_steps",
      "logging_first_step", "logging_nan_inf_filter", "eval_strategy", "eval_steps",
      "eval_delay", "eval_on_start", "save_strategy", "save_steps", "save_total_limit",
      "save_only_model", "save_safetensors", "load_best_model_at_end", "metric_for_best_model",
      "greater_is_better", "resume_from_checkpoint", "ignore_data_skip",
      "restore_callback_states_from_checkpoint", "gradient_checkpointing",
      "include_num_input_tokens_seen", "run_name"};
    // clang-format on
    for (const char* n : kTrainOnly) t[n] = trains;
    for (const char* n : {"do_train", "do_eval"})
      t[n] = "loom evaluate always evaluates and never trains (see loom train --do_train false)";
    return t;
  }();
  return table;
}

}  // namespace

// run_glue's --do_predict (predictions of a --test_file): neither command
// writes predictions, so both refuse it by name.
constexpr const char* kNoPredict =
    "not supported: loom writes no predictions (run_glue's --test_file); score a labelled test "
    "file with `loom evaluate --validation_file FILE` (eval_results.json)";

FlagSet make_job_flag_set(const std::string& command) {
  const bool evaluate = command == "loom evaluate";
  const auto shown = [&](const std::string& name) {
    return name != "do_predict" && (!evaluate || !train_only_flags().count(name));
  };
  FlagSet flags;
  std::vector<FlagInfo> job;
  const JobArgs job_defaults;
  for (const JobField& f : job_table())
    if (shown(f.info.name))
      job.push_back({f.info.name, f.info.type,
                     with_default(f.info.help, std::visit(DefaultText{job_defaults}, f.member))});
  flags.add(job, "Data and model");
  std::vector<FlagInfo> training;
  const TrainingArguments defaults = cli_training_defaults();
  for (const auto& f : TrainingArguments::fields())
    if (shown(f.name))
      training.push_back({f.name, f.type, with_default(f.help, defaults.get(f.name))});
  flags.add(training, "TrainingArguments");
  if (evaluate)
    for (const auto& [name, why] : train_only_flags()) flags.refuse(name, why);
  flags.refuse("do_predict", kNoPredict);
  return flags;
}

void note_retired_names(const JobCommand& cmd) {
  // transformers 5 removed these TrainingArguments fields (warmup_ratio and
  // logging_dir in 5.15; overwrite_output_dir and save_safetensors in 5.0);
  // loom keeps reading them, and says what each is in transformers 5.
  static const std::pair<const char*, const char*> kRetired[] = {
      {"warmup_ratio",
       "transformers 5 takes a ratio as --warmup_steps (a value below 1 is a share of all "
       "steps); loom reads --warmup_ratio R as --warmup_steps R when --warmup_steps is 0"},
      {"logging_dir",
       "transformers 5 sets TensorBoard's folder from the environment; loom writes its "
       "event files to --logging_dir as before"},
      {"overwrite_output_dir",
       "transformers 5 never refuses an output_dir that holds checkpoints; loom does unless "
       "--overwrite_output_dir (start over) or --resume_from_checkpoint is given"},
      {"save_safetensors",
       "transformers 5 always writes safetensors, and so does loom (only true is accepted)"},
  };
  for (const auto& [name, what] : kRetired)
    if (cmd.given.count(name))
      std::fprintf(stderr,
                   "loom: note: --%s is a transformers 4 name, removed in transformers 5: %s\n",
                   name, what);
}

JobCommand parse_job_command(const FlagSet& flags, const CLI::App& app,
                             const std::string& command) {
  flags.check_unknown(app, command);
  JobCommand cmd;
  cmd.training = cli_training_defaults();  // --device lazy
  cmd.given = flags.given();
  // `loom train args.json` (run_clm's `python run_clm.py args.json`) or
  // `--config args.yaml`: the file fills only what the command line left out.
  const std::string positional = flags.positional_config(app);
  auto config = cmd.given.find("config");
  LOOM_CHECK(positional.empty() || config == cmd.given.end(), "[", command, "] two config files: '",
             positional, "' and --config '", config == cmd.given.end() ? "" : config->second, "'");
  const std::string config_path =
      positional.empty() && config != cmd.given.end() ? config->second : positional;
  if (!config_path.empty()) {
    for (auto& [k, v] : flags.read_config(config_path)) cmd.given.emplace(k, v);
    cmd.given.erase("config");
  }
  const std::vector<FlagInfo>& job = job_flags();
  for (const auto& [name, value] : cmd.given) {
    const std::string& flag = name;  // clang < 16 (fuzz/) cannot capture a structured binding
    bool is_job =
        std::any_of(job.begin(), job.end(), [&](const auto& f) { return f.name == flag; });
    if (!is_job) {
      cmd.training.set(name, value);  // "[TrainingArguments] <name>: ..." on a bad value
      continue;
    }
    try {
      set_job_arg(cmd.job, name, value);
    } catch (const Error& e) {
      fail("[", command, "] ", e.what());
    }
  }
  // Before anything names a device: the xla backend loads its plugin on first use.
  if (!cmd.job.xla_plugin.empty()) backends::xla::set_pjrt_plugin_path(cmd.job.xla_plugin);
  return cmd;
}

}  // namespace loom::cli
