// FlagSet: registers a table of `--name value` flags on a CLI11 app, reports
// unknown flags with a suggestion, and reads the same names from a JSON file.
// Assumes CLI11 2.x (options with expected(0, 1) record an empty result when
// given without a value) and nlohmann::json.
#include "flags.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/flat_yaml.h"
#include "io/json_parse.h"
#include "loom/error.h"

namespace loom::cli {
namespace {

bool is_bool_type(const std::string& type) { return type == "bool" || type == "bool?"; }

std::string type_name(const std::string& type) {
  std::string t = type;
  bool optional = !t.empty() && t.back() == '?';
  if (optional) t.pop_back();
  for (char& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return optional ? t + "|none" : t;
}

// A JSON value as the text a flag would carry.
std::string json_to_flag_text(const nlohmann::json& v, const std::string& key,
                              const std::string& path) {
  if (v.is_null()) return "none";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    std::ostringstream s;
    s.precision(17);
    s << v.get<double>();
    return s.str();
  }
  if (v.is_array()) {
    // HF writes list fields as lists (report_to: ["tensorboard"], fsdp:
    // ["full_shard", "auto_wrap"]): comma-joined, as TrainingArguments::from_json;
    // [] is "" (report_to: "none", no integration).
    std::string joined;
    for (const nlohmann::json& item : v) {
      LOOM_CHECK(!item.is_array() && !item.is_object(), "[config] ", path, ": ", key,
                 ": expected a list of strings, numbers or bools");
      joined += (joined.empty() ? "" : ",") + json_to_flag_text(item, key, path);
    }
    return joined.empty() && key == "report_to" ? "none" : joined;
  }
  fail("[config] ", path, ": ", key, ": expected a string, number, bool, null or a list of them, ",
       "got ", v.type_name());
}

}  // namespace

void FlagSet::add(const std::vector<FlagInfo>& flags, const std::string& group) {
  for (const FlagInfo& f : flags) {
    LOOM_CHECK(!contains(f.name), "[flags] flag --", f.name, " is defined twice");
    flags_.push_back(f);
    groups_.push_back(group);
  }
}

bool FlagSet::contains(const std::string& name) const {
  return std::any_of(flags_.begin(), flags_.end(),
                     [&](const FlagInfo& f) { return f.name == name; });
}

void FlagSet::add_to(CLI::App& app) {
  app.allow_extras();
  for (size_t i = 0; i < flags_.size(); ++i) {
    const FlagInfo& f = flags_[i];
    CLI::Option* opt = app.add_option("--" + f.name, results_[f.name], f.help);
    opt->group(groups_[i])
        ->type_name(type_name(f.type))
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    if (is_bool_type(f.type)) {
      opt->expected(0, 1);
    } else {
      opt->expected(1);
    }
    // One value per occurrence: in `--output_dir out stray`, "stray" is a
    // stray word (an error), not a second value that would replace "out".
    opt->allow_extra_args(false);
  }
}

void FlagSet::refuse(const std::string& name, const std::string& why) { refused_[name] = why; }

void FlagSet::check_unknown(const CLI::App& app, const std::string& command) const {
  std::vector<std::string> names;
  for (const FlagInfo& f : flags_) names.push_back(f.name);
  const std::vector<std::string> left = app.remaining();
  const std::string config = positional_config(app);
  for (size_t i = 0; i < left.size(); ++i) {
    const std::string& arg = left[i];
    if (arg == config) continue;
    if (arg.rfind("-", 0) == 0) {
      std::string name = arg.substr(std::min(arg.find_first_not_of('-'), arg.size()));
      const size_t eq = name.find('=');
      // Its value: after '=', else the next word (a number may start with '-'),
      // else "true" (a bare boolean flag).
      std::string value = eq == std::string::npos ? "true" : name.substr(eq + 1);
      name = name.substr(0, eq);
      const bool next_is_value =
          eq == std::string::npos && i + 1 < left.size() && left[i + 1] != config &&
          (left[i + 1].rfind("-", 0) != 0 ||
           left[i + 1].find_first_not_of("-0123456789.") == std::string::npos);
      if (next_is_value) value = left[i + 1];
      if (hf_value_asks_nothing(name, value)) {  // `--fp16 false`: asks for nothing
        i += next_is_value ? 1 : 0;
        continue;
      }
      if (auto it = refused_.find(name); it != refused_.end())
        fail("[", command, "] --", name, ": ", it->second);
    }
    fail_unknown_argument(arg, command, names);
  }
}

void fail_unknown_argument(const std::string& arg, const std::string& command,
                           const std::vector<std::string>& known) {
  if (arg.rfind("-", 0) != 0) fail("[", command, "] unexpected argument '", arg, "'");
  std::string name = arg.substr(std::min(arg.find_first_not_of('-'), arg.size()));
  name = name.substr(0, name.find('='));
  if (std::string answer = hf_flag_answer(name); !answer.empty())
    fail("[", command, "] --", name, ": not supported: ", answer);
  std::string hint = closest_name(name, known);
  if (hint.empty()) fail("[", command, "] unknown flag '", arg, "' (see ", command, " --help)");
  fail("[", command, "] unknown flag '", arg, "' (did you mean --", hint, "?)");
}

std::string FlagSet::positional_config(const CLI::App& app) const {
  std::string found;
  for (const std::string& arg : app.remaining())
    if (arg.rfind("-", 0) != 0 && is_config_file(arg)) {
      LOOM_CHECK(found.empty(), "[config] two config files: '", found, "' and '", arg, "'");
      found = arg;
    }
  return found;
}

std::map<std::string, std::string> FlagSet::given() const {
  std::map<std::string, std::string> out;
  for (const FlagInfo& f : flags_) {
    const std::vector<std::string>& r = results_.at(f.name);
    if (r.empty()) continue;
    const std::string& v = r.back();
    out[f.name] = (v.empty() && is_bool_type(f.type)) ? "true" : v;
  }
  return out;
}

std::map<std::string, std::string> FlagSet::read_config(const std::string& path) const {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "[config] ", path, ": cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  if (is_config_file(path)) {
    const bool yaml = !path.ends_with(".json");
    j = yaml ? nlohmann::json::parse(io::parse_flat_yaml(text.str(), "[config] " + path).dump())
             : io::parse_json(text.str(), "[config] " + path);
  } else {
    fail("[config] ", path, ": expected a .json, .yaml or .yml file");
  }
  LOOM_CHECK(j.is_object(), "[config] ", path, ": expected a JSON object of flag names to values");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    // HF's default of a flag loom does not have ("fp16": false, "do_predict":
    // false in an exported training_args.json) asks for nothing.
    if (!contains(key) && (value.is_null() || value.is_primitive()) &&
        hf_value_asks_nothing(key, json_to_flag_text(value, key, path)))
      continue;
    if (std::string answer = hf_flag_answer(key); !answer.empty())
      fail("[config] ", path, ": ", key, ": not supported: ", answer);
    if (auto it = refused_.find(key); it != refused_.end())
      fail("[config] ", path, ": ", key, ": ", it->second);
    if (!contains(key) || key == "config") {
      std::string hint = suggest(key);
      if (hint.empty()) fail("[config] ", path, ": unknown key '", key, "'");
      fail("[config] ", path, ": unknown key '", key, "' (did you mean '", hint, "'?)");
    }
    out[key] = json_to_flag_text(value, key, path);
  }
  return out;
}

