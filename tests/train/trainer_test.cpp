// The Trainer's numbers: gradient accumulation normalised by label tokens
// equals one big batch (and the naive mean of micro-batch means does not);
// logged loss / learning_rate / epoch as transformers computes them; the
// evaluation loss as the batch-size-weighted mean of batch losses, computed
// here without the Trainer; predictions and labels gathered with -100
// padding; classification metrics end to end; a bf16 run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/scoped_env.h"
#include "loom/bert.h"
#include "ops/compare.h"
#include "train/train_test_util.h"

namespace loom {
namespace {

TrainingArguments accum_args(const std::string& dir, int64_t bs, int64_t ga) {
  TrainingArguments a = testing::quiet_args(dir);
  a.per_device_train_batch_size = bs;
  a.gradient_accumulation_steps = ga;
  a.max_steps = 4;
  a.logging_steps = 1;
  a.optim = "sgd";  // the update is the gradient itself: no Adam normalisation
  a.learning_rate = 0.5;
  a.max_grad_norm = 0;  // no clipping (the norm is still logged)
  a.lr_scheduler_type = "constant";
  return a;
}

// Averages micro-batch means instead of weighting by label tokens.
class NaiveTrainer : public Trainer {
 public:
  using Trainer::Trainer;
  Tensor compute_loss(PretrainedModel& model, const ModelInputs& in, const Tensor& n) override {
    return model.forward(in).loss / 2.0;
  }
};

TEST(TrainerNumbers, GradientAccumulationEqualsOneBigBatch) {
  testing::TempDir d1, d2, d3;
  auto data = testing::token_dataset(16, 0, /*varying=*/true);  // 3..8 tokens each
  Trainer big(testing::tiny_gpt2(3), accum_args(d1.path(), 4, 1), data);
  Trainer accum(testing::tiny_gpt2(3), accum_args(d2.path(), 2, 2), data);
  NaiveTrainer naive(testing::tiny_gpt2(3), accum_args(d3.path(), 2, 2), data);
  for (Trainer* t : {&big, &accum, static_cast<Trainer*>(&naive)}) {
    testing::silence(*t);
    t->train();
  }
  auto loss_big = testing::logged(big.state(), "loss"),
       loss_acc = testing::logged(accum.state(), "loss");
  auto norm_big = testing::logged(big.state(), "grad_norm");
  auto norm_acc = testing::logged(accum.state(), "grad_norm");
  auto norm_naive = testing::logged(naive.state(), "grad_norm");
  ASSERT_EQ(loss_big.size(), 4u);
  ASSERT_EQ(loss_acc.size(), 4u);
  double naive_gap = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(loss_acc[i].second, loss_big[i].second, 1e-5 * loss_big[i].second)
        << "step " << i + 1;
    EXPECT_NEAR(norm_acc[i].second, norm_big[i].second, 1e-4 * norm_big[i].second)
        << "step " << i + 1;
    naive_gap = std::max(naive_gap,
                         std::fabs(norm_naive[i].second - norm_big[i].second) / norm_big[i].second);
  }
  EXPECT_GT(naive_gap, 1e-3) << "the data must make token weighting matter";
  auto pb = testing::snapshot(big.model()), pa = testing::snapshot(accum.model());
  for (const auto& [name, v] : pb)
    for (size_t i = 0; i < v.size(); ++i)
      ASSERT_NEAR(pa.at(name)[i], v[i], 1e-5) << name << "[" << i << "]";
}

TEST(TrainerNumbers, LoggedValuesFollowTransformers) {
  testing::TempDir d1, d2;
  auto make = [&](const std::string& dir, double logging_steps) {
    TrainingArguments a = testing::quiet_args(dir);
    a.per_device_train_batch_size = 4;
    a.max_steps = 6;
    a.warmup_steps = 2;
    a.logging_steps = logging_steps;
    return a;
  };
  auto data = testing::token_dataset(16);
  Trainer every(testing::tiny_gpt2(4), make(d1.path(), 1), data);
  Trainer pairs(testing::tiny_gpt2(4), make(d2.path(), 2), data);
  testing::silence(every);
  testing::silence(pairs);
  every.train();
  pairs.train();
  auto l1 = testing::logged(every.state(), "loss"), l2 = testing::logged(pairs.state(), "loss");
  ASSERT_EQ(l1.size(), 6u);
  ASSERT_EQ(l2.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(l2[i].first, 2 * static_cast<int64_t>(i) + 2);
    // The mean of the step losses since the previous log.
    EXPECT_NEAR(l2[i].second, (l1[2 * i].second + l1[2 * i + 1].second) / 2, 1e-6);
  }
  // transformers' linear schedule with 2 warm-up steps of 6: the rate each step used.
  const double base = 1e-2, want[6] = {0, 0.5, 1.0, 0.75, 0.5, 0.25};
  auto lr = testing::logged(every.state(), "learning_rate");
  for (size_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(lr[i].second, base * want[i]) << "step " << i + 1;
  // Epochs: 4 batches per epoch.
  auto ep = testing::logged(every.state(), "epoch");
  for (size_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(ep[i].second, (i + 1) / 4.0);
  // The train metrics, named as transformers names them.
  const Logs& last = every.state().log_history.back();
  for (const char* k : {"train_runtime", "train_samples_per_second", "train_steps_per_second",
                        "total_flos", "train_loss", "epoch"})
    EXPECT_TRUE(last.count(k)) << k;
  double mean = 0;
  for (auto [s, v] : l1) mean += v / 6;
  EXPECT_NEAR(last.at("train_loss"), mean, 1e-6);
  EXPECT_GT(last.at("total_flos"), 0);
}

// Pads and runs batches of `bs` in order, without the Trainer.
double manual_eval_loss(PretrainedModel& model, const data::InMemoryDataset& ds, int64_t bs) {
  NoGradGuard ng;
  model.eval();
  data::PaddingCollator collate;
  double sum = 0;
  for (int64_t i = 0; i < ds.size(); i += bs) {
    std::vector<data::Example> part;
    for (int64_t j = i; j < std::min(i + bs, ds.size()); ++j) part.push_back(ds.at(j));
    data::Batch b = collate.collate(part);
    ModelInputs in{.input_ids = b.at("input_ids"),
                   .attention_mask = b.at("attention_mask"),
                   .labels = b.at("labels")};
    sum += model.forward(in).loss.item() * static_cast<double>(part.size());
  }
  return sum / static_cast<double>(ds.size());
}

TEST(TrainerNumbers, EvaluateWeightsBatchLossesByBatchSize) {
  testing::TempDir d;
  TrainingArguments a = testing::quiet_args(d.path());
  a.per_device_eval_batch_size = 4;
  auto eval = testing::token_dataset(10, 0, true);  // batches of 4, 4, 2
  Trainer t(testing::tiny_gpt2(5), a, nullptr, eval, {.compute_metrics = perplexity_metrics});
  testing::silence(t);
  Logs m = t.evaluate();
  const double want = manual_eval_loss(t.model(), *eval, 4);
  EXPECT_NEAR(m.at("eval_loss"), want, 1e-6);
  EXPECT_NEAR(m.at("eval_perplexity"), std::exp(want), 1e-5);
  for (const char* k :
       {"eval_runtime", "eval_samples_per_second", "eval_steps_per_second", "epoch"})
    EXPECT_TRUE(m.count(k)) << k;
  EXPECT_EQ(t.state().log_history.size(), 1u);
}

// Cross-entropy of next-token prediction over one example's logits [len, V]
// (labels shifted by one, as GPT2LMHeadModel): the sum and the token count.
std::pair<double, int64_t> next_token_loss(const std::vector<float>& logits, int64_t vocab,
                                           const std::vector<int64_t>& labels) {
  double total = 0;
  int64_t n = 0;
  for (size_t t = 0; t + 1 < labels.size(); ++t, ++n) {
    const float* row = logits.data() + t * vocab;
    double m = *std::max_element(row, row + vocab), z = 0;
    for (int64_t v = 0; v < vocab; ++v) z += std::exp(double(row[v]) - m);
    total += m + std::log(z) - row[labels[t + 1]];
  }
  return {total, n};
}

// predict() gathers the batches (each padded by the collator to its longest
// example: labels -100 there, logits whatever the model computes at the pad
// positions) and pads them to the longest of the whole set with -100
// (transformers' nested_concat padding_index). The real positions must be the
// model's own logits for that example, and test_loss the batch-size-weighted
// mean of the batch losses (evaluation_loop).
TEST(TrainerNumbers, PredictGathersPaddedLogitsAndLabels) {
  testing::TempDir d;
  TrainingArguments a = testing::quiet_args(d.path());
  a.per_device_eval_batch_size = 2;
  auto ds = testing::token_dataset(5, 0, true);  // lengths 3, 8, 7, 6, 5
  auto model = testing::tiny_gpt2(5);
  Trainer t(model, a);
  testing::silence(t);
  PredictionOutput p = t.predict(ds);
  const int64_t V = 32, T = 8;
  ASSERT_EQ(p.predictions.shape(), (Shape{5, T, V}));
  ASSERT_EQ(p.label_ids.shape(), (Shape{5, T}));
  std::vector<int64_t> labels = p.label_ids.to_vector<int64_t>();
  std::vector<float> logits = p.predictions.to_vector<float>();
  model->eval();
  NoGradGuard no_grad;
  double weighted_loss = 0;
  for (int64_t batch = 0; batch < 3; ++batch) {  // batches {0, 1}, {2, 3}, {4}
    double sum = 0;
    int64_t tokens = 0, size = 0, longest = 0;
    for (int64_t i = 2 * batch; i < std::min<int64_t>(5, 2 * batch + 2); ++i)
      longest = std::max<int64_t>(longest, ds->at(i).input_ids.size());
    for (int64_t i = 2 * batch; i < std::min<int64_t>(5, 2 * batch + 2); ++i, ++size) {
      const std::vector<int64_t>& ids = ds->at(i).input_ids;
      const int64_t len = static_cast<int64_t>(ids.size());
      ModelInputs in;
      in.input_ids = tensor_i64(ids, {1, len});
      std::vector<float> own = model->forward(in).logits.to_vector<float>();
      std::vector<float> got(logits.begin() + i * T * V, logits.begin() + (i * T + len) * V);
      EXPECT_TRUE(testing::all_close(std::vector<double>(got.begin(), got.end()),
                                     std::vector<double>(own.begin(), own.end()), 1e-5, 1e-5,
                                     "example " + std::to_string(i) + " logits"));
      for (int64_t s = 0; s < T; ++s) {
        EXPECT_EQ(labels[i * T + s], s < len ? ids[s] : -100) << "example " << i << " pos " << s;
        if (s >= longest)
          EXPECT_EQ(logits[(i * T + s) * V], -100.0f) << "example " << i << " pos " << s;
      }
      auto [l, n] = next_token_loss(own, V, ids);
      sum += l;
      tokens += n;
    }
    weighted_loss += sum / tokens * size;
  }
  ASSERT_TRUE(p.metrics.count("test_loss"));
  EXPECT_NEAR(p.metrics.at("test_loss"), weighted_loss / 5, 1e-4);
  EXPECT_TRUE(p.metrics.count("test_runtime"));
}

std::shared_ptr<data::InMemoryDataset> parity_dataset(int64_t n) {
  std::vector<data::Example> ex;
  for (int64_t i = 0; i < n; ++i) {
    data::Example e;
    e.input_ids = {1, 2 + (i * 5) % 20, 3, 4};
    e.label = e.input_ids[1] % 2;
    ex.push_back(e);
  }
  return std::make_shared<data::InMemoryDataset>(std::move(ex));
}

TEST(TrainerNumbers, ClassificationMetricsEndToEnd) {
  testing::TempDir d;
  BertConfig c;
  c.vocab_size = 32;
  c.hidden_size = 16;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.intermediate_size = 32;
  c.max_position_embeddings = 8;
  c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0;
  manual_seed(1);
  auto model = std::make_shared<BertForSequenceClassification>(c);
  TrainingArguments a = testing::quiet_args(d.path());
  a.per_device_train_batch_size = 8;
  a.num_train_epochs = 20;
  a.learning_rate = 3e-3;
  a.logging_steps = 50;
  Trainer t(model, a, parity_dataset(32), parity_dataset(32),
            {.compute_metrics = classification_metrics});
  testing::silence(t);
  t.train();
  Logs m = t.evaluate();
  PredictionOutput p = t.predict(parity_dataset(32));
  std::vector<float> logits = p.predictions.to_vector<float>();
  std::vector<int64_t> labels = p.label_ids.to_vector<int64_t>();
  ASSERT_EQ(labels.size(), 32u);
  int right = 0;
  for (size_t i = 0; i < labels.size(); ++i)
    right += (logits[2 * i + 1] > logits[2 * i] ? 1 : 0) == labels[i];
  EXPECT_DOUBLE_EQ(m.at("eval_accuracy"), right / 32.0);
  EXPECT_DOUBLE_EQ(p.metrics.at("test_accuracy"), right / 32.0);
  EXPECT_GE(m.at("eval_accuracy"), 0.9) << "parity of one token is learnable";
  EXPECT_TRUE(m.count("eval_f1"));
}

TEST(TrainerNumbers, Bf16TrainsCloseToF32) {
  testing::ScopedEnv native("LOOM_AUTOCAST_NATIVE", "1");  // the bf16 path on any CPU
  testing::TempDir d1, d2;
  auto run = [](const std::string& dir, bool bf16) {
    TrainingArguments a = testing::quiet_args(dir);
    a.per_device_train_batch_size = 4;
    a.max_steps = 3;
    a.logging_steps = 1;
    a.bf16 = bf16;
    Trainer t(testing::tiny_gpt2(6), a, testing::token_dataset(12));
    testing::silence(t);
    t.train();
    return testing::logged(t.state(), "loss");
  };
  auto f32 = run(d1.path(), false), bf = run(d2.path(), true);
  ASSERT_EQ(bf.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(bf[i].second, f32[i].second, 0.05 * f32[i].second);
    if (i == 0) EXPECT_NE(bf[i].second, f32[i].second) << "bf16 matmuls change the numbers";
  }
}

// On a device without native bf16 matmuls, --bf16 keeps the f32 path
// (choose_autocast): the losses are exactly the f32 run's.
TEST(TrainerNumbers, Bf16WithoutNativeBf16RunsF32) {
  testing::ScopedEnv native("LOOM_AUTOCAST_NATIVE", "0");
  testing::TempDir d1, d2;
  auto run = [](const std::string& dir, bool bf16) {
    TrainingArguments a = testing::quiet_args(dir);
    a.per_device_train_batch_size = 4;
    a.max_steps = 2;
    a.logging_steps = 1;
    a.bf16 = bf16;
    Trainer t(testing::tiny_gpt2(6), a, testing::token_dataset(12));
    testing::silence(t);
    t.train();
    return testing::logged(t.state(), "loss");
  };
  auto f32 = run(d1.path(), false), bf = run(d2.path(), true);
  ASSERT_EQ(bf.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(bf[i].second, f32[i].second) << "step " << i;
}

}  // namespace
}  // namespace loom
