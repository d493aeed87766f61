// TrainingArguments: the field table (name, member, help) that drives set/get
// by name, JSON in and out and `fields()`, plus validate() — transformers'
// TrainingArguments.__post_init__ / _validate_args checks, each error naming
// the argument. Assumes nlohmann::json for JSON text.
#include "loom/training_args.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <variant>

#include <nlohmann/json.hpp>

#include "core/edit_distance.h"
#include "core/parse_number.h"
#include "io/json_parse.h"
#include "loom/device.h"
#include "loom/error.h"
#include "loom/optim.h"

namespace loom {
namespace {

using TA = TrainingArguments;
using Member = std::variant<bool TA::*, int64_t TA::*, double TA::*, std::string TA::*,
                            Device TA::*, std::optional<bool> TA::*, std::optional<int64_t> TA::*,
                            std::optional<double> TA::*, std::optional<std::string> TA::*>;

struct Field {
  const char* name;
  Member member;
  const char* help;
};

// Declaration order of include/loom/training_args.h.
const std::vector<Field>& field_table() {
  static const std::vector<Field> table = {
      {"output_dir", &TA::output_dir, "Directory for checkpoints and final files."},
      {"overwrite_output_dir", &TA::overwrite_output_dir,
       "Start over in an output_dir that holds checkpoints (removes them)."},
      {"do_train", &TA::do_train, "Run training."},
      {"do_eval", &TA::do_eval, "Run evaluation."},
      {"do_predict", &TA::do_predict, "Run prediction on the test set."},
      {"per_device_train_batch_size", &TA::per_device_train_batch_size, "Training batch size."},
      {"per_device_eval_batch_size", &TA::per_device_eval_batch_size, "Evaluation batch size."},
      {"gradient_accumulation_steps", &TA::gradient_accumulation_steps,
       "Micro-batches accumulated per optimizer step."},
      {"dataloader_drop_last", &TA::dataloader_drop_last, "Drop the last incomplete batch."},
      {"dataloader_num_workers", &TA::dataloader_num_workers,
       "Worker threads preparing batches (0: on the training thread)."},
      {"ddp_bucket_cap_mb", &TA::ddp_bucket_cap_mb,
       "Data parallel: MiB of gradients per all-reduce bucket (reverse parameter order)."},
      {"optim", &TA::optim, "Optimizer: adamw_torch, adamw_torch_fused or sgd."},
      {"learning_rate", &TA::learning_rate, "Initial learning rate."},
      {"weight_decay", &TA::weight_decay, "Weight decay (not on biases and norms)."},
      {"adam_beta1", &TA::adam_beta1, "AdamW beta1."},
      {"adam_beta2", &TA::adam_beta2, "AdamW beta2."},
      {"adam_epsilon", &TA::adam_epsilon, "AdamW epsilon."},
      {"max_grad_norm", &TA::max_grad_norm, "Gradient clipping norm (<= 0: no clipping)."},
      {"num_train_epochs", &TA::num_train_epochs, "Training epochs (may be fractional)."},
      {"max_steps", &TA::max_steps, "Optimizer steps; overrides num_train_epochs when > 0."},
      {"lr_scheduler_type", &TA::lr_scheduler_type,
       "linear, cosine, cosine_with_restarts, polynomial, constant, constant_with_warmup, "
       "inverse_sqrt."},
      {"warmup_steps", &TA::warmup_steps, "Warm-up steps (>= 1) or ratio of all steps (< 1)."},
      {"warmup_ratio", &TA::warmup_ratio, "Warm-up ratio of all steps, when warmup_steps is 0."},
      {"logging_strategy", &TA::logging_strategy, "When to log: no, steps, epoch."},
      {"logging_steps", &TA::logging_steps, "Log every N steps (< 1: ratio of all steps)."},
      {"logging_first_step", &TA::logging_first_step, "Also log the first step."},
      {"logging_nan_inf_filter", &TA::logging_nan_inf_filter,
       "Replace NaN/inf step losses by the running mean when logging (cpu)."},
      {"disable_tqdm", &TA::disable_tqdm,
       "Plain log lines instead of a progress bar (default: bar on a terminal)."},
      {"report_to", &TA::report_to,
       "Report the run to: tensorboard, all (= tensorboard) or none (comma-separated)."},
      {"logging_dir", &TA::logging_dir,
       "TensorBoard log directory (default: output_dir/runs/<date>_<host>)."},
      {"eval_strategy", &TA::eval_strategy, "When to evaluate: no, steps, epoch."},
      {"eval_steps", &TA::eval_steps, "Evaluate every N steps (default: logging_steps)."},
      {"eval_delay", &TA::eval_delay, "No evaluation before this many steps/epochs."},
      {"eval_on_start", &TA::eval_on_start, "Evaluate before the first step."},
      {"prediction_loss_only", &TA::prediction_loss_only,
       "Evaluate the loss only; do not gather predictions."},
      {"save_strategy", &TA::save_strategy, "When to save a checkpoint: no, steps, epoch, best."},
      {"save_steps", &TA::save_steps, "Save every N steps (< 1: ratio of all steps)."},
      {"save_total_limit", &TA::save_total_limit,
       "Keep at most N checkpoints (the newest and the best are kept)."},
      {"save_only_model", &TA::save_only_model,
       "Checkpoints without optimizer/scheduler/RNG state (not resumable)."},
      {"load_best_model_at_end", &TA::load_best_model_at_end,
       "Load the best checkpoint when training ends."},
      {"metric_for_best_model", &TA::metric_for_best_model,
       "Metric that selects the best model (default: loss)."},
      {"greater_is_better", &TA::greater_is_better,
       "Whether a larger metric is better (default: unless it ends in 'loss')."},
      {"resume_from_checkpoint", &TA::resume_from_checkpoint,
       "Checkpoint directory to resume from, or 'last'."},
      {"ignore_data_skip", &TA::ignore_data_skip,
       "On resume, do not skip the batches already seen in the epoch."},
      {"restore_callback_states_from_checkpoint", &TA::restore_callback_states_from_checkpoint,
       "Restore stateful callbacks (early stopping) on resume."},
      {"seed", &TA::seed, "Random seed (dropout, initialization)."},
      {"data_seed", &TA::data_seed, "Seed of the data shuffle (default: seed)."},
      {"bf16", &TA::bf16, "bf16 autocast for matmuls and attention."},
      {"label_smoothing_factor", &TA::label_smoothing_factor,
       "Label smoothing of the training loss, in [0, 1) (transformers' LabelSmoother)."},
      {"run_name", &TA::run_name,
       "A name for the run, kept in training_args.json (default: output_dir)."},
      {"save_safetensors", &TA::save_safetensors,
       "Must stay true: safetensors is the only format loom writes."},
      {"use_cpu", &TA::use_cpu, "Compute on the host CPU only (refuses a non-cpu backend)."},
      {"include_num_input_tokens_seen", &TA::include_num_input_tokens_seen,
       "Count the input tokens trained on (num_input_tokens_seen in logs and trainer_state)."},
      {"lr_scheduler_kwargs", &TA::lr_scheduler_kwargs,
       "JSON object of schedule arguments: num_cycles, lr_end, power, timescale."},
      {"gradient_checkpointing", &TA::gradient_checkpointing,
       "Recompute each layer's activations in backward instead of keeping them (lazy)."},
      {"device", &TA::device,
       "lazy (traced and compiled on loom's cpu backend), lazy:xla[:<index>] (XLA through the "
       "PJRT plugin PJRT_DEVICE names: CPU, CUDA, TPU), lazy:sim, or cpu (eager)."},
      {"ddp_backend", &TA::ddp_backend,
       "Several processes: mpi, or auto (default: mpi under mpirun, else one process)."},
      {"ddp_timeout", &TA::ddp_timeout,
       "Seconds a collective waits for the other ranks before the job fails."},
      {"fsdp", &TA::fsdp,
       "Sharded data parallel: shard_grad_op (ZeRO-2) or full_shard (ZeRO-3); empty: DDP."},
      {"fsdp_config", &TA::fsdp_config,
       "FSDP options as JSON (text or file): transformer_layer_cls_to_wrap."},
  };
  return table;
}

const Field* find_field(const std::string& name) {
  for (const Field& f : field_table())
    if (name == f.name) return &f;
  return nullptr;
}

std::string strip_dashes(const std::string& name) {
  size_t i = 0;
  while (i < name.size() && i < 2 && name[i] == '-') ++i;
  return name.substr(i);
}

const Field& field_or_throw(const std::string& raw) {
  std::string name = strip_dashes(raw);
  if (const Field* f = find_field(name)) return *f;
  std::string hint = TA::suggest(name);
  if (hint.empty()) fail("[TrainingArguments] unknown argument '", name, "'");
  fail("[TrainingArguments] unknown argument '", name, "' (did you mean '", hint, "'?)");
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_none(const std::string& v) {
  std::string l = lower(v);
  return l == "none" || l == "null";
}

[[noreturn]] void bad_value(const char* name, const char* type, const std::string& v) {
  fail("[TrainingArguments] ", name, ": expected ", type, ", got '", v, "'");
}

bool parse_bool(const char* name, const std::string& v) {
  std::string l = lower(v);
  if (l == "true" || l == "1" || l == "yes" || l == "y" || l == "on" || l == "t") return true;
  if (l == "false" || l == "0" || l == "no" || l == "n" || l == "off" || l == "f") return false;
  bad_value(name, "a bool (true/false)", v);
}

// Decimal only, as Python's int() / float() (core/parse_number.h): "0x10" and
// values beyond int64 / double are errors, never hex or a wrapped value.
int64_t parse_int(const char* name, const std::string& v) {
  NumberError why = NumberError::kNone;
  std::optional<int64_t> out = parse_decimal_int(v, &why);
  if (!out) bad_value(name, int_expectation(why), v);
  return *out;
}

double parse_double(const char* name, const std::string& v) {
  NumberError why = NumberError::kNone;
  std::optional<double> out = parse_decimal_double(v, &why);
  if (!out) bad_value(name, double_expectation(why), v);
  return *out;
}

// The shortest %g text that reads back to the same double.
std::string format_double(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  std::string text;
  for (int p = 1; p <= 17; ++p) {
    std::ostringstream s;
    s.precision(p);
    s << v;
    text = s.str();
    if (std::stod(text) == v) break;
  }
  return text;
}

// The device as training_args.json and get() write it: "lazy" for the default
// lazy device (lazy:cpu:0, what `--device lazy` and the CLI's default give,
// written as before the field was a Device), else its canonical name.
std::string device_text(const Device& d) { return d == Device("lazy") ? "lazy" : d.str(); }

struct Setter {
  TA& a;
  const char* name;
  const std::string& v;
  void operator()(bool TA::*m) const { a.*m = parse_bool(name, v); }
  void operator()(int64_t TA::*m) const { a.*m = parse_int(name, v); }
  void operator()(double TA::*m) const { a.*m = parse_double(name, v); }
  void operator()(std::string TA::*m) const { a.*m = v; }
  // Parsed here, once: the rest of the library holds the Device value.
  void operator()(Device TA::*m) const {
    try {
      a.*m = Device(v);
    } catch (const Error& e) {
      std::string why = e.what();  // "[device] unknown device 'x' ..."
      if (why.rfind("[device] ", 0) == 0) why = why.substr(9);
      fail("[TrainingArguments] ", name, ": ", why);
    }
  }
  void operator()(std::optional<bool> TA::*m) const {
    a.*m = is_none(v) ? std::nullopt : std::optional<bool>(parse_bool(name, v));
  }
  void operator()(std::optional<int64_t> TA::*m) const {
    a.*m = is_none(v) ? std::nullopt : std::optional<int64_t>(parse_int(name, v));
  }
  void operator()(std::optional<double> TA::*m) const {
    a.*m = is_none(v) ? std::nullopt : std::optional<double>(parse_double(name, v));
  }
  void operator()(std::optional<std::string> TA::*m) const {
    a.*m = is_none(v) ? std::nullopt : std::optional<std::string>(v);
  }
};

struct ToJson {
  const TA& a;
  nlohmann::json operator()(bool TA::*m) const { return a.*m; }
  nlohmann::json operator()(int64_t TA::*m) const { return a.*m; }
  nlohmann::json operator()(double TA::*m) const { return a.*m; }
  nlohmann::json operator()(std::string TA::*m) const { return a.*m; }
  nlohmann::json operator()(Device TA::*m) const { return device_text(a.*m); }
  template <typename T>
  nlohmann::json operator()(std::optional<T> TA::*m) const {
    return (a.*m) ? nlohmann::json(*(a.*m)) : nlohmann::json(nullptr);
  }
};

struct TypeName {
  std::string operator()(bool TA::*) const { return "bool"; }
  std::string operator()(int64_t TA::*) const { return "int"; }
  std::string operator()(double TA::*) const { return "float"; }
  std::string operator()(std::string TA::*) const { return "string"; }
  std::string operator()(Device TA::*) const { return "string"; }
  std::string operator()(std::optional<bool> TA::*) const { return "bool?"; }
  std::string operator()(std::optional<int64_t> TA::*) const { return "int?"; }
  std::string operator()(std::optional<double> TA::*) const { return "float?"; }
  std::string operator()(std::optional<std::string> TA::*) const { return "string?"; }
};

}  // namespace

void TrainingArguments::set(const std::string& name, const std::string& value) {
  const Field& f = field_or_throw(name);
  std::visit(Setter{*this, f.name, value}, f.member);
}

std::string TrainingArguments::get(const std::string& name) const {
  const Field& f = field_or_throw(name);
  nlohmann::json j = std::visit(ToJson{*this}, f.member);
  if (j.is_null()) return "none";
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_float()) return format_double(j.get<double>());
  return j.dump();
}

TrainingArguments TrainingArguments::from_json(const std::string& text, const std::string& where) {
  nlohmann::json j = io::parse_json(text, "[TrainingArguments] " + where);
  LOOM_CHECK(j.is_object(), "[TrainingArguments] ", where, ": expected a JSON object");
  TrainingArguments args;
  for (const auto& [key, value] : j.items()) {
    if (value.is_null()) {
      args.set(key, "none");
    } else if (value.is_string()) {
      args.set(key, value.get<std::string>());
    } else if (value.is_boolean() || value.is_number()) {
      args.set(key, value.is_number_float() ? format_double(value.get<double>()) : value.dump());
    } else if (value.is_array() && std::all_of(value.begin(), value.end(),
                                               [](const auto& v) { return v.is_string(); })) {
      // transformers writes report_to as a list (["tensorboard"]): comma-joined.
      std::string joined;
      for (const auto& v : value) joined += (joined.empty() ? "" : ",") + v.get<std::string>();
      // [] is "" (report_to: "none", no integration).
      args.set(key, joined.empty() && key == "report_to" ? "none" : joined);
    } else {
      fail("[TrainingArguments] ", where, ": ", key, ": expected a number, bool, string or null");
    }
  }
  return args;
}

TrainingArguments TrainingArguments::from_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "[TrainingArguments] ", path, ": cannot open file");
  std::stringstream buf;
  buf << in.rdbuf();
  return from_json(buf.str(), path);
}

