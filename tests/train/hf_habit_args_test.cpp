// The transformers TrainingArguments names loom added for users' habits:
// label_smoothing_factor gives transformers' LabelSmoother loss (computed here
// by hand from the logits: (1 - f) * NLL + f * mean over classes of -log p,
// labels shifted), save_safetensors=false is refused naming the reason,
// use_cpu refuses a non-cpu backend, run_name defaults to output_dir and
// travels in training_args.json.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace loom