bool is_config_file(const std::string& path) {
  return path.ends_with(".json") || path.ends_with(".yaml") || path.ends_with(".yml");
}

std::optional<bool> parse_bool_text(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  return std::nullopt;
}

CLI::Option* add_bool_flag(CLI::App& app, const std::string& name, bool& target,
                           const std::string& help, const std::string& command, bool negate) {
  bool* out = &target;
  CLI::Option* opt = app.add_option(
      name,
      [out, name, command, negate](const CLI::results_t& r) {
        const std::string v = r.empty() ? std::string() : r.back();
        std::optional<bool> b = v.empty() ? std::optional<bool>(true) : parse_bool_text(v);
        if (!b) fail("[", command, "] ", name, ": expected true or false, got '", v, "'");
        *out = negate ? !*b : *b;
        return true;
      },
      help);
  opt->expected(0, 1)->type_name("[BOOL]")->allow_extra_args(false);
  return opt;
}

std::string hf_flag_answer(const std::string& name) {
  static const std::pair<const char*, const char*> kAnswers[] = {
      {"fp16", "loom's mixed precision is bf16 autocast: use --bf16"},
      {"half_precision_backend", "loom's mixed precision is bf16 autocast: use --bf16"},
      {"no_cuda", "the device is --device (lazy, lazy:xla, cpu); --use_cpu keeps it on the cpu"},
      {"tf32", "tf32 is a CUDA matmul mode; loom's cpu kernels compute f32"},
      {"torch_compile",
       "every step's graph is compiled on --device lazy (the default): nothing to "
       "turn on"},
      {"torch_compile_backend", "every step's graph is compiled on --device lazy (the default)"},
      {"torch_compile_mode", "every step's graph is compiled on --device lazy (the default)"},
      {"push_to_hub", "loom does not upload: push output_dir with `hf upload`"},
      {"hub_model_id", "loom does not upload: push output_dir with `hf upload`"},
      {"hub_token", "loom does not upload: push output_dir with `hf upload`"},
      {"cache_dir",
       "loom reads the local Hugging Face cache (HF_HUB_CACHE / HF_HOME) and never "
       "downloads"},
      {"trust_remote_code", "loom builds only its registered model types, never remote code"},
      {"deepspeed", "use --fsdp full_shard (ZeRO-3) or --fsdp shard_grad_op (ZeRO-2)"},
      {"local_rank", "ranks come from mpirun (docs/distributed.md)"},
      {"eval_accumulation_steps",
       "loom keeps an evaluation's predictions until its end (host memory on cpu and lazy); "
       "bound them with --max_eval_samples, or keep none with --prediction_loss_only"},
      {"log_level",
       "loom has no log levels: its warnings always print on stderr, its metrics "
       "on stdout; --disable_tqdm gives plain log lines"},
      {"log_level_replica", "loom has no log levels; under mpirun only rank 0 prints"},
      {"test_file",
       "loom train does not predict (--do_predict is refused); score a labelled "
       "test file with `loom evaluate --validation_file FILE`"},
      // Other fields of TrainingArguments, run_clm's arguments, TRL's and
      // PEFT's: their defaults are accepted (hf_defaults.cpp), other values
      // get these answers.
      {"fp16_full_eval", "loom's mixed precision is bf16 autocast: use --bf16"},
      {"hub_strategy", "loom does not upload: push output_dir with `hf upload`"},
      {"hub_private_repo", "loom does not upload: push output_dir with `hf upload`"},
      {"hub_always_push", "loom does not upload: push output_dir with `hf upload`"},
      {"neftune_noise_alpha", "NEFTune's embedding noise is not implemented in loom"},
      {"group_by_length",
       "not implemented; for sft, --packing or --padding_free removes the padding instead"},
      {"remove_unused_columns",
       "loom reads only the columns the task names (--text_column, --label_column, ...): the "
       "others are always left out"},
      {"dataloader_pin_memory",
       "no pinned memory: batches are staged for the lazy device by its loader (docs/data.md)"},
      {"dataloader_persistent_workers",
       "loom's --dataloader_num_workers are threads, started per epoch at a thread's cost "
       "(no process to keep)"},
      {"dataloader_prefetch_factor", "loom's loader prefetches a fixed two batches per worker"},
      {"full_determinism",
       "loom's runs are deterministic for a --seed already (the same Philox bits on every "
       "device): drop the flag"},
      {"auto_find_batch_size",
       "not implemented: loom checks the step's memory plan before the first step and "
       "refuses a batch that does not fit"},
      {"average_tokens_across_devices",
       "loom always divides a step's loss by the target tokens of the whole step across "
       "ranks (num_items_in_batch): only true"},
      {"optim_args", "loom's optimizers take their arguments as flags (--adam_beta1, ...)"},
      {"use_liger_kernel", "loom's fused kernels are its own (the fused cross-entropy is on)"},
      {"save_on_each_node", "rank 0 writes every checkpoint file (docs/distributed.md)"},
      {"skip_memory_metrics",
       "loom always reports memory: TrainPeakRssBytes in lazy_metrics.json (docs/lazy.md)"},
      {"accelerator_config", "loom does not use Accelerate; ranks come from mpirun"},
      {"preprocessing_num_workers",
       "tokenizing uses every core already (LOOM_NUM_THREADS), and its result is cached"},
      {"overwrite_cache",
       "the token cache is keyed by the file's contents and the tokenizer, so it never "
       "answers for other data (docs/data.md)"},
      {"streaming", "not implemented: loom tokenizes the file once into its token cache"},
      {"low_cpu_mem_usage", "loom loads weights straight into the model's tensors already"},
      {"use_fast_tokenizer", "loom has one tokenizer (tokenizer.json's, the fast one): only true"},
      {"token", "loom never downloads: it reads the local Hugging Face cache"},
      {"line_by_line", "not implemented: masked-lm groups the text into --max_seq_length blocks"},
      {"dataset_num_proc",
       "tokenizing uses every core already (LOOM_NUM_THREADS), and its result is cached"},
      {"use_rslora", "rank-stabilized LoRA is not implemented (the scale is lora_alpha / r)"},
      {"use_dora", "DoRA is not implemented: plain LoRA (--use_lora)"},
      {"modules_to_save", "not implemented: with --use_lora only the adapters train"},
      {"lora_bias", "not implemented: LoRA adapters without biases (PEFT's bias='none')"},
      {"init_lora_weights", "loom initialises LoRA as PEFT's default (B = 0): only true"},
  };
  for (const auto& [flag, answer] : kAnswers)
    if (name == flag) return answer;
  return "";
}

std::string FlagSet::suggest(const std::string& name) const {
  std::vector<std::string> names;
  for (const FlagInfo& f : flags_) names.push_back(f.name);
  return closest_name(name, names);
}

}  // namespace loom::cli
