// The transformers TrainingArguments names loom added for users' habits:
// label_smoothing_factor gives transformers' LabelSmoother loss (computed here
// by hand from the logits: (1 - f) * NLL + f * mean over classes of -log p,
// labels shifted), save_safetensors=false is refused naming the reason,
// use_cpu refuses a non-cpu backend, run_name defaults to output_dir and
// travels in training_args.json; include_num_input_tokens_seen counts the
// input tokens as transformers; lr_scheduler_kwargs reach the schedule.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "loom/ops.h"
#include "train/train_test_util.h"

namespace loom {
namespace {

// transformers' LabelSmoother on host logits [B, T, V] and ids [B, T] (labels = ids).
double label_smoothed_loss_by_hand(const std::vector<float>& logits,
                                   const std::vector<int64_t>& ids, int64_t b, int64_t t, int64_t v,
                                   double f) {
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j + 1 < t; ++j) {
      const float* row = &logits[static_cast<size_t>((i * t + j) * v)];
      double mx = row[0];
      for (int64_t c = 1; c < v; ++c) mx = std::max(mx, static_cast<double>(row[c]));
      double z = 0;
      for (int64_t c = 0; c < v; ++c) z += std::exp(row[c] - mx);
      const double log_z = mx + std::log(z);
      double mean_neg_logp = 0;
      for (int64_t c = 0; c < v; ++c) mean_neg_logp += (log_z - row[c]) / static_cast<double>(v);
      const double nll = log_z - row[ids[static_cast<size_t>(i * t + j + 1)]];
      total += (1 - f) * nll + f * mean_neg_logp;
      ++count;
    }
  }
  return total / static_cast<double>(count);
}

TEST(HfHabitArgs, LabelSmoothingFactorIsTransformersLabelSmoother) {
  testing::TempDir dir;
  auto model = testing::tiny_gpt2(3);
  TrainingArguments args = testing::quiet_args(dir.path());
  args.label_smoothing_factor = 0.1;
  Trainer trainer(model, args);
  const int64_t b = 2, t = 6, v = 32;
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < b * t; ++i) ids.push_back((i * 11 + 5) % v);
  ModelInputs in;
  in.input_ids = tensor_i64(ids, {b, t});
  in.labels = in.input_ids;
  const double smoothed = trainer.compute_loss(*model, in, Tensor()).item();
  ModelInputs no_labels;
  no_labels.input_ids = in.input_ids;
  std::vector<float> logits = model->forward(no_labels).logits.to_vector<float>();
  EXPECT_NEAR(smoothed, label_smoothed_loss_by_hand(logits, ids, b, t, v, 0.1), 1e-5);
  // Not the model's plain loss (f = 0 by hand).
  EXPECT_GT(std::fabs(smoothed - model->forward(in).loss.item()), 1e-4);  // float noise: 1e-6
  EXPECT_NEAR(model->forward(in).loss.item(), label_smoothed_loss_by_hand(logits, ids, b, t, v, 0),
              1e-5);
}

// HF's prediction_step computes eval_loss through compute_loss, so it is the
// label-smoothed loss too.
TEST(HfHabitArgs, LabelSmoothingFactorAppliesToEvalLoss) {
  testing::TempDir dir;
  auto model = testing::tiny_gpt2(3);
  TrainingArguments args = testing::quiet_args(dir.path());
  args.label_smoothing_factor = 0.1;
  args.per_device_eval_batch_size = 4;
  const int64_t b = 4, t = 6, v = 32;
  Trainer trainer(model, args, nullptr, testing::token_dataset(b, t));
  testing::silence(trainer);
  const double eval_loss = trainer.evaluate().at("eval_loss");
  std::vector<int64_t> ids;  // token_dataset's examples
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < t; ++j) ids.push_back((i * 7 + j * 3 + (i * j) % 5) % 32);
  ModelInputs in;
  in.input_ids = tensor_i64(ids, {b, t});
  std::vector<float> logits = model->forward(in).logits.to_vector<float>();
  EXPECT_NEAR(eval_loss, label_smoothed_loss_by_hand(logits, ids, b, t, v, 0.1), 1e-5);
  EXPECT_GT(std::fabs(eval_loss - label_smoothed_loss_by_hand(logits, ids, b, t, v, 0)), 1e-4);
}

