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
// The first tenth of the blocks is held back for evaluation. Prints the
// Trainer's log lines and the eval perplexity before and after training.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "loom/causal_lm.h"
#include "loom/collator.h"
#include "loom/dataset.h"
#include "loom/error.h"
#include "loom/pretrained_model.h"
#include "loom/tokenizer.h"
#include "loom/trainer.h"

namespace {

// run_clm's group_texts: every line's ids concatenated, cut into blocks; the
// first tenth of the blocks (at least one) is the eval set.
void load_blocks(const std::string& path, const loom::Tokenizer& tokenizer, int64_t block_size,
                 std::shared_ptr<loom::data::InMemoryDataset>& train,
                 std::shared_ptr<loom::data::InMemoryDataset>& eval) {
  loom::data::TokenizeFn tokenize = [&](const std::string& text) {
    std::vector<int32_t> ids = tokenizer.encode(text).ids;
    return std::vector<int64_t>(ids.begin(), ids.end());
  };
  auto blocks = loom::data::text_blocks_dataset(path, tokenize, {.block_size = block_size});
  const int64_t n_eval = std::max<int64_t>(1, blocks.size() / 10);
  if (blocks.size() < 2 * n_eval)
    throw loom::Error(path + ": too little text for " + std::to_string(block_size) +
                      "-token blocks (need at least 2)");
  std::vector<loom::data::Example> a, b;
  for (int64_t i = 0; i < blocks.size(); ++i) (i < n_eval ? b : a).push_back(blocks.at(i));
  train = std::make_shared<loom::data::InMemoryDataset>(std::move(a));
  eval = std::make_shared<loom::data::InMemoryDataset>(std::move(b));
}

int run(const std::string& model_dir, const std::string& train_txt, const std::string& output_dir,
        int64_t max_steps, int64_t block_size) {
  loom::Tokenizer tokenizer = loom::Tokenizer::from_pretrained(model_dir);
  std::shared_ptr<loom::data::InMemoryDataset> train_ds, eval_ds;
  load_blocks(train_txt, tokenizer, block_size, train_ds, eval_ds);
  // The architecture comes from config.json through the model registry.
  auto model = loom::auto_from_pretrained(model_dir);
  if (!std::dynamic_pointer_cast<loom::CausalLM>(model))
    throw loom::Error(model_dir + ": " + model->architecture() + " is not a causal LM");
  std::printf("fine-tuning %s from %s: %lld train / %lld eval blocks of %lld tokens\n",
              model->architecture().c_str(), model_dir.c_str(),
              static_cast<long long>(train_ds->size()), static_cast<long long>(eval_ds->size()),
              static_cast<long long>(block_size));

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
  args.prediction_loss_only = true;  // perplexity needs only the loss
  args.disable_tqdm = true;

  loom::Trainer trainer(model, args, train_ds, eval_ds,
                        {.data_collator = std::make_shared<loom::data::CausalLMCollator>(),
                         .tokenizer_dir = model_dir,
                         .compute_metrics = loom::perplexity_metrics});
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
