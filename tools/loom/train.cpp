// `loom train`: transformers' run_clm.py / run_mlm.py / run_glue.py as one
// command. Parses the data/model flags and every TrainingArguments field (or
// a --config JSON file), builds the tokenizer, model and datasets
// (job.h), trains with loom::Trainer, saves the model, and writes
// transformers' results files (train_results.json, eval_results.json,
// all_results.json, trainer_state.json) plus lazy_metrics.json and
// run_args.json (the flags, to re-run it: `loom train out/run_args.json`) to output_dir;
// with report_to tensorboard/all (the default) also training_curves.svg/.png
// (plot.h), next to the event files the Trainer wrote in logging_dir.
// Assumes main() turns a loom::Error into one "loom: error: ..." line.
// Under mpirun (data parallel) every rank runs this; rank 0 alone locks
// output_dir, prints and writes the results files.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "flags.h"
#include "job.h"
#include "job_args.h"
#include "launch.h"
#include "loom/callbacks.h"
#include "loom/dist.h"
#include "loom/error.h"
#include "loom/metrics.h"
#include "loom/model_registry.h"
#include "loom/output_dir_lock.h"
#include "plot.h"

namespace loom::cli {
namespace fs = std::filesystem;

namespace {

void print_memory_plan(const Job& job, const TrainingArguments& args) {
  const JobMemory m = job_memory_per_rank(job, args);
  std::printf(
      "  memory per rank (%s, f32): parameters %.1f MB (at rest %.1f MB), gradients %.1f MB, "
      "optimizer state %.1f MB, total %.1f MB; activations: ArenaAllocatedBytes in "
      "lazy_metrics.json\n",
      m.mode.c_str(), m.params / 1e6, m.params_at_rest / 1e6, m.grads / 1e6, m.optimizer / 1e6,
      m.total() / 1e6);
}

void print_plan(const Job& job, const TrainingArguments& args) {
  const auto& d = job.data;
  std::printf(
      "loom train: %s, %s (%s), %.2fM parameters, %lld train / %lld eval examples, "
      "device %s, output_dir %s\n",
      job.plan.task.c_str(), job.model->architecture().c_str(),
      job.plan.pretrained_dir.empty() ? "from scratch" : job.plan.pretrained_dir.c_str(),
      static_cast<double>(job.model->num_parameters()) / 1e6,
      static_cast<long long>(d.train ? d.train->size() : 0),
      static_cast<long long>(d.eval ? d.eval->size() : 0), args.get("device").c_str(),
      args.output_dir.c_str());
  if (const int64_t w = dist::world_size(); w > 1)
    std::printf(
        "  data parallel over %lld ranks (%s): per_device_train_batch_size %lld, "
        "global batch %lld\n",
        static_cast<long long>(w), args.ddp_backend.value_or("mpi").c_str(),
        static_cast<long long>(args.per_device_train_batch_size),
        static_cast<long long>(w * args.per_device_train_batch_size *
                               args.gradient_accumulation_steps));
  if (dist::world_size() > 1 || !args.fsdp.empty()) print_memory_plan(job, args);
  if (job.model->saved_weights_file() != "model.safetensors") {
    const int64_t trainable = job.model->num_parameters(true);
    const int64_t all = job.model->num_parameters();
    std::printf(
        "loom train: LoRA: trainable params: %lld || all params: %lld || trainable%%: %.4f\n",
        static_cast<long long>(trainable), static_cast<long long>(all),
        100.0 * static_cast<double>(trainable) / static_cast<double>(all));
  }
  std::fflush(stdout);
}

// The evaluation logged at the last step (eval_strategy "steps"/"epoch"
// evaluate there), so the final do_eval need not run it again; empty when
// there is none or the model changed since (load_best_model_at_end).
Logs last_step_evaluation(const Trainer& trainer) {
  if (trainer.args().load_best_model_at_end) return {};
  const TrainerState& s = trainer.state();
  for (auto it = s.log_history.rbegin(); it != s.log_history.rend(); ++it) {
    auto step = it->find("step");
    if (step == it->end() || static_cast<int64_t>(step->second) != s.global_step) break;
    if (!it->count("eval_loss")) continue;
    Logs m = *it;
    m.erase("step");
    return m;
  }
  return {};
}

// As PyTorch's DataLoader (and so the HF Trainer): a batch size above the
// dataset size gives one batch of the whole dataset per epoch. Said once, so
// a typo (10000000 for 100) is visible; memory is that of the real batch.
void warn_batch_larger_than_data(const TrainingArguments& args, int64_t examples) {
  if (args.per_device_train_batch_size <= examples) return;
  std::fprintf(stderr,
               "loom: warning: --per_device_train_batch_size %lld is larger than the %lld "
               "training examples: each epoch is one batch of %lld\n",
               static_cast<long long>(args.per_device_train_batch_size),
               static_cast<long long>(examples), static_cast<long long>(examples));
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  LOOM_CHECK(out.good(), "[loom train] ", path, ": cannot write file");
}

// A run shorter than logging_steps (and without evaluation) logs no loss:
// nothing to plot, and nothing to warn about.
bool has_logged_values(const TrainerState& state) {
  for (const Logs& entry : state.log_history)
    if (entry.count("loss") || entry.count("eval_loss")) return true;
  return false;
}

// The results files of an earlier run in output_dir (a run that evaluated,
// then one that does not, kept the first's eval_results.json): this run
// writes its own at its end. Checkpoints are never touched here.
void remove_earlier_results(const std::string& output_dir) {
  std::error_code ec;
  for (const char* f : {"train_results.json", "eval_results.json", "all_results.json"})
    fs::remove(fs::path(output_dir) / f, ec);
}

// output_dir/run_args.json: every flag this run was given (command line and
// config file), as a config file, so `loom train OUTPUT/run_args.json`
// re-runs the job (training_args.json alone lacks the data and model flags).
void write_run_args(const JobCommand& cmd, const std::string& output_dir) {
  fs::create_directories(output_dir);
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, value] : cmd.given) j[name] = value;
  write_text((fs::path(output_dir) / "run_args.json").string(), j.dump(2) + "\n");
}

