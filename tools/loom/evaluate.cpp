// `loom evaluate`: evaluates a model on the validation data of a job (the
// same data/model flags as `loom train`): eval_loss, eval_perplexity for
// language models, eval_accuracy and eval_f1 for classification, printed as
// transformers' log_metrics block. With an explicit --output_dir it also
// writes eval_results.json and lazy_metrics.json there. Under mpirun only
// rank 0 prints and writes.
// Assumes main() turns a loom::Error into one "loom: error: ..." line.
#include <filesystem>
#include <fstream>
#include <memory>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "flags.h"
#include "job.h"
#include "job_args.h"
#include "launch.h"
#include "loom/dist.h"
#include "loom/error.h"
#include "loom/metrics.h"
#include "loom/output_dir_lock.h"

namespace loom::cli {
namespace fs = std::filesystem;

namespace {

void run_evaluate(const FlagSet& flags, const CLI::App& app) {
  JobCommand cmd = parse_job_command(flags, app, "loom evaluate");
  TrainingArguments args = cmd.training;
  args.do_train = false;
  args.do_eval = true;
  // Nothing is written without --output_dir: no TensorBoard files either
  // (they would land in ./trainer_output/runs/, or fail where it is read-only),
  // so a flag that asks for files is an error rather than ignored.
  if (!cmd.given.count("output_dir")) {
    const char* why =
        " needs --output_dir (without it loom evaluate prints its metrics and writes no file)";
    LOOM_CHECK(!cmd.given.count("logging_dir"), "[loom evaluate] --logging_dir", why);
    LOOM_CHECK(!cmd.given.count("report_to") || cmd.given.at("report_to") == "none",
               "[loom evaluate] --report_to", why);
    args.report_to = "none";
  }
  args.validate();
  start_ranks(cmd, args);  // launch.h
  // An unusable --output_dir fails now, naming the flag, not after evaluating.
  if (cmd.given.count("output_dir")) train::check_output_dir_writable(args.output_dir);
  Job job = prepare_job(cmd, args, /*want_train=*/false, /*want_eval=*/true);
  Trainer trainer(job.model, args, nullptr, job.data.eval, job.options);
  Logs m = trainer.evaluate();
  m["eval_samples"] = static_cast<double>(job.data.eval->size());
  // Data parallel: every rank holds the same metrics (gathered in
  // evaluate()); rank 0 alone prints and writes, as `loom train` does.
  if (dist::rank() != 0) return;
  print_metrics("eval", m);
  if (!cmd.given.count("output_dir")) return;
  const fs::path dir = args.output_dir;
  write_metrics_json((dir / "eval_results.json").string(), m);
  std::ofstream out(dir / "lazy_metrics.json", std::ios::binary | std::ios::trunc);
  out << metrics::report_json();
  LOOM_CHECK(out.good(), "[loom evaluate] ", (dir / "lazy_metrics.json").string(),
             ": cannot write file");
}

}  // namespace

void add_evaluate_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "evaluate", "Evaluate a model on validation data (loss, perplexity or accuracy and F1)");
  auto flags = std::make_shared<FlagSet>(make_job_flag_set("loom evaluate"));
  flags->add_to(*cmd);
  cmd->footer(
      "Example:\n  loom evaluate --model_name_or_path out --validation_file valid.txt "
      "--block_size 128\nSee docs/cli.md.");
  cmd->callback([flags, cmd] { run_evaluate(*flags, *cmd); });
}

}  // namespace loom::cli
