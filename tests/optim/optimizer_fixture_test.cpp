// AdamW and SGD step values against torch.optim (tests/fixtures/optim/
// optimizers.json, written by tools/make_optim_fixtures.py with PyTorch's
// single-tensor AdamW / SGD): parameter groups with their own
// hyperparameters, a learning rate changed between steps (0 included),
// parameters without a gradient on some steps, on the eager and lazy devices.
#include <gtest/gtest.h>

#include "ops/compare.h"
#include "optim/optim_test_util.h"

namespace loom {
namespace {

using nlohmann::json;
using testing::all_close;
using testing::doubles;
using testing::fixture_tensor;

optim::Options group_options(const std::string& optimizer, const json& o) {
  optim::Options out;
  for (const auto& [key, value] : o.items()) {
    if (key == "betas") {
      out["beta1"] = value[0].get<double>();
      out["beta2"] = value[1].get<double>();
    } else if (key == "nesterov") {
      out["nesterov"] = value.get<bool>() ? 1.0 : 0.0;
    } else {
      out[key] = value.get<double>();
    }
  }
  return out;
}

struct Built {
  std::vector<Tensor> params;
  std::unique_ptr<optim::Optimizer> opt;
};

Built build(const json& c, const Device& dev) {
  Built b;
  std::vector<optim::ParamGroup> groups;
  for (const json& g : c["groups"]) {
    optim::ParamGroup group;
    group.options = group_options(c["optimizer"].get<std::string>(), g["options"]);
    for (const json& p : g["params"]) {
      Tensor t = fixture_tensor(p["init"], p["shape"].get<Shape>(), dev).requires_grad_();
      group.params.push_back(t);
      b.params.push_back(t);
    }
    groups.push_back(std::move(group));
  }
  if (c["optimizer"] == "AdamW") {
    b.opt = std::make_unique<optim::AdamW>(std::move(groups));
  } else {
    b.opt = std::make_unique<optim::SGD>(std::move(groups));
  }
  return b;
}

// Sets the step's learning rates and gradients (null = no gradient).
void prepare_step(const json& c, size_t s, Built& b, const Device& dev) {
  for (size_t g = 0; g < b.opt->param_groups().size(); ++g)
    b.opt->param_groups()[g].set_lr(c["lrs"][s][g].get<double>());
  const json& grads = c["steps"][s]["grads"];
  for (size_t i = 0; i < b.params.size(); ++i) {
    if (grads[i].is_null()) {
      b.params[i].zero_grad();
    } else {
      b.params[i].set_grad(fixture_tensor(grads[i], b.params[i].shape(), dev));
    }
  }
}

class OptimizerFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimizerFixture, StepsMatchTorch) {
  Device dev(GetParam());
  json fixture = testing::optim_fixture("optimizers.json");
  ASSERT_GE(fixture["cases"].size(), 7u);
  for (const json& c : fixture["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    Built b = build(c, dev);
    for (size_t s = 0; s < c["steps"].size(); ++s) {
      prepare_step(c, s, b, dev);
      b.opt->step();
      testing::sync_if_lazy(dev);
      for (size_t i = 0; i < b.params.size(); ++i) {
        EXPECT_TRUE(all_close(b.params[i], doubles(c["steps"][s]["params"][i]), 1e-5, 1e-6))
            << "step " << s << " param " << i;
      }
    }
    optim::StateDict sd = b.opt->state_dict();
    for (size_t i = 0; i < b.params.size(); ++i) {
      const json& expected = c["state"][i];
      auto it = sd.state.find(static_cast<int64_t>(i));
      if (expected.empty()) {
        EXPECT_TRUE(it == sd.state.end() || it->second.buffers.empty()) << "param " << i;
        continue;
      }
      ASSERT_TRUE(it != sd.state.end()) << "param " << i << " has no state";
      EXPECT_EQ(it->second.buffers.size(), expected.size()) << "param " << i;
      for (const auto& [name, values] : expected.items()) {
        ASSERT_TRUE(it->second.buffers.count(name)) << "param " << i << " lacks " << name;
        EXPECT_TRUE(all_close(it->second.buffers.at(name), doubles(values), 1e-5, 1e-7))
            << "param " << i << " state " << name;
      }
    }
  }
}

TEST_P(OptimizerFixture, StepCountsFollowGradients) {
  // adamw_skip_grad: param 1 has no grad at step 1, param 0 none at step 2,
  // param 2 none at step 3 -> every parameter is updated 3 times of 4.
  Device dev(GetParam());
  json fixture = testing::optim_fixture("optimizers.json");
  const json* c = nullptr;
  for (const json& x : fixture["cases"])
    if (x["name"] == "adamw_skip_grad") c = &x;
  ASSERT_NE(c, nullptr);
  Built b = build(*c, dev);
  prepare_step(*c, 0, b, dev);
  b.opt->step();
  prepare_step(*c, 1, b, dev);
  b.opt->step();
  testing::sync_if_lazy(dev);
  optim::StateDict sd = b.opt->state_dict();
  EXPECT_EQ(sd.state.at(0).step, 2);
  EXPECT_EQ(sd.state.at(1).step, 1);
  EXPECT_EQ(sd.state.at(2).step, 2);
}

INSTANTIATE_TEST_SUITE_P(Devices, OptimizerFixture, ::testing::Values("cpu", "lazy"));

// The first AdamW step of one parameter, in double: torch's eps placement
// (sqrt(v) / sqrt(bc2) + eps) or TensorFlow's ((sqrt(v) + eps) / sqrt(bc2)).
std::vector<double> first_adamw_step(const json& options, const std::vector<double>& init,
                                     const std::vector<double>& grad, bool torch_placement) {
  const double lr = options["lr"], wd = options["weight_decay"], eps = options["eps"];
  const double b1 = options["betas"][0], b2 = options["betas"][1];
  const double bc1 = 1 - b1, bc2 = 1 - b2;
  std::vector<double> out(init.size());
  for (size_t i = 0; i < init.size(); ++i) {
    const double m = (1 - b1) * grad[i], v = (1 - b2) * grad[i] * grad[i];
    const double denom = torch_placement ? std::sqrt(v) / std::sqrt(bc2) + eps
                                         : (std::sqrt(v) + eps) / std::sqrt(bc2);
    out[i] = init[i] * (1 - lr * wd) - lr / bc1 * m / denom;
  }
  return out;
}

// adamw_eps_matters can tell the two eps placements apart: its first step is
// torch's formula within the fixture tolerance and far from TensorFlow's (the
// other AdamW cases' gradients make eps negligible, so they cannot).
TEST(OptimizerFixtureCases, EpsCaseSeparatesEpsPlacements) {
  json fixture = testing::optim_fixture("optimizers.json");
  const json* c = nullptr;
  for (const json& x : fixture["cases"])
    if (x["name"] == "adamw_eps_matters") c = &x;
  ASSERT_NE(c, nullptr);
  size_t param = 0;
  for (const json& group : (*c)["groups"]) {
    for (const json& p : group["params"]) {
      std::vector<double> init = doubles(p["init"]);
      std::vector<double> grad = doubles((*c)["steps"][0]["grads"][param]);
      std::vector<double> want = doubles((*c)["steps"][0]["params"][param]);
      EXPECT_TRUE(all_close(first_adamw_step(group["options"], init, grad, true), want, 1e-5, 1e-6))
          << "param " << param;
      EXPECT_FALSE(
          all_close(first_adamw_step(group["options"], init, grad, false), want, 1e-4, 1e-5))
          << "param " << param << ": TensorFlow's eps placement is not told apart";
      ++param;
    }
  }
}

}  // namespace
}  // namespace loom
