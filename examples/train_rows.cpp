// examples/train_rows.cpp: the training job as a library call (loom/job.h,
// docs/jobs.md) on rows held in memory: a tiny GPT-2 from scratch on a
// vector of texts, then a tiny BERT classifier on JSON rows, each built with
// loom::build_job exactly as `loom train` builds its job from files.
//
// Assumes TOKENIZERS holds gpt2/ and bert-base-uncased/ (assets/tokenizers).
//
//   build/example_train_rows TOKENIZERS OUTPUT_DIR [max_steps (20)]
//
// Prints the training loss of the first and last logged steps (it must fall)
// and the classifier's evaluation accuracy.
#include <cstdio>
#include <string>
#include <vector>

#include "loom/error.h"
#include "loom/job.h"
#include "loom/model_registry.h"
#include "loom/trainer.h"

namespace {

loom::TrainingArguments quiet_args(const std::string& output_dir, int64_t max_steps) {
  loom::TrainingArguments args;
  args.output_dir = output_dir;
  args.overwrite_output_dir = true;
  args.device = "lazy";
  args.max_steps = max_steps;
  args.learning_rate = 3e-3;
  args.logging_steps = 1;
  args.save_strategy = "no";
  args.report_to = "none";
  args.disable_tqdm = true;
  return args;
}

// A causal LM from scratch on texts in memory; returns the first and last logged losses.
std::pair<double, double> train_on_texts(const std::string& tokenizers, const std::string& out,
                                         int64_t max_steps) {
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i)
    texts.push_back("It is a truth universally acknowledged, that a single man in possession " +
                    std::string("of a good fortune, must be in want of a wife. ") +
                    std::to_string(i % 4));
  loom::JobArguments job;
  job.model_type = "gpt2";
  job.config_overrides = "n_layer=1,n_embd=32,n_head=2,n_positions=32";
  job.tokenizer_name = tokenizers + "/gpt2";
  job.train_rows = loom::DataRows::texts(texts);
  job.block_size = 16;
  loom::TrainingArguments args = quiet_args(out + "/causal_lm", max_steps);
  loom::Job built = loom::build_job(job, args, {.want_eval = false});
  loom::Trainer trainer(built.model, args, built.data.train, nullptr, built.options);
  trainer.train();
  std::vector<double> losses;
  for (const loom::Logs& l : trainer.state().log_history)
    if (l.count("loss")) losses.push_back(l.at("loss"));
  if (losses.size() < 2) throw loom::Error("fewer than two logged losses");
  return {losses.front(), losses.back()};
}

// A 2-class classifier on JSON rows (text + label), evaluated on a held-back 25%.
double classify_json_rows(const std::string& tokenizers, const std::string& out,
                          int64_t max_steps) {
  std::vector<std::string> rows;
  for (int i = 0; i < 32; ++i)
    rows.push_back(i % 2 ? R"({"text": "a fine and happy day", "label": "positive"})"
                         : R"({"text": "a dull and gloomy night", "label": "negative"})");
  loom::JobArguments job;
  job.task = loom::kTaskTextClassification;
  job.model_type = "bert";
  job.config_overrides =
      "num_hidden_layers=1,hidden_size=32,intermediate_size=64,num_attention_heads=2,"
      "max_position_embeddings=32";
  job.tokenizer_name = tokenizers + "/bert-base-uncased";
  job.train_rows = loom::DataRows::json(rows);
  job.validation_split_percentage = 25;
  job.max_seq_length = 16;
  loom::TrainingArguments args = quiet_args(out + "/classifier", max_steps);
  loom::Job built = loom::build_job(job, args);
  loom::Trainer trainer(built.model, args, built.data.train, built.data.eval, built.options);
  trainer.train();
  return trainer.evaluate().at("eval_accuracy");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZERS OUTPUT_DIR [max_steps (20)]\n", argv[0]);
    return 2;
  }
  try {
    const int64_t max_steps = argc > 3 ? std::stoll(argv[3]) : 20;
    auto [first, last] = train_on_texts(argv[1], argv[2], max_steps);
    std::printf("causal-lm on 64 texts in memory: loss %.4f at the first step, %.4f at the last\n",
                first, last);
    if (!(last < first)) throw loom::Error("the loss did not fall");
    const double accuracy = classify_json_rows(argv[1], argv[2], max_steps);
    std::printf("text-classification on 32 JSON rows: eval accuracy %.2f\n", accuracy);
    return 0;
  } catch (const std::exception& e) {  // loom::Error, or a bad number
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
