// TrainingArguments::validate: transformers' TrainingArguments.__post_init__
// (derived defaults) and _validate_args (value and combination checks), plus
// the checks the Trainer constructor makes on the arguments alone
// (metric_for_best_model with save_strategy "best"). Every error names the
// argument: "[TrainingArguments] <name>: ...".
#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/host_name.h"
#include "io/json_parse.h"
#include "loom/dataloader.h"
#include "loom/device.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/optim.h"
#include "loom/training_args.h"
#include "train/fsdp_options.h"
#include "train/scheduler_kwargs.h"

namespace loom {
namespace {

void check_one_of(const char* name, const std::string& value,
                  const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
  std::string list;
  for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
  fail("[TrainingArguments] ", name, ": '", value, "' is not one of ", list);
}

void check_positive_int(const char* name, int64_t value) {
  LOOM_CHECK(value >= 1, "[TrainingArguments] ", name, ": must be >= 1, got ", value);
}

void check_finite(const char* name, double value) {
  LOOM_CHECK(std::isfinite(value), "[TrainingArguments] ", name, ": must be finite, got ", value);
}

// Step counts given as floats become int64 step numbers: above 2^53 a double
// no longer holds every integer, and above 2^63 the conversion is undefined.
constexpr double kMaxStepCount = 9007199254740992.0;  // 2^53

void check_step_count(const char* name, double value) {
  LOOM_CHECK(value <= kMaxStepCount, "[TrainingArguments] ", name, ": must be <= 2^53 (",
             static_cast<int64_t>(kMaxStepCount), "), got ", value);
}

// A step count that may be a ratio in (0, 1): positive, and whole when >= 1
// (transformers: "--logging_steps must be an integer if bigger than 1").
void check_steps(const char* name, double value) {
  check_finite(name, value);
  LOOM_CHECK(value > 0, "[TrainingArguments] ", name, ": must be > 0 (or a ratio in (0, 1)), got ",
             value);
  LOOM_CHECK(value < 1 || value == std::floor(value), "[TrainingArguments] ", name,
             ": must be an integer if bigger than 1, got ", value);
  check_step_count(name, value);
}

void validate_batches(const TrainingArguments& a) {
  check_positive_int("per_device_train_batch_size", a.per_device_train_batch_size);
  check_positive_int("per_device_eval_batch_size", a.per_device_eval_batch_size);
  check_positive_int("gradient_accumulation_steps", a.gradient_accumulation_steps);
  LOOM_CHECK(
      a.dataloader_num_workers >= 0 && a.dataloader_num_workers <= data::kMaxDataLoaderWorkers,
      "[TrainingArguments] dataloader_num_workers: must be in [0, ", data::kMaxDataLoaderWorkers,
      "], got ", a.dataloader_num_workers);
  LOOM_CHECK(std::isfinite(a.ddp_bucket_cap_mb) && a.ddp_bucket_cap_mb > 0,
             "[TrainingArguments] ddp_bucket_cap_mb: must be a finite number > 0, got ",
             a.ddp_bucket_cap_mb);
}

void validate_optimizer(const TrainingArguments& a) {
  check_one_of("optim", a.optim, {"adamw_torch", "adamw_torch_fused", "sgd"});
  check_finite("learning_rate", a.learning_rate);
  LOOM_CHECK(a.learning_rate >= 0, "[TrainingArguments] learning_rate: must be >= 0, got ",
             a.learning_rate);
  check_finite("weight_decay", a.weight_decay);
  LOOM_CHECK(a.weight_decay >= 0, "[TrainingArguments] weight_decay: must be >= 0, got ",
             a.weight_decay);
  LOOM_CHECK(a.adam_beta1 >= 0 && a.adam_beta1 < 1,
             "[TrainingArguments] adam_beta1: must be in [0, 1), got ", a.adam_beta1);
  LOOM_CHECK(a.adam_beta2 >= 0 && a.adam_beta2 < 1,
             "[TrainingArguments] adam_beta2: must be in [0, 1), got ", a.adam_beta2);
  LOOM_CHECK(a.adam_epsilon >= 0 && std::isfinite(a.adam_epsilon),
             "[TrainingArguments] adam_epsilon: must be >= 0, got ", a.adam_epsilon);
  LOOM_CHECK(!std::isnan(a.max_grad_norm), "[TrainingArguments] max_grad_norm: must not be NaN");
}

void validate_length(const TrainingArguments& a) {
  LOOM_CHECK(a.max_steps == -1 || a.max_steps > 0,
             "[TrainingArguments] max_steps: must be -1 (train for num_train_epochs) or > 0, got ",
             a.max_steps);
  check_finite("num_train_epochs", a.num_train_epochs);
  // max_steps = ceil(num_train_epochs x update steps per epoch) must stay an int64.
  LOOM_CHECK(a.num_train_epochs <= 1e9,
             "[TrainingArguments] num_train_epochs: must be <= 1e9, got ", a.num_train_epochs);
  LOOM_CHECK(a.max_steps > 0 || a.num_train_epochs > 0,
             "[TrainingArguments] num_train_epochs: must be > 0 when max_steps is not set, got ",
             a.num_train_epochs);
  check_one_of("lr_scheduler_type", a.lr_scheduler_type, optim::schedule_names());
  {
    optim::ScheduleOptions checked;
    train::apply_lr_scheduler_kwargs(a.lr_scheduler_type, a.lr_scheduler_kwargs, checked);
  }
  check_finite("warmup_steps", a.warmup_steps);
  LOOM_CHECK(a.warmup_steps >= 0, "[TrainingArguments] warmup_steps: must be >= 0, got ",
             a.warmup_steps);
  check_step_count("warmup_steps", a.warmup_steps);
  LOOM_CHECK(a.warmup_steps < 1 || a.warmup_steps == std::floor(a.warmup_steps),
             "[TrainingArguments] warmup_steps: must be an integer if bigger than 1, got ",
             a.warmup_steps);
  LOOM_CHECK(a.warmup_ratio >= 0 && a.warmup_ratio <= 1,
             "[TrainingArguments] warmup_ratio: must be in [0, 1], got ", a.warmup_ratio);
}

void validate_strategies(const TrainingArguments& a) {
  check_one_of("logging_strategy", a.logging_strategy, {"no", "steps", "epoch"});
  check_one_of("eval_strategy", a.eval_strategy, {"no", "steps", "epoch"});
  check_one_of("save_strategy", a.save_strategy, {"no", "steps", "epoch", "best"});
  if (a.logging_strategy == "steps") check_steps("logging_steps", a.logging_steps);
  if (a.eval_strategy == "steps") check_steps("eval_steps", *a.eval_steps);
  if (a.save_strategy == "steps") check_steps("save_steps", a.save_steps);
  check_finite("eval_delay", a.eval_delay);
  LOOM_CHECK(a.eval_delay >= 0, "[TrainingArguments] eval_delay: must be >= 0, got ", a.eval_delay);
}

// transformers: "--load_best_model_at_end requires the save and eval strategy
// to match, except when --save_strategy="best"" and save_steps a multiple of
// eval_steps (both absolute or both ratios).
void validate_best_model(const TrainingArguments& a) {
  if (a.load_best_model_at_end && a.save_strategy != "best") {
    LOOM_CHECK(a.eval_strategy == a.save_strategy,
               "[TrainingArguments] load_best_model_at_end: requires eval_strategy and "
               "save_strategy to match (unless save_strategy is 'best'), got eval_strategy '",
               a.eval_strategy, "' and save_strategy '", a.save_strategy, "'");
    LOOM_CHECK(a.eval_strategy != "no",
               "[TrainingArguments] load_best_model_at_end: requires an eval_strategy other "
               "than 'no'");
    if (a.eval_strategy == "steps") {
      double save = a.save_steps, eval = *a.eval_steps;
      LOOM_CHECK((save < 1) == (eval < 1),
                 "[TrainingArguments] load_best_model_at_end: save_steps ", save,
                 " and eval_steps ", eval, " mix a ratio and an absolute step count");
      const double scale = save < 1 ? 1e6 : 1.0;
      int64_t s = std::llround(save * scale), e = std::llround(eval * scale);
      LOOM_CHECK(e > 0 && s % e == 0,
                 "[TrainingArguments] load_best_model_at_end: requires save_steps to be a "
                 "multiple of eval_steps, got save_steps ",
                 save, " and eval_steps ", eval);
    }
  }
  if (a.save_strategy == "best") {
    LOOM_CHECK(a.metric_for_best_model.has_value(),
               "[TrainingArguments] metric_for_best_model: must be set with save_strategy 'best'");
    LOOM_CHECK(a.eval_strategy != "no",
               "[TrainingArguments] save_strategy: 'best' requires an eval_strategy other than "
               "'no'");
  }
  if (a.metric_for_best_model)
    LOOM_CHECK(!a.metric_for_best_model->empty(),
               "[TrainingArguments] metric_for_best_model: must not be empty");
}

// The transformers names of training_args.h's "More of transformers' names".
void check_hf_habits(const TrainingArguments& a) {
  const double f = a.label_smoothing_factor;
  LOOM_CHECK(f >= 0 && f < 1, "[TrainingArguments] label_smoothing_factor: expected a value in ",
             "[0, 1), got ", f);
  LOOM_CHECK(a.save_safetensors, "[TrainingArguments] save_safetensors: false is not supported: ",
             "safetensors is the only format loom writes (there is no pytorch_model.bin)");
  if (a.use_cpu) {
    const std::string& backend = a.device.backend;
    LOOM_CHECK(backend == "cpu" || backend == "reference", "[TrainingArguments] use_cpu: device '",
               a.device.str(), "' runs on the ", backend, " backend, not on the cpu");
  }
}

void validate_misc(const TrainingArguments& a) {
  LOOM_CHECK(!a.output_dir.empty(), "[TrainingArguments] output_dir: must not be empty");
  // transformers also names nccl, gloo, ccl, hccl, cncl, mccl: not loom's engines.
  if (a.ddp_backend) check_one_of("ddp_backend", *a.ddp_backend, {"auto", "mpi"});
  check_positive_int("ddp_timeout", a.ddp_timeout);
  train::parse_fsdp_mode(a.fsdp);           // refuses HF's other values by name
  train::check_fsdp_config(a.fsdp_config);  // the file, the JSON, the keys; also without --fsdp
  // Seconds; 1e9 (~31 years) keeps now + timeout far inside int64 nanoseconds.
  LOOM_CHECK(a.ddp_timeout <= 1000000000,
             "[TrainingArguments] ddp_timeout: must be <= 1000000000 seconds, got ", a.ddp_timeout);
  LOOM_CHECK(a.seed >= 0, "[TrainingArguments] seed: must be >= 0, got ", a.seed);
  LOOM_CHECK(!a.data_seed || *a.data_seed >= 0, "[TrainingArguments] data_seed: must be >= 0, got ",
             *a.data_seed);
  if (a.resume_from_checkpoint)
    LOOM_CHECK(!a.resume_from_checkpoint->empty(),
               "[TrainingArguments] resume_from_checkpoint: must not be empty");
  check_hf_habits(a);
  try {
    lazy::check_device(a.device);
  } catch (const Error& e) {
    // A well-formed lazy:<name> of no registered backend: the registry would
    // list the test backends too (reference, sim); users pick from these.
    if (std::string(e.what()).find("unknown backend") != std::string::npos)
      fail("[TrainingArguments] device: '", a.device.str(),
           "' is not a device (devices: cpu, lazy (= lazy:cpu), lazy:xla[:<index>])");
    fail("[TrainingArguments] device: '", a.device.str(), "': ", e.what());
  }
}

// report_to's comma-separated entries, blanks trimmed ("" gives none).
std::vector<std::string> report_to_entries(const std::string& report_to) {
  std::vector<std::string> out;
  std::stringstream in(report_to);
  for (std::string item; std::getline(in, item, ',');) {
    const size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

// transformers' report_to values loom accepts; its other integrations are
// named in the error so a copied HF command line fails clearly.
void validate_report_to(const TrainingArguments& a) {
  const std::vector<std::string> items = report_to_entries(a.report_to);
  LOOM_CHECK(!items.empty(), "[TrainingArguments] report_to: must name tensorboard, all or none");
  for (const std::string& item : items) {
    if (item == "tensorboard" || item == "all" || item == "none") continue;
    fail("[TrainingArguments] report_to: '", item,
         "' is not available in loom (use tensorboard, all or none)");
  }
  LOOM_CHECK(items.size() == 1 || std::find(items.begin(), items.end(), "none") == items.end(),
             "[TrainingArguments] report_to: 'none' cannot be combined with other values, got '",
             a.report_to, "'");
  if (a.logging_dir)
    LOOM_CHECK(!a.logging_dir->empty(), "[TrainingArguments] logging_dir: must not be empty");
}

// transformers' default_logdir(): runs/<%b%d_%H-%M-%S>_<hostname>, local time.
std::string default_logdir() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%b%d_%H-%M-%S", &local);
  return (std::filesystem::path("runs") / (std::string(stamp) + "_" + host_name())).string();
}

}  // namespace

bool TrainingArguments::reports_to(const std::string& integration) const {
  for (const std::string& item : report_to_entries(report_to))
    if (item == integration || item == "all") return true;
  return false;
}

void TrainingArguments::validate() {
  // Derived defaults (transformers' __post_init__, "Auto-derived Values").
  if (eval_strategy != "no") do_eval = true;
  if (eval_strategy == "steps" && (!eval_steps || *eval_steps == 0)) {
    LOOM_CHECK(logging_steps > 0,
               "[TrainingArguments] eval_steps: eval_strategy 'steps' requires eval_steps or "
               "logging_steps > 0");
    eval_steps = logging_steps;
  }
  if (load_best_model_at_end && !metric_for_best_model) metric_for_best_model = "loss";
  if (!greater_is_better && metric_for_best_model) {
    const std::string& m = *metric_for_best_model;
    greater_is_better = !(m.size() >= 4 && m.compare(m.size() - 4, 4, "loss") == 0);
  }
  if (!run_name) run_name = output_dir;  // transformers' default
  if (!logging_dir) logging_dir = (std::filesystem::path(output_dir) / default_logdir()).string();
  validate_report_to(*this);
  validate_misc(*this);
  validate_batches(*this);
  validate_optimizer(*this);
  validate_length(*this);
  validate_strategies(*this);
  validate_best_model(*this);
}

}  // namespace loom

// ---- lr_scheduler_kwargs (train/scheduler_kwargs.h): the argument names are
// those of transformers' optimization.py schedule functions. ----

namespace loom::train {
namespace {

// The keyword arguments of each schedule, as its transformers function names them.
std::vector<std::string> schedule_kwargs(const std::string& type) {
  if (type == "cosine" || type == "cosine_with_restarts") return {"num_cycles"};
  if (type == "polynomial") return {"lr_end", "power"};
  if (type == "inverse_sqrt") return {"timescale"};
  return {};
}

}  // namespace

void apply_lr_scheduler_kwargs(const std::string& type, const std::string& json,
                               optim::ScheduleOptions& options) {
  const std::string where = "[TrainingArguments] lr_scheduler_kwargs";
  const nlohmann::json j = io::parse_json(json.empty() ? "{}" : json, where);
  LOOM_CHECK(j.is_object(), where, ": expected a JSON object such as {\"num_cycles\": 1}, got ",
             json);
  const std::vector<std::string> known = schedule_kwargs(type);
  std::string takes;
  for (const std::string& k : known) takes += (takes.empty() ? "" : ", ") + k;
  for (const auto& [key, value] : j.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end())
      fail(where, ": '", key, "' is not an argument of the ", type, " schedule (",
           takes.empty() ? "it takes none" : "it takes " + takes, ")");
    LOOM_CHECK(value.is_number(), where, ": ", key, ": expected a number, got ", value.dump());
    const double v = value.get<double>();
    if (key == "num_cycles") options.num_cycles = v;
    if (key == "lr_end") options.lr_end = v;
    if (key == "power") options.power = v;
    if (key == "timescale") {
      LOOM_CHECK(value.is_number_integer(), where, ": timescale: expected an integer, got ",
                 value.dump());
      options.timescale = value.get<int64_t>();
    }
  }
}

}  // namespace loom::train
