// Learning-rate schedules (loom/optim.h): the lr_lambda functions of
// transformers.optimization (get_scheduler; the _get_*_lr_lambda helpers in
// transformers/optimization.py), evaluated in double in the same operation
// order as the Python: schedule_names() and schedule_factor(). Pure host
// functions of the step; LRScheduler (lr_scheduler.cpp) applies them to an
// optimizer. Kept apart so readers that only check a schedule name
// (TrainingArguments, the fuzz harnesses) need no optimizer.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "loom/error.h"
#include "loom/optim.h"

namespace loom::optim {
namespace {

bool needs_training_steps(const std::string& name) {
  return name == "linear" || name == "cosine" || name == "cosine_with_restarts" ||
         name == "polynomial";
}

// The checks get_scheduler and the schedule functions make, plus loom's:
// counts are non-negative, polynomial's decay span is not empty.
void check_schedule(const std::string& name, const ScheduleOptions& o, double lr_init) {
  const auto& names = schedule_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    fail("[lr_scheduler] unknown schedule '", name, "' (known: ", known, ")");
  }
  if (name == "constant") return;
  LOOM_CHECK(o.num_warmup_steps.has_value(), "[lr_scheduler] ", name, " requires num_warmup_steps");
  LOOM_CHECK(*o.num_warmup_steps >= 0, "[lr_scheduler] num_warmup_steps must be >= 0, got ",
             *o.num_warmup_steps);
  if (needs_training_steps(name)) {
    LOOM_CHECK(o.num_training_steps.has_value(), "[lr_scheduler] ", name,
               " requires num_training_steps");
    LOOM_CHECK(*o.num_training_steps >= 0, "[lr_scheduler] num_training_steps must be >= 0, got ",
               *o.num_training_steps);
  }
  if (name == "polynomial") {
    LOOM_CHECK(lr_init > o.lr_end, "[lr_scheduler] lr_end (", o.lr_end,
               ") must be smaller than initial lr (", lr_init, ")");
    LOOM_CHECK(*o.num_training_steps != *o.num_warmup_steps,
               "[lr_scheduler] polynomial needs "
               "num_training_steps != num_warmup_steps (both ",
               *o.num_warmup_steps, ")");
  }
  if (name == "inverse_sqrt" && o.timescale.has_value()) {
    LOOM_CHECK(*o.timescale > 0, "[lr_scheduler] timescale must be > 0, got ", *o.timescale);
  }
}

double warmup_factor(int64_t step, int64_t warmup) {
  return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup));
}

double decay_factor(const std::string& name, int64_t step, const ScheduleOptions& o,
                    double lr_init) {
  const int64_t w = *o.num_warmup_steps;
  if (name == "constant_with_warmup") return 1.0;
  if (name == "inverse_sqrt") {
    int64_t timescale = o.timescale.value_or(w != 0 ? w : 10000);
    int64_t shift = timescale - w;
    return 1.0 / std::sqrt(static_cast<double>(step + shift) / static_cast<double>(timescale));
  }
  const int64_t n = *o.num_training_steps;
  if (name == "linear") {
    return std::max(
        0.0, static_cast<double>(n - step) / static_cast<double>(std::max<int64_t>(1, n - w)));
  }
  if (name == "polynomial") {
    if (step > n) return o.lr_end / lr_init;
    double lr_range = lr_init - o.lr_end;
    double pct_remaining = 1.0 - static_cast<double>(step - w) / static_cast<double>(n - w);
    return (lr_range * std::pow(pct_remaining, o.power) + o.lr_end) / lr_init;
  }
  double progress =
      static_cast<double>(step - w) / static_cast<double>(std::max<int64_t>(1, n - w));
  if (name == "cosine") {
    double cycles = o.num_cycles.value_or(0.5);
    return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * cycles * 2.0 * progress)));
  }
  // cosine_with_restarts
  double cycles = o.num_cycles.value_or(1.0);
  if (progress >= 1.0) return 0.0;
  return std::max(0.0,
                  0.5 * (1.0 + std::cos(std::numbers::pi * std::fmod(cycles * progress, 1.0))));
}

}  // namespace

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names = {"linear",      "cosine",   "cosine_with_restarts",
                                                 "polynomial",  "constant", "constant_with_warmup",
                                                 "inverse_sqrt"};
  return names;
}

double schedule_factor(const std::string& name, int64_t step, const ScheduleOptions& options,
                       double lr_init) {
  check_schedule(name, options, lr_init);
  LOOM_CHECK(step >= 0, "[lr_scheduler] step must be >= 0, got ", step);
  if (name == "constant") return 1.0;
  if (step < *options.num_warmup_steps) return warmup_factor(step, *options.num_warmup_steps);
  return decay_factor(name, step, options, lr_init);
}

}  // namespace loom::optim
