// examples/finetune_gpt2.cpp: fine-tunes a pretrained causal LM (GPT-2, or
// any causal-lm model of the registry: Llama, Qwen2) on a text file with the
// Trainer, as transformers' run_clm.py does, and writes the files `loom
// train` writes, so `loom plot OUTPUT_DIR` and `loom inspect OUTPUT_DIR` work
// on the result: the model (config.json, model.safetensors, tokenizer files,
// training_args.json), trainer_state.json, train_results.json,
// eval_results.json, all_results.json, lazy_metrics.json and TensorBoard's
// runs/.
//
// Assumes MODEL_DIR is a save_pretrained directory with its tokenizer files
// (a `loom train` output, or a Hugging Face snapshot of gpt2).
//
//   build/example_finetune_gpt2 MODEL_DIR TRAIN_TXT OUTPUT_DIR [max_steps (100)] [block_size (64)]
//
// The first tenth of the lines is held back for evaluation (run_clm's
// validation_split_percentage). Prints the Trainer's log lines and the eval
// perplexity before and after training. The data, collator and model come
// from loom::build_job (loom/job.h), as for `loom train`.
#include <cstdio>
#include <memory>
#include <string>

#include "loom/causal_lm.h"
#include "loom/error.h"
#include "loom/job.h"
#include "loom/model_registry.h"
#include "loom/trainer.h"

namespace {

int run(const std::string& model_dir, const std::string& train_txt, const std::string& output_dir,
        int64_t max_steps, int64_t block_size) {
  loom::JobArguments job;  // run_clm's ModelArguments and DataTrainingArguments
  job.task = loom::kTaskCausalLM;
  job.model_name_or_path = model_dir;  // its architecture comes from config.json
  job.train_file = train_txt;
  job.validation_split_percentage = 10;
  job.block_size = block_size;
  loom::TrainingArguments args;  // transformers' defaults, then run_clm-like choices
  args.output_dir = output_dir;
  args.overwrite_output_dir = true;
  args.device = "lazy";
  args.per_device_train_batch_size = 4;
  args.per_device_eval_batch_size = 4;
  args.dataloader_drop_last = true;  // one batch shape: one compiled training step
  args.learning_rate = 5e-4;
  args.max_steps = max_steps;
  args.logging_steps = std::max<int64_t>(1, max_steps / 5);
  args.eval_strategy = "steps";
  args.eval_steps = static_cast<double>(std::max<int64_t>(1, max_steps / 2));
  args.save_strategy = "no";
  args.disable_tqdm = true;
  // Blocks, the collator and perplexity as compute_metrics (build_job sets
  // prediction_loss_only: perplexity needs only the loss).
  loom::Job built = loom::build_job(job, args);
  const auto& train_ds = built.data.train;
  const auto& eval_ds = built.data.eval;
  std::printf("fine-tuning %s from %s: %lld train / %lld eval blocks of %lld tokens\n",
              built.model->architecture().c_str(), model_dir.c_str(),
              static_cast<long long>(train_ds->size()), static_cast<long long>(eval_ds->size()),
              static_cast<long long>(block_size));

  loom::Trainer trainer(built.model, args, train_ds, eval_ds, built.options);
  const double before = trainer.evaluate().at("eval_perplexity");
  loom::TrainOutput out = trainer.train();
  trainer.save_model();
  loom::Logs train_metrics = out.metrics;
  train_metrics["train_samples"] = static_cast<double>(train_ds->size());
  trainer.save_metrics("train", train_metrics);
  trainer.save_state();
  loom::Logs eval = trainer.evaluate();
  eval["eval_samples"] = static_cast<double>(eval_ds->size());
  trainer.save_metrics("eval", eval);
  std::printf("eval perplexity: %.2f before, %.2f after %lld steps; wrote %s\n", before,
              eval.at("eval_perplexity"), static_cast<long long>(out.global_step),
              output_dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s MODEL_DIR TRAIN_TXT OUTPUT_DIR [max_steps (100)] [block_size (64)]\n",
                 argv[0]);
    return 2;
  }
  try {
    int64_t max_steps = argc > 4 ? std::stoll(argv[4]) : 100;
    int64_t block_size = argc > 5 ? std::stoll(argv[5]) : 64;
    return run(argv[1], argv[2], argv[3], max_steps, block_size);
  } catch (const std::exception& e) {  // loom::Error, or a bad number
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
