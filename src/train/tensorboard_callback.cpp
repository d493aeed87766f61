// TensorBoardCallback (include/loom/tensorboard.h): transformers'
// integrations.TensorBoardCallback over io::EventFileWriter, plus loom's
// lazy/ scalars from loom::metrics.
#include "loom/tensorboard.h"

#include "io/tb_event.h"
#include "loom/device.h"
#include "loom/error.h"
#include "loom/metrics.h"

namespace loom {
namespace {

double timer_ms(const char* name) {
  return static_cast<double>(metrics::timer_total_ns(name)) / 1e6;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

std::string tensorboard_tag(const std::string& log_key) {
  if (starts_with(log_key, "eval_")) return "eval/" + log_key.substr(5);
  if (starts_with(log_key, "test_")) return "test/" + log_key.substr(5);
  return "train/" + log_key;
}

TensorBoardCallback::TensorBoardCallback() = default;
TensorBoardCallback::~TensorBoardCallback() = default;

std::string TensorBoardCallback::event_file() const { return writer_ ? writer_->path() : ""; }

void TensorBoardCallback::open(const TrainingArguments& args, const TrainerState& state) {
  if (writer_ || !state.is_world_process_zero) return;
  LOOM_CHECK(args.logging_dir.has_value(),
             "[TensorBoardCallback] logging_dir is unset (call TrainingArguments::validate())");
  writer_ = std::make_unique<io::EventFileWriter>(*args.logging_dir);
  last_compile_ms_ = timer_ms("CompileTime");
  last_execute_ms_ = timer_ms("ExecuteTime");
}

void TensorBoardCallback::on_train_begin(const TrainingArguments& args, const TrainerState& state,
                                         TrainerControl&) {
  open(args, state);
  if (!writer_) return;
  writer_->add_text("args", args.to_json(), state.global_step);
  writer_->flush();
}

void TensorBoardCallback::on_log(const TrainingArguments& args, const TrainerState& state,
                                 TrainerControl&, const Logs& logs) {
  open(args, state);
  if (!writer_) return;
  std::vector<std::pair<std::string, float>> scalars;
  for (const auto& [key, value] : logs) scalars.emplace_back(tensorboard_tag(key), value);
  if (logs.count("loss") && args.device.is_lazy()) {
    const double compile = timer_ms("CompileTime"), execute = timer_ms("ExecuteTime");
    scalars.emplace_back("lazy/CompileTime", compile - last_compile_ms_);
    scalars.emplace_back("lazy/ExecuteTime", execute - last_execute_ms_);
    scalars.emplace_back("lazy/UncachedCompile", metrics::counter("UncachedCompile"));
    last_compile_ms_ = compile;
    last_execute_ms_ = execute;
  }
  writer_->add_scalars(scalars, state.global_step);
  writer_->flush();
}

void TensorBoardCallback::on_train_end(const TrainingArguments&, const TrainerState&,
                                       TrainerControl&) {
  if (!writer_) return;
  writer_->flush();
  writer_.reset();
}

}  // namespace loom