std::string TrainingArguments::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const Field& f : field_table()) j[f.name] = std::visit(ToJson{*this}, f.member);
  return j.dump(2) + "\n";
}

const std::vector<TrainingArguments::FieldInfo>& TrainingArguments::fields() {
  static const std::vector<FieldInfo> infos = [] {
    std::vector<FieldInfo> out;
    for (const Field& f : field_table())
      out.push_back({f.name, std::visit(TypeName{}, f.member), f.help});
    return out;
  }();
  return infos;
}

std::string TrainingArguments::suggest(const std::string& name) {
  std::vector<std::string> names;
  for (const Field& f : field_table()) names.push_back(f.name);
  return closest_name(name, names);
}

int64_t TrainingArguments::get_warmup_steps(int64_t num_training_steps) const {
  if (warmup_steps >= 1) return static_cast<int64_t>(warmup_steps);
  if (warmup_steps > 0) return static_cast<int64_t>(std::ceil(num_training_steps * warmup_steps));
  return static_cast<int64_t>(std::ceil(num_training_steps * warmup_ratio));
}

std::string TrainingArguments::best_metric_key() const {
  if (!metric_for_best_model) return "";
  const std::string& m = *metric_for_best_model;
  return m.rfind("eval_", 0) == 0 ? m : "eval_" + m;
}

}  // namespace loom
