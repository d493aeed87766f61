// Level-4 golden tests: GPT-2, BERT, Llama, Qwen2 and Qwen3 loaded with from_pretrained from the
// transformers fixtures (tools/make_model_fixtures.py, tools/make_llama_fixtures.py) must reproduce
// transformers' logits, loss and every parameter's gradient to 1e-4
// (scale-relative, model_test_util.h) on the eager `cpu` and the `lazy`
// device. The fixtures were computed in eval mode (dropout off).
#include <gtest/gtest.h>

#include <set>

#include "nn/model_test_util.h"

namespace loom {
namespace {

using testing::close_scaled;
using testing::Golden;

using testing::ModelCase;

class GoldenModel : public ::testing::TestWithParam<ModelCase> {
 protected:
  void SetUp() override {
    LOOM_SKIP_IF_UNAVAILABLE(GetParam().device);
    testing::reset_lazy_state();
  }
};

TEST_P(GoldenModel, LogitsLossAndGradientsMatchTransformers) {
  const ModelCase& c = GetParam();
  Device dev(c.device);
  Golden g = testing::load_golden(testing::model_fixture(c.model) + "/golden.safetensors");
  auto model = testing::load_fixture_model(c.model, dev);
  ASSERT_FALSE(model->is_training()) << "from_pretrained returns an eval-mode model";
  ModelOutput out = model->forward(testing::golden_inputs(g, dev));
  out.loss.backward();
  if (dev.is_lazy()) lazy::mark_step();

  const double tol = testing::model_tolerance(c.device);
  EXPECT_TRUE(close_scaled(out.logits, g.at("logits"), tol)) << "logits";
  EXPECT_TRUE(close_scaled(out.loss, g.at("loss"), tol)) << "loss";
  std::set<std::string> expected_names;
  for (const auto& [name, t] : g.tensors)
    if (name.rfind("grad.", 0) == 0) expected_names.insert(name.substr(5));
  std::set<std::string> names;
  for (const auto& [name, p] : model->named_parameters()) {
    names.insert(name);
    ASSERT_TRUE(g.has("grad." + name)) << "loom parameter " << name << " is not in transformers'";
    ASSERT_TRUE(p.grad().defined()) << name << " got no gradient";
    EXPECT_EQ(p.grad().device(), dev) << name;
    EXPECT_TRUE(close_scaled(p.grad(), g.at("grad." + name), tol)) << "grad of " << name;
  }
  EXPECT_EQ(names, expected_names) << "named_parameters() differs from transformers'";
}

TEST_P(GoldenModel, TrainModeAppliesDropoutAndEvalRestoresIt) {
  const ModelCase& c = GetParam();
  if (c.model == "llama" || c.model == "qwen2" || c.model == "qwen3")
    GTEST_SKIP() << c.model << " has no dropout (attention_dropout 0, as transformers' default)";
  Device dev(c.device);
  Golden g = testing::load_golden(testing::model_fixture(c.model) + "/golden.safetensors");
  auto model = testing::load_fixture_model(c.model, dev);
  ModelInputs in = testing::golden_inputs(g, dev);
  model->train();  // the configs keep transformers' default dropout 0.1
  manual_seed(5);
  Tensor train_logits = model->forward(in).logits;
  std::vector<double> a = train_logits.to(Device("cpu")).to_vector<double>();
  std::vector<double> e = g.at("logits").to_vector<double>();
  double max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) max_diff = std::max(max_diff, std::fabs(a[i] - e[i]));
  EXPECT_GT(max_diff, 1e-3) << "dropout had no effect in training mode";
  model->eval();
  EXPECT_TRUE(
      close_scaled(model->forward(in).logits, g.at("logits"), testing::model_tolerance(c.device)));
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenModel, ::testing::ValuesIn(testing::all_model_cases()),
                         testing::model_case_name);

}  // namespace
}  // namespace loom