TEST(HfHabitArgs, RefusedValuesNameTheArgumentAndTheReason) {
  auto message = [](TrainingArguments a) {
    try {
      a.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  TrainingArguments a;
  a.save_safetensors = false;
  EXPECT_NE(message(a).find("save_safetensors: false is not supported: safetensors is the only"),
            std::string::npos)
      << message(a);
  TrainingArguments c;
  c.use_cpu = true;
  c.device = "lazy:sim";
  EXPECT_NE(message(c).find("use_cpu: device 'lazy:sim' runs on the sim backend"),
            std::string::npos)
      << message(c);
  c.device = "lazy";
  EXPECT_EQ(message(c), "no error");
  TrainingArguments s;
  s.label_smoothing_factor = 1.0;
  EXPECT_NE(message(s).find("label_smoothing_factor: expected a value in [0, 1), got 1"),
            std::string::npos)
      << message(s);
}

TEST(HfHabitArgs, RunNameDefaultsToOutputDirAndIsSaved) {
  TrainingArguments a;
  a.output_dir = "out/x";
  a.validate();
  EXPECT_EQ(a.run_name.value_or(""), "out/x");
  a.set("run_name", "my-run");
  EXPECT_NE(a.to_json().find("\"run_name\": \"my-run\""), std::string::npos);
  EXPECT_EQ(TrainingArguments::from_json(a.to_json()).run_name.value_or(""), "my-run");
}

// transformers' save_metrics writes json.dump(metrics, indent=4, sort_keys=True)
// to <split>_results.json and merges the metrics into all_results.json.
TEST(HfHabitArgs, SaveMetricsWritesTheResultsFilesOfLoomTrain) {
  testing::TempDir dir;
  Trainer trainer(testing::tiny_gpt2(1), testing::quiet_args(dir.path()));
  trainer.save_metrics("train", {{"train_loss", 2.5}, {"epoch", 1.0}});
  trainer.save_metrics("eval", {{"eval_loss", 3.25}, {"epoch", 1.0}});
  auto read = [&](const std::string& name) {
    std::ifstream in(dir.sub(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(read("train_results.json"), "{\n    \"epoch\": 1.0,\n    \"train_loss\": 2.5\n}\n");
  EXPECT_EQ(read("eval_results.json"), "{\n    \"epoch\": 1.0,\n    \"eval_loss\": 3.25\n}\n");
  EXPECT_EQ(read("all_results.json"),
            "{\n    \"epoch\": 1.0,\n    \"eval_loss\": 3.25,\n    \"train_loss\": 2.5\n}\n");
}

// transformers' include_num_input_tokens_seen: every training micro-batch's
// input_ids.numel() (padding included) is added to state.num_input_tokens_seen
// and every log entry carries the running count (Trainer.log).
TEST(HfHabitArgs, IncludeNumInputTokensSeenCountsEveryMicroBatch) {
  testing::TempDir dir;
  TrainingArguments a = testing::quiet_args(dir.path());
  a.per_device_train_batch_size = 4;
  a.gradient_accumulation_steps = 2;
  a.max_steps = 2;
  a.logging_steps = 1;
  a.set("include_num_input_tokens_seen", "true");
  Trainer t(testing::tiny_gpt2(1), a, testing::token_dataset(16, 8));
  testing::silence(t);
  t.train();
  EXPECT_EQ(t.state().num_input_tokens_seen, 2 * 2 * 4 * 8);  // steps x micro-batches x [4, 8]
  std::vector<double> logged;
  for (const Logs& l : t.state().log_history)
    if (l.count("loss")) logged.push_back(l.at("num_input_tokens_seen"));
  EXPECT_EQ(logged, (std::vector<double>{64, 128}));
  // Off (the default): the count stays 0 and no log carries it.
  TrainingArguments off = testing::quiet_args(dir.sub("off"));
  off.max_steps = 1;
  Trainer u(testing::tiny_gpt2(1), off, testing::token_dataset(16, 8));
  testing::silence(u);
  u.train();
  EXPECT_EQ(u.state().num_input_tokens_seen, 0);
  for (const Logs& l : u.state().log_history) EXPECT_EQ(l.count("num_input_tokens_seen"), 0u);
}

// transformers' lr_scheduler_kwargs: the schedule function's extra
// arguments. cosine with num_cycles 1 is back at the initial rate after the
// last step, where the default half cycle reaches 0.
TEST(HfHabitArgs, LrSchedulerKwargsReachTheSchedule) {
  testing::TempDir dir;
  auto last_lr = [&](const std::string& kwargs) {
    TrainingArguments a = testing::quiet_args(dir.sub(kwargs.empty() ? "plain" : "kw"));
    a.per_device_train_batch_size = 4;
    a.max_steps = 4;
    a.lr_scheduler_type = "cosine";
    if (!kwargs.empty()) a.set("lr_scheduler_kwargs", kwargs);
    Trainer t(testing::tiny_gpt2(1), a, testing::token_dataset(16, 8));
    testing::silence(t);
    t.train();
    return t.lr_scheduler()->get_last_lr()[0];
  };
  EXPECT_NEAR(last_lr(""), 0.0, 1e-12);
  EXPECT_NEAR(last_lr("{\"num_cycles\": 1}"), 1e-2, 1e-12);
  // get_scheduler's TypeError for an argument the schedule does not take.
  TrainingArguments a;
  a.output_dir = dir.path();
  a.lr_scheduler_kwargs = "{\"num_cycles\": 1}";
  EXPECT_EQ(std::string(testing::error_of([&] { a.validate(); })),
            "[TrainingArguments] lr_scheduler_kwargs: 'num_cycles' is not an argument of the "
            "linear schedule (it takes none)");
  a.lr_scheduler_type = "polynomial";
  a.lr_scheduler_kwargs = "{\"power\": \"2\"}";
  EXPECT_NE(std::string(testing::error_of([&] {
              a.validate();
            })).find("lr_scheduler_kwargs: power: expected a number"),
            std::string::npos);
  a.lr_scheduler_kwargs = "[1]";
  EXPECT_NE(std::string(testing::error_of([&] { a.validate(); })).find("expected a JSON object"),
            std::string::npos);
  a.lr_scheduler_kwargs = "{\"lr_end\": 0.0, \"power\": 2}";
  a.validate();  // polynomial takes both
}

}  // namespace
}  // namespace loom