// transformers' EarlyStoppingCallback checks (on_train_begin), made before
// any data is read and naming the flags; without load_best_model_at_end it
// warns, as transformers, that the last model (not the best) is saved.
void check_early_stopping(const JobCommand& cmd, const TrainingArguments& args) {
  if (!cmd.job.early_stopping_patience) {
    LOOM_CHECK(!cmd.given.count("early_stopping_threshold"),
               "[loom train] --early_stopping_threshold needs --early_stopping_patience");
    return;
  }
  LOOM_CHECK(args.metric_for_best_model.has_value(),
             "[loom train] --early_stopping_patience needs --metric_for_best_model (or "
             "--load_best_model_at_end, whose default metric is loss)");
  LOOM_CHECK(args.eval_strategy != "no",
             "[loom train] --early_stopping_patience needs --eval_strategy steps or epoch");
  if (!args.load_best_model_at_end && dist::rank() == 0)
    std::fprintf(stderr,
                 "loom: warning: --early_stopping_patience without --load_best_model_at_end: "
                 "the model saved at the end is the last one, not the best\n");
}

// run_clm / run_glue with --do_train false --do_eval: no training, the
// model of --model_name_or_path evaluated on the validation data, the
// results in output_dir (eval_results.json, all_results.json).
void run_eval_only(const JobCommand& cmd, TrainingArguments& args) {
  start_ranks(cmd, args);
  const bool zero = dist::rank() == 0;
  if (zero) train::check_output_dir_writable(args.output_dir);
  Job job = prepare_job(cmd, args, /*want_train=*/false, /*want_eval=*/true);
  Trainer trainer(job.model, args, nullptr, job.data.eval, job.options);
  Logs eval = trainer.evaluate();
  eval["eval_samples"] = static_cast<double>(job.data.eval->size());
  if (!zero) return;
  print_metrics("eval", eval);
  const fs::path dir = args.output_dir;
  write_metrics_json((dir / "eval_results.json").string(), eval);
  write_metrics_json((dir / "all_results.json").string(), eval);
}

