// LoRA against PEFT (tools/make_lora_fixtures.py): PEFT adapters with nonzero
// lora_B on the tiny Llama (Linear) and GPT-2 (Conv1D, fan_in_fan_out)
// fixtures load into loom (PeftModelForCausalLM::from_pretrained) and give
// PEFT's logits and loss (1e-5, scale-relative), its gradient of every
// adapter weight and none for the frozen base (1e-4), ten AdamW steps over
// the adapters only (losses, grad norms; the optimizer holds state for the
// adapter weights only), and merge_and_unload gives the same logits from the
// base model alone. On the eager `cpu` and every lazy backend that runs
// whole models (lazy, lazy:sim, lazy:xla: the LoRA training step compiles
// once); a backend whose plugin is missing skips.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/backends.h"
#include "loom/lora.h"
#include "loom/optim.h"
#include "nn/model_test_util.h"

namespace loom {
namespace {

struct LoraCase {
  std::string model;  // base fixture; the adapter is <model>_lora
  std::string device;
};

void PrintTo(const LoraCase& c, std::ostream* os) { *os << c.model << " on " << c.device; }

std::string lora_case_name(const ::testing::TestParamInfo<LoraCase>& info) {
  std::string d = info.param.device;
  for (char& ch : d)
    if (ch == ':') ch = '_';
  return info.param.model + "_" + d;
}

std::shared_ptr<PeftModelForCausalLM> load_lora_fixture(const LoraCase& c, bool trainable) {
  Device dev(c.device);
  auto base = std::dynamic_pointer_cast<CausalLM>(testing::load_fixture_model(c.model, dev));
  return PeftModelForCausalLM::from_pretrained(base, testing::model_fixture(c.model + "_lora"), dev,
                                               trainable);
}

class LoraGolden : public ::testing::TestWithParam<LoraCase> {
 protected:
  void SetUp() override {
    LOOM_SKIP_IF_UNAVAILABLE(GetParam().device);
    testing::reset_lazy_state();
  }
};

TEST_P(LoraGolden, LogitsLossAndAdapterGradientsMatchPeft) {
  const LoraCase& c = GetParam();
  Device dev(c.device);
  testing::Golden g =
      testing::load_golden(testing::model_fixture(c.model + "_lora") + "/golden.safetensors");
  auto model = load_lora_fixture(c, /*trainable=*/true);
  ASSERT_FALSE(model->is_training());
  ModelOutput out = model->forward(testing::golden_inputs(g, dev));
  out.loss.backward();
  if (dev.is_lazy()) lazy::mark_step();
  // 1e-5 on loom's kernels; a backend with its own float rounding (xla:
  // f32_tol, tests/common/backends.h) gets its op-table tolerance if larger.
  const double tol =
      dev.is_lazy() ? std::max(1e-5, testing::device_traits(c.device).f32_tol) : 1e-5;
  EXPECT_TRUE(testing::close_scaled(out.logits, g.at("logits"), tol)) << "logits";
  EXPECT_TRUE(testing::close_scaled(out.loss, g.at("loss"), tol)) << "loss";

  std::set<std::string> expected, trained;
  for (const auto& [name, t] : g.tensors)
    if (name.rfind("grad.", 0) == 0) expected.insert(name.substr(5));
  for (const auto& [name, p] : model->named_parameters()) {
    if (!p.requires_grad()) {
      EXPECT_FALSE(p.grad().defined()) << "frozen " << name << " got a gradient";
      continue;
    }
    trained.insert(name);
    ASSERT_TRUE(g.has("grad." + name)) << "loom adapter weight " << name << " is not PEFT's";
    ASSERT_TRUE(p.grad().defined()) << name << " got no gradient";
    EXPECT_TRUE(testing::close_scaled(p.grad(), g.at("grad." + name), 1e-4)) << "grad of " << name;
  }
  EXPECT_EQ(trained, expected) << "trainable parameters differ from PEFT's";
}

TEST_P(LoraGolden, TenAdamWStepsOnAdaptersMatchPeft) {
  const LoraCase& c = GetParam();
  Device dev(c.device);
  testing::Golden g =
      testing::load_golden(testing::model_fixture(c.model + "_lora") + "/golden.safetensors");
  nlohmann::json meta = nlohmann::json::parse(g.metadata.at("golden"));
  auto model = load_lora_fixture(c, /*trainable=*/true);
  const auto& adamw = meta.at("adamw");
  const double wd = adamw.at("weight_decay").get<double>();
  auto groups = optim::weight_decay_groups(model->named_parameters(), wd);
  optim::AdamW opt(groups, {.lr = adamw.at("lr").get<double>(),
                            .beta1 = adamw.at("betas")[0].get<double>(),
                            .beta2 = adamw.at("betas")[1].get<double>(),
                            .eps = adamw.at("eps").get<double>(),
                            .weight_decay = wd});
  optim::LRScheduler sched("linear", opt,
                           {.num_warmup_steps = meta.at("warmup_steps").get<int64_t>(),
                            .num_training_steps = meta.at("total_steps").get<int64_t>()});
  std::vector<Tensor> params;
  for (const Tensor& p : model->parameters())
    if (p.requires_grad()) params.push_back(p);
  ModelInputs in = testing::golden_inputs(g, dev);
  if (dev.is_lazy()) lazy::mark_step();
  metrics::reset();
  std::vector<Tensor> losses, norms;
  for (int s = 0; s < meta.at("total_steps").get<int>(); ++s) {
    Tensor loss = model->forward(in).loss;
    loss.backward();
    norms.push_back(optim::clip_grad_norm_(params, meta.at("max_grad_norm").get<double>()));
    opt.step();
    sched.step();
    opt.zero_grad();
    losses.push_back(loss.detach());
    if (dev.is_lazy()) lazy::mark_step();
  }
  std::vector<double> loss_values, norm_values;
  for (size_t i = 0; i < losses.size(); ++i) {
    loss_values.push_back(losses[i].item());
    norm_values.push_back(norms[i].item());
  }
  if (dev.is_lazy()) {  // one LoRA training step compiles once, then hits the cache
    EXPECT_EQ(metrics::counter("UncachedCompile"), 1) << metrics::report();
    EXPECT_EQ(metrics::counter("CachedCompile"), 9);
  }
  EXPECT_TRUE(testing::all_close(loss_values, g.at("train.loss").to_vector<double>(), 1e-4, 0));
  EXPECT_TRUE(
      testing::all_close(norm_values, g.at("train.grad_norm").to_vector<double>(), 1e-4, 0));

  // AdamW state exists for the adapter weights only (two moments each).
  optim::StateDict st = opt.state_dict();
  int64_t adapter_weights = static_cast<int64_t>(model->adapter_state_dict().size());
  EXPECT_EQ(static_cast<int64_t>(st.state.size()), adapter_weights);
  size_t grouped = 0;
  for (const auto& ids : st.group_params) grouped += ids.size();
  EXPECT_EQ(static_cast<int64_t>(grouped), adapter_weights);
  for (const auto& [id, ps] : st.state) {
    EXPECT_EQ(ps.buffers.size(), 2u) << "param " << id;
    EXPECT_EQ(ps.step, 10) << "param " << id;
  }
}

TEST_P(LoraGolden, MergeAndUnloadGivesTheSameLogitsFromTheBaseAlone) {
  const LoraCase& c = GetParam();
  Device dev(c.device);
  testing::Golden g =
      testing::load_golden(testing::model_fixture(c.model + "_lora") + "/golden.safetensors");
  auto model = load_lora_fixture(c, /*trainable=*/false);
  std::shared_ptr<CausalLM> merged = model->merge_and_unload();
  for (const auto& [name, t] : merged->state_dict())
    EXPECT_EQ(name.find("lora_"), std::string::npos) << name << " left after merging";
  ModelOutput out = merged->forward(testing::golden_inputs(g, dev));
  EXPECT_TRUE(testing::close_scaled(out.logits, g.at("logits"), 1e-5)) << "merged logits";
  // And the merge changed the weights: the original base gives other logits.
  auto plain = testing::load_fixture_model(c.model, dev);
  Tensor base_logits = plain->forward(testing::golden_inputs(g, dev)).logits;
  EXPECT_FALSE(testing::close_scaled(base_logits, g.at("logits"), 1e-3));
}

// Each model on the eager cpu and on every lazy backend that runs whole
// models (lazy_devices: lazy, lazy:sim, lazy:xla, ...).
std::vector<LoraCase> lora_cases() {
  std::vector<LoraCase> out;
  for (const char* model : {"llama", "gpt2"}) {
    out.push_back({model, "cpu"});
    for (const std::string& d : testing::lazy_devices(/*models=*/true)) out.push_back({model, d});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Adapters, LoraGolden, ::testing::ValuesIn(lora_cases()), lora_case_name);

}  // namespace
}  // namespace loom
