// The work shared by `loom train` and `loom evaluate` beyond the library's
// build_job (loom/job.h): building the job from a parsed command line, and
// the results files and printed metrics of their ends (transformers'
// Trainer.save_metrics / log_metrics).
#pragma once

#include <string>

#include "job_args.h"
#include "loom/job.h"
#include "loom/trainer.h"

namespace loom::cli {

/// loom::build_job on the command's JobArgs, with the flags on the command
/// line (or in --config) as JobOptions::given. `training` may be adjusted
/// (prediction_loss_only). Throws what build_job throws.
Job prepare_job(const JobCommand& cmd, TrainingArguments& training, bool want_train,
                bool want_eval);

/// Writes `metrics` to `path` as transformers' save_metrics does (indent 4,
/// keys sorted). Throws loom::Error on an I/O failure.
void write_metrics_json(const std::string& path, const Logs& metrics);
/// Prints transformers' log_metrics block to stdout:
/// "***** eval metrics *****" then "  key = value" lines.
void print_metrics(const std::string& split, const Logs& metrics);

}  // namespace loom::cli