void run_train(const FlagSet& flags, const CLI::App& app) {
  JobCommand cmd = parse_job_command(flags, app, "loom train");
  TrainingArguments args = cmd.training;
  // --do_predict is refused by name (make_job_flag_set).
  // transformers' scripts train only with --do_train; loom train trains
  // unless told --do_train false, which (as run_clm) needs --do_eval.
  args.do_train = !cmd.given.count("do_train") || args.do_train;
  args.validate();  // fail on bad arguments before loading any data
  check_early_stopping(cmd, args);
  if (!args.do_train) {
    LOOM_CHECK(args.do_eval, "[loom train] --do_train false: nothing to do without --do_eval ",
               "(as run_clm: --do_train false --do_eval evaluates --model_name_or_path)");
    run_eval_only(cmd, args);
    return;
  }
  start_ranks(cmd, args);  // launch.h: every rank of an mpirun job, same flags
  // One run per output_dir (train/output_dir_lock.h), held until the end;
  // data parallel: by rank 0, for the job (the others share the directory).
  const bool zero = dist::rank() == 0;
  std::optional<train::OutputDirLock> lock;
  if (zero) lock.emplace(args.output_dir, "loom train");
  // run_clm's early check, so a forgotten flag costs no tokenizing.
  if (!args.resume_from_checkpoint && !args.overwrite_output_dir) {
    if (auto last = get_last_checkpoint(args.output_dir))
      fail("[loom train] output_dir '", args.output_dir, "' already holds ",
           fs::path(*last).filename().string(),
           ": add --resume_from_checkpoint last to continue, or --overwrite_output_dir to start "
           "over");
  }
  if (zero) note_retired_names(cmd);
  Job job = prepare_job(cmd, args, /*want_train=*/true, /*want_eval=*/args.do_eval);
  if (zero) warn_batch_larger_than_data(args, job.data.train->size());
  if (zero) print_plan(job, args);
  check_job_memory(job, args);
  if (zero) {  // the job is sound: output_dir gets its files from here on
    remove_earlier_results(args.output_dir);
    write_run_args(cmd, args.output_dir);
  }
  Trainer trainer(job.model, args, job.data.train, job.data.eval, job.options);
  if (cmd.job.early_stopping_patience)
    trainer.add_callback(std::make_shared<EarlyStoppingCallback>(*cmd.job.early_stopping_patience,
                                                                 cmd.job.early_stopping_threshold));

  TrainOutput out = trainer.train();
  // --merge_lora: the adapter goes to output_dir/adapter, the merged model
  // (at the end, below) to output_dir. Rank 0 only (data parallel).
  trainer.save_model(cmd.job.merge_lora ? (fs::path(args.output_dir) / "adapter").string() : "");
  Logs train_metrics = out.metrics;
  train_metrics["train_samples"] = static_cast<double>(job.data.train->size());
  const fs::path dir = args.output_dir;
  if (zero) {
    print_metrics("train", train_metrics);
    write_metrics_json((dir / "train_results.json").string(), train_metrics);
  }
  trainer.save_state();

  Logs all = train_metrics;
  if (args.do_eval && job.data.eval) {
    Logs eval = last_step_evaluation(trainer);
    if (eval.empty()) eval = trainer.evaluate();  // every rank: a collective at the end
    eval["eval_samples"] = static_cast<double>(job.data.eval->size());
    if (zero) {
      print_metrics("eval", eval);
      write_metrics_json((dir / "eval_results.json").string(), eval);
    }
    all.insert(eval.begin(), eval.end());
  }
  if (!zero) return;  // data parallel: the files below are rank 0's
  write_metrics_json((dir / "all_results.json").string(), all);
  if (cmd.job.merge_lora) {
    save_merged_lora(*job.model, args.output_dir, job.tokenizer_dir);
    std::printf("wrote merged LoRA weights to %s (adapter in %s/adapter)\n",
                args.output_dir.c_str(), args.output_dir.c_str());
  }
  write_text((dir / "lazy_metrics.json").string(), metrics::report_json());
  if (args.reports_to("tensorboard")) {
    // The model is saved by now: a plot that fails warns instead of failing
    // the whole job.
    try {
      if (has_logged_values(trainer.state()))
        for (const std::string& f : write_run_plots(args.output_dir))
          std::printf("wrote %s\n", f.c_str());
    } catch (const Error& e) {
      std::fprintf(stderr, "loom: warning: training curves not written: %s\n", e.what());
    }
    std::printf("TensorBoard event files in %s\n", args.logging_dir->c_str());
  }
}

}  // namespace

void add_train_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "train", "Train or fine-tune a causal LM (" + model_types_for_task(kTaskCausalLM) +
                   "), masked LM (" + model_types_for_task(kTaskMaskedLM) +
                   ") or text classifier (" + model_types_for_task(kTaskTextClassification) +
                   "), full or LoRA (transformers' run_clm, run_mlm, run_glue)");
  auto flags = std::make_shared<FlagSet>(make_job_flag_set("loom train"));
  flags->add_to(*cmd);
  cmd->footer(
      "Example:\n  loom train --model_type gpt2 --config_overrides n_layer=2,n_embd=64,n_head=2 "
      "\\\n"
      "    --tokenizer_name assets/tokenizers/gpt2 --train_file corpus.txt --block_size 64 \\\n"
      "    --output_dir out --max_steps 100\nDefaults are those of transformers 5's "
      "TrainingArguments, except --device lazy and --report_to all (transformers 5: none, so "
      "loom writes TensorBoard files and training_curves.svg unless --report_to none). "
      "--warmup_ratio, --logging_dir, --overwrite_output_dir and --save_safetensors are "
      "transformers 4 names that loom still reads. See docs/cli.md.");
  cmd->callback([flags, cmd] { run_train(*flags, *cmd); });
}

}  // namespace loom::cli
