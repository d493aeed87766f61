// examples/finetune_sentiment.cpp: fine-tunes a pretrained BERT
// (all-MiniLM-L6-v2) for sentence sentiment with loom's C++ API, as
// transformers' run_glue.py does in Python: the job (tokenized CSV files, the
// pretrained encoder with a fresh 2-class head, the collator and the
// accuracy/F1 metrics) from loom::build_job, then evaluate, train, evaluate.
//
// Assumes scripts/fetch_finetune.sh has put the weights in
// assets/finetune/minilm/ and the data (CSV with columns "sentence" and
// "label", 0 = negative, 1 = positive) in assets/finetune/data/.
//
//   build/example_finetune_sentiment [model_dir] [data_dir] [output_dir] [num_train_epochs (3)]
//
// Prints the eval accuracy of the untrained head ("before") and of the
// fine-tuned model ("after"), and saves the model to output_dir with the
// files `loom train` writes (trainer_state.json, train_results.json,
// eval_results.json, all_results.json, lazy_metrics.json, runs/), so `loom
// plot output_dir` and `loom inspect output_dir` work on it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "loom/error.h"
#include "loom/job.h"
#include "loom/model_registry.h"
#include "loom/trainer.h"

namespace {

int run(const std::string& model_dir, const std::string& data_dir, const std::string& output_dir,
        double epochs) {
  auto start = std::chrono::steady_clock::now();
  // The job as run_glue.py sets it up (loom/job.h): the CSV files tokenized
  // as [CLS] sentence [SEP], cut and padded to 64 tokens (99% of the
  // sentences have <= 56), so every batch has one shape: one compiled graph
  // for the training step and one for evaluation. The checkpoint is a bare
  // BertModel: the encoder and pooler load, the classifier head starts at
  // random, as AutoModelForSequenceClassification does (num_labels 2, from
  // the labels of the training file).
  loom::JobArguments job;
  job.task = loom::kTaskTextClassification;
  job.model_name_or_path = model_dir;
  job.train_file = data_dir + "/train.csv";
  job.validation_file = data_dir + "/eval.csv";
  job.text_column = "sentence";
  job.label_column = "label";
  job.max_seq_length = 64;
  job.pad_to_max_length = true;

  loom::TrainingArguments args;
  args.output_dir = output_dir;
  args.overwrite_output_dir = true;
  args.device = "lazy";  // trace + compile once, then replay the compiled step
  args.per_device_train_batch_size = 16;
  args.per_device_eval_batch_size = 50;  // 800 / 50: every eval batch has one shape
  args.learning_rate = 5e-5;
  args.num_train_epochs = epochs;  // 3: 600 optimizer steps
  args.warmup_steps = 0.1;  // a ratio of all steps (transformers 5; warmup_ratio in 4)
  args.weight_decay = 0.01;
  args.save_strategy = "no";
  args.seed = 42;
  loom::Job built = loom::build_job(job, args);
  const int64_t train_size = built.data.train->size();
  const int64_t eval_size = built.data.eval->size();
  std::printf("train: %lld sentences, eval: %lld sentences\n", static_cast<long long>(train_size),
              static_cast<long long>(eval_size));
  // Every 25 steps (a small data set: at least 4 logs per epoch).
  args.logging_steps = std::clamp<int64_t>(train_size / 16 / 4, 1, 25);
  loom::Trainer trainer(built.model, args, built.data.train, built.data.eval, built.options);

  loom::Logs before = trainer.evaluate();
  loom::TrainOutput out = trainer.train();
  loom::Logs after = trainer.evaluate();
  trainer.save_model();
  // The results files of `loom train` (transformers' save_metrics / save_state).
  out.metrics["train_samples"] = static_cast<double>(train_size);
  trainer.save_metrics("train", out.metrics);
  after["eval_samples"] = static_cast<double>(eval_size);
  trainer.save_metrics("eval", after);
  trainer.save_state();

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("accuracy before fine-tuning: %.4f (untrained classifier head)\n",
              before.at("eval_accuracy"));
  std::printf("accuracy after fine-tuning:  %.4f (f1 %.4f, eval_loss %.4f)\n",
              after.at("eval_accuracy"), after.at("eval_f1"), after.at("eval_loss"));
  std::printf("saved to %s in %.0f s\n", output_dir.c_str(), seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir = argc > 1 ? argv[1] : "assets/finetune/minilm";
  std::string data_dir = argc > 2 ? argv[2] : "assets/finetune/data";
  std::string output_dir = argc > 3 ? argv[3] : "out/finetune_sentiment";
  try {
    double epochs = argc > 4 ? std::stod(argv[4]) : 3;
    return run(model_dir, data_dir, output_dir, epochs);
  } catch (const std::exception& e) {  // loom::Error, or a bad number
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
