// Training GPT-2 and BERT on the lazy device, asserted through the metrics
// counters: ten steps (forward, backward, an SGD update written with ops,
// zero_grad, mark_step) compile once — the later steps are cached compiles,
// with dropout active (its Philox seed/offset are graph inputs) — and lazy
// training follows eager training step by step.
#include <gtest/gtest.h>

#include "nn/model_test_util.h"

namespace loom {
namespace {

// p <- p - lr * grad, as an in-place op under no_grad; grads set to none.
void sgd_step(nn::Module& model, double lr) {
  NoGradGuard no_grad;
  for (auto& [name, p] : model.named_parameters()) {
    if (!p.grad().defined()) continue;
    p.copy_(p - p.grad() * lr);
  }
  model.zero_grad();
}

std::shared_ptr<PretrainedModel> load_model(const std::string& model, const Device& dev) {
  std::string dir = testing::model_fixture(model);
  if (model == "gpt2") return GPT2LMHeadModel::from_pretrained(dir, dev);
  return BertForMaskedLM::from_pretrained(dir, dev);
}

class LazyTraining : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { testing::reset_lazy_state(); }
};

TEST_P(LazyTraining, TenStepsCompileOnce) {
  Device dev("lazy");
  testing::Golden g =
      testing::load_golden(testing::model_fixture(GetParam()) + "/golden.safetensors");
  auto model = load_model(GetParam(), dev);
  model->train();  // dropout 0.1 on: random ops must not cause recompiles
  ModelInputs in = testing::golden_inputs(g, dev);
  metrics::reset();
  std::vector<Tensor> losses;
  for (int step = 0; step < 10; ++step) {
    ModelOutput out = model->forward(in);
    out.loss.backward();
    sgd_step(*model, 0.1);
    losses.push_back(out.loss);
    lazy::mark_step();
    if (step == 0) {
      EXPECT_EQ(metrics::counter("UncachedCompile"), 1) << "the first step compiles once";
    }
  }
  EXPECT_EQ(metrics::counter("UncachedCompile"), 1) << metrics::report();
  EXPECT_EQ(metrics::counter("CachedCompile"), 9) << metrics::report();
  EXPECT_EQ(metrics::counter("EarlySync"), 0) << metrics::report();
  EXPECT_TRUE(metrics::recompile_causes().empty());
  double first = losses.front().item(), last = losses.back().item();
  EXPECT_TRUE(std::isfinite(first) && std::isfinite(last));
  EXPECT_LT(last, first) << "ten SGD steps on one batch lower the loss";
}

TEST_P(LazyTraining, LazyStepsMatchEagerSteps) {
  testing::Golden g =
      testing::load_golden(testing::model_fixture(GetParam()) + "/golden.safetensors");
  Device lazy_dev("lazy"), cpu("cpu");
  auto eager = load_model(GetParam(), cpu);
  auto lazy_model = load_model(GetParam(), lazy_dev);  // eval mode: no dropout
  ModelInputs in_e = testing::golden_inputs(g, cpu), in_l = testing::golden_inputs(g, lazy_dev);
  for (int step = 0; step < 3; ++step) {
    ModelOutput oe = eager->forward(in_e);
    oe.loss.backward();
    sgd_step(*eager, 0.1);
    ModelOutput ol = lazy_model->forward(in_l);
    ol.loss.backward();
    sgd_step(*lazy_model, 0.1);
    lazy::mark_step();
    EXPECT_NEAR(ol.loss.item(), oe.loss.item(), 1e-5 * std::fabs(oe.loss.item())) << step;
  }
  auto pe = eager->named_parameters(), pl = lazy_model->named_parameters();
  for (size_t i = 0; i < pe.size(); ++i)
    EXPECT_TRUE(testing::close_scaled(pl[i].second, pe[i].second, 1e-5)) << pe[i].first;
}

INSTANTIATE_TEST_SUITE_P(Models, LazyTraining, ::testing::Values("gpt2", "bert"));

}  // namespace
}  // namespace loom
