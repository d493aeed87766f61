// Level-4 training golden: ten AdamW steps on one batch (Trainer-style
// weight-decay groups, clip_grad_norm_ 1.0, linear warm-up) reproduce the
// losses, gradient norms and learning rates transformers + torch recorded in
// golden.safetensors (train.loss / train.grad_norm / train.lr, see
// tools/make_model_fixtures.py) to 1e-4, on the eager `cpu` and the `lazy`
// device; the lazy loop compiles once; and with bf16 autocast the ten losses
// stay within 2e-2 of f32 (the Trainer's `bf16` flag).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "loom/autocast.h"
#include "loom/optim.h"
#include "nn/model_test_util.h"

namespace loom {
namespace {

using testing::ModelCase;

struct StepRecord {
  std::vector<double> loss, grad_norm, lr;
};

// The fixture's loop: loss, backward, clip, AdamW, schedule, zero_grad.
StepRecord ten_steps(const ModelCase& c, const testing::Golden& g, bool bf16) {
  Device dev(c.device);
  nlohmann::json meta = nlohmann::json::parse(g.metadata.at("golden"));
  auto model = testing::load_fixture_model(c.model, dev);
  const auto& adamw = meta.at("adamw");
  auto groups =
      optim::weight_decay_groups(model->named_parameters(), adamw.at("weight_decay").get<double>());
  optim::AdamW opt(groups, {.lr = adamw.at("lr").get<double>(),
                            .beta1 = adamw.at("betas")[0].get<double>(),
                            .beta2 = adamw.at("betas")[1].get<double>(),
                            .eps = adamw.at("eps").get<double>(),
                            .weight_decay = adamw.at("weight_decay").get<double>()});
  optim::LRScheduler sched("linear", opt,
                           {.num_warmup_steps = meta.at("warmup_steps").get<int64_t>(),
                            .num_training_steps = meta.at("total_steps").get<int64_t>()});
  const double max_norm = meta.at("max_grad_norm").get<double>();
  ModelInputs in = testing::golden_inputs(g, dev);
  if (dev.is_lazy()) lazy::mark_step();
  metrics::reset();
  StepRecord run;
  std::vector<Tensor> losses, norms;
  const int steps = meta.at("total_steps").get<int>();
  for (int s = 0; s < steps; ++s) {
    Tensor loss;
    {
      AutocastGuard autocast(bf16);
      loss = model->forward(in).loss;
    }
    loss.backward();
    norms.push_back(optim::clip_grad_norm_(model->parameters(), max_norm));
    run.lr.push_back(opt.param_groups()[0].lr());
    opt.step();
    sched.step();
    opt.zero_grad();
    losses.push_back(loss.detach());
    if (dev.is_lazy()) lazy::mark_step();
  }
  for (size_t i = 0; i < losses.size(); ++i) {  // read after the loop: no early syncs
    run.loss.push_back(losses[i].item());
    run.grad_norm.push_back(norms[i].item());
  }
  if (dev.is_lazy()) {
    EXPECT_EQ(metrics::counter("UncachedCompile"), 1) << metrics::report();
    EXPECT_EQ(metrics::counter("CachedCompile"), steps - 1);
  }
  return run;
}

class TenSteps : public ::testing::TestWithParam<ModelCase> {
 protected:
  void SetUp() override {
    LOOM_SKIP_IF_UNAVAILABLE(GetParam().device);
    testing::reset_lazy_state();
  }
};

TEST_P(TenSteps, LossesGradNormsAndRatesMatchTransformers) {
  const ModelCase& c = GetParam();
  testing::Golden g = testing::load_golden(testing::model_fixture(c.model) + "/golden.safetensors");
  StepRecord run = ten_steps(c, g, /*bf16=*/false);
  const double tol = testing::model_tolerance(c.device);
  EXPECT_TRUE(testing::all_close(run.loss, g.at("train.loss").to_vector<double>(), tol, 0))
      << "losses";
  EXPECT_TRUE(
      testing::all_close(run.grad_norm, g.at("train.grad_norm").to_vector<double>(), tol, 0))
      << "grad norms";
  EXPECT_TRUE(testing::all_close(run.lr, g.at("train.lr").to_vector<double>(), 1e-6, 0))
      << "learning rates";
  EXPECT_LT(run.loss.back(), run.loss.front()) << "ten steps on one batch lower the loss";
}

TEST_P(TenSteps, Bf16AutocastStaysWithin2e2OfF32) {
  const ModelCase& c = GetParam();
  testing::Golden g = testing::load_golden(testing::model_fixture(c.model) + "/golden.safetensors");
  StepRecord bf16 = ten_steps(c, g, /*bf16=*/true);
  std::vector<double> f32 = g.at("train.loss").to_vector<double>();
  EXPECT_TRUE(testing::all_close(bf16.loss, f32, 0, 2e-2)) << "bf16 losses vs f32";
  bool any_differs = false;  // bf16 really ran: the losses are not the f32 ones
  for (size_t i = 0; i < f32.size(); ++i) any_differs |= std::fabs(bf16.loss[i] - f32[i]) > 1e-6;
  EXPECT_TRUE(any_differs) << "bf16 autocast changed nothing";
}

INSTANTIATE_TEST_SUITE_P(Models, TenSteps, ::testing::ValuesIn(testing::all_model_cases()),
                         testing::model_case_name);

}  // namespace
}  // namespace loom
