// examples/finetune_sentiment.cpp: fine-tunes a pretrained BERT
// (all-MiniLM-L6-v2) for sentence sentiment with loom's C++ API, as
// transformers' run_glue.py does in Python: load the tokenizer and the
// pretrained encoder, add a fresh 2-class head, evaluate, train, evaluate.
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
#include <memory>
#include <string>

#include "loom/collator.h"
#include "loom/dataset.h"
#include "loom/error.h"
#include "loom/models.h"
#include "loom/tokenizer.h"
#include "loom/trainer.h"

namespace {

constexpr int64_t kMaxSeqLength = 64;  // 99% of the sentences have <= 56 tokens

// One CSV file -> tokenized examples ([CLS] sentence [SEP], cut to 64 tokens).
std::shared_ptr<loom::data::InMemoryDataset> load_split(const std::string& csv,
                                                        const loom::Tokenizer& tokenizer) {
  loom::EncodeOptions opts = tokenizer.default_options();
  opts.truncation = loom::TruncationOptions{.max_length = kMaxSeqLength};
  opts.padding = std::nullopt;  // the collator pads each batch
  loom::data::TextEncoder encode = [&](const std::string& text, const std::string*) {
    loom::Encoding e = tokenizer.encode(text, opts);
    loom::data::Example ex;
    ex.input_ids.assign(e.ids.begin(), e.ids.end());
    ex.token_type_ids.assign(e.type_ids.begin(), e.type_ids.end());
    return ex;
  };
  return std::make_shared<loom::data::InMemoryDataset>(
      loom::data::table_dataset(csv, encode, {.text_column = "sentence", .label_column = "label"}));
}

int run(const std::string& model_dir, const std::string& data_dir, const std::string& output_dir,
        double epochs) {
  auto start = std::chrono::steady_clock::now();
  loom::Tokenizer tokenizer = loom::Tokenizer::from_pretrained(model_dir);
  auto train_ds = load_split(data_dir + "/train.csv", tokenizer);
  auto eval_ds = load_split(data_dir + "/eval.csv", tokenizer);
  std::printf("train: %lld sentences, eval: %lld sentences\n",
              static_cast<long long>(train_ds->size()), static_cast<long long>(eval_ds->size()));

  // The checkpoint is a bare BertModel: the encoder and pooler load, the
  // classifier head (classifier.weight/bias) starts at random, as
  // transformers' AutoModelForSequenceClassification does (num_labels 2).
  loom::manual_seed(42);
  auto model = loom::BertForSequenceClassification::from_pretrained(model_dir, loom::Device("cpu"),
                                                                    {.warn = false});

  loom::TrainingArguments args;
  args.output_dir = output_dir;
  args.overwrite_output_dir = true;
  args.device = "lazy";  // trace + compile once, then replay the compiled step
  args.per_device_train_batch_size = 16;
  args.per_device_eval_batch_size = 50;  // 800 / 50: every eval batch has one shape
  args.learning_rate = 5e-5;
  args.num_train_epochs = epochs;  // 3: 600 optimizer steps
  args.warmup_ratio = 0.1;
  args.weight_decay = 0.01;
  // Every 25 steps (a small data set: at least 4 logs per epoch).
  args.logging_steps = std::clamp<int64_t>(train_ds->size() / 16 / 4, 1, 25);
  args.save_strategy = "no";
  args.seed = 42;

  // Every batch is padded to 64 tokens: one shape, so one compiled graph for
  // the training step and one for evaluation.
  loom::data::PadOptions pad{.strategy = loom::data::PadOptions::Strategy::kMaxLength,
                             .max_length = kMaxSeqLength,
                             .pad_id = *tokenizer.token_to_id("[PAD]")};
  loom::Trainer trainer(model, args, train_ds, eval_ds,
                        {.data_collator = std::make_shared<loom::data::PaddingCollator>(pad),
                         .tokenizer_dir = model_dir,
                         .compute_metrics = loom::classification_metrics});

  loom::Logs before = trainer.evaluate();
  loom::TrainOutput out = trainer.train();
  loom::Logs after = trainer.evaluate();
  trainer.save_model();
  // The results files of `loom train` (transformers' save_metrics / save_state).
  out.metrics["train_samples"] = static_cast<double>(train_ds->size());
  trainer.save_metrics("train", out.metrics);
  after["eval_samples"] = static_cast<double>(eval_ds->size());
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
