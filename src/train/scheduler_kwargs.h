// lr_scheduler_kwargs (transformers' TrainingArguments field, a JSON object)
// read into optim::ScheduleOptions: the keyword arguments each schedule
// function of transformers' optimization.py takes beyond the step counts.
// Assumes the schedule name was checked against optim::schedule_names().
// Defined in training_args_validate.cpp (validate() checks it).
#pragma once

#include <string>

#include "loom/optim.h"

namespace loom::train {

/// Sets the fields of `options` named in `json` for schedule `type`:
/// num_cycles (cosine, cosine_with_restarts), lr_end and power (polynomial),
/// timescale (inverse_sqrt, an integer). Throws loom::Error
/// "[TrainingArguments] lr_scheduler_kwargs: ..." when `json` is not a JSON
/// object, a value is not a number, or a key is not an argument of `type`
/// (transformers: get_scheduler's TypeError), naming the ones it takes.
void apply_lr_scheduler_kwargs(const std::string& type, const std::string& json,
                               optim::ScheduleOptions& options);

}  // namespace loom::train
