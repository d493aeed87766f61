// Data-parallel padding samples count zero (issue 12), one process: a batch
// whose padding rows carry ignore_index labels (data::PaddingMaskCollator, as
// the Trainer's DistributedSampler loader makes them) gives, through
// Trainer::compute_loss with a window item count, the loss and gradients of
// the real rows alone; a batch made only of padding gives loss 0 and zero
// gradients, not the NaN of a mean over no tokens. The 2-rank runs are
// tests/cli/ddp_train_cli_test.cpp (DdpTrainCli.*Padding*).
#include <gtest/gtest.h>

#include <cmath>

#include "loom/bert.h"
#include "loom/collator.h"
#include "train/train_test_util.h"
#include "train/trainer_impl.h"

namespace loom {
namespace {

// input_ids / attention_mask / labels of a collated batch.
ModelInputs padding_test_inputs(const data::Batch& b) {
  ModelInputs in;
  in.input_ids = b.at("input_ids");
  in.attention_mask = b.at("attention_mask");
  in.labels = b.at("labels");
  return in;
}

// Every parameter's gradient (zeros where none), by name.
std::map<std::string, std::vector<float>> padding_test_grads(nn::Module& m) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, p] : m.named_parameters()) {
    const Tensor g = p.grad();
    out[name] = g.defined() ? g.to_vector<float>() : std::vector<float>(p.numel(), 0.0f);
  }
  return out;
}

// Largest |a - b| over all gradients, relative to the largest |b|.
double padding_test_max_rel_diff(const std::map<std::string, std::vector<float>>& a,
                                 const std::map<std::string, std::vector<float>>& b) {
  double diff = 0, scale = 1e-30;
  for (const auto& [name, vb] : b) {
    const std::vector<float>& va = a.at(name);
    for (size_t i = 0; i < vb.size(); ++i) {
      diff = std::max(diff, std::fabs(static_cast<double>(va[i]) - vb[i]));
      scale = std::max(scale, std::fabs(static_cast<double>(vb[i])));
    }
  }
  return diff / scale;
}

class PaddingMask : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::tiny_gpt2(11);
    trainer_ = std::make_unique<Trainer>(model_, testing::quiet_args(dir_.path()), data_);
    testing::silence(*trainer_);
  }
  // Examples `ids` of the dataset, collated as a causal LM batch, the rows
  // flagged in `padding` masked.
  data::Batch batch(const std::vector<int64_t>& ids, const std::vector<bool>& padding = {}) {
    std::vector<data::Example> ex;
    for (int64_t i : ids) ex.push_back(data_->get(i));
    data::PaddingMaskCollator collate(std::make_shared<data::CausalLMCollator>());
    return collate.collate(ex, {.epoch = 0, .batch_index = 0, .padding = padding});
  }
  // compute_loss of `b` over `num_items` label tokens, then its gradients.
  double loss_and_grads(const data::Batch& b, double num_items,
                        std::map<std::string, std::vector<float>>& grads) {
    model_->zero_grad();
    Tensor loss = trainer_->compute_loss(*model_, padding_test_inputs(b),
                                         scalar_tensor(num_items, DType::f32));
    loss.backward();
    grads = padding_test_grads(*model_);
    return loss.item();
  }

  testing::TempDir dir_;
  std::shared_ptr<data::InMemoryDataset> data_ = testing::token_dataset(6, 8);
  std::shared_ptr<GPT2LMHeadModel> model_;
  std::unique_ptr<Trainer> trainer_;
};

TEST_F(PaddingMask, APaddedRowAddsNothingToLossOrGradients) {
  // Rows 0 and 1 are real, row 2 repeats row 0 (a DistributedSampler
  // padding sample): 2 x 7 shifted label tokens count.
  std::map<std::string, std::vector<float>> padded, real, unmasked;
  const double with_padding = loss_and_grads(batch({0, 1, 0}, {false, false, true}), 14, padded);
  model_->zero_grad();
  Tensor mean = model_->forward(padding_test_inputs(batch({0, 1}))).loss;  // the 2 real rows
  mean.backward();
  real = padding_test_grads(*model_);
  EXPECT_NEAR(with_padding, mean.item(), 1e-6 * std::fabs(mean.item()));
  EXPECT_LE(padding_test_max_rel_diff(padded, real), 1e-6);
  // The test can fail: trained, the repeat weighs row 0 twice.
  const double trained = loss_and_grads(batch({0, 1, 0}), 21, unmasked);
  // (At this near-uniform initialization the losses of rows differ little.)
  EXPECT_GT(std::fabs(trained - mean.item()), 5e-6);
  EXPECT_GT(padding_test_max_rel_diff(unmasked, real), 1e-3);
}

TEST_F(PaddingMask, ABatchOfOnlyPaddingGivesZeroNotNaN) {
  // Data parallel: a rank whose whole micro-batch is padding (n = 5 on 2
  // ranks x batch 1). The model's own mean is 0 / 0 (NaN, as torch).
  const data::Batch b = batch({2, 3}, {true, true});
  EXPECT_TRUE(std::isnan(model_->forward(padding_test_inputs(b)).loss.item()));
  std::map<std::string, std::vector<float>> grads;
  const double loss = loss_and_grads(b, 14, grads);
  EXPECT_EQ(loss, 0.0);
  for (const auto& [name, g] : grads)
    for (float v : g) ASSERT_EQ(v, 0.0f) << name << " has a non-zero (or NaN) gradient";
}

// Which losses can mask padding with -100: language models and single-label
// classification (cross_entropy); not regression (MSE on the label value) or
// multi-label classification (BCE), where the Trainer trains the repeats
// and warns instead.
TEST(PaddingMaskModels, OnlyLossesWithAnIgnoreIndexAreMasked) {
  EXPECT_TRUE(loss_ignores_padding_labels(*testing::tiny_gpt2(1)));
  BertConfig c;
  c.vocab_size = 32;
  c.hidden_size = 16;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.intermediate_size = 32;
  c.max_position_embeddings = 8;
  auto kind = [&](int64_t labels, const std::string& problem_type) {
    BertConfig k = c;
    k.set_num_labels(labels);
    k.problem_type = problem_type;
    return loss_ignores_padding_labels(BertForSequenceClassification(k));
  };
  EXPECT_TRUE(kind(2, ""));
  EXPECT_TRUE(kind(3, "single_label_classification"));
  EXPECT_FALSE(kind(1, "")) << "num_labels 1 is regression";
  EXPECT_FALSE(kind(2, "regression"));
  EXPECT_FALSE(kind(3, "multi_label_classification"));
}

}  // namespace
}  // namespace loom
