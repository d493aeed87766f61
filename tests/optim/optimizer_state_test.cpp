// Optimizer state: state_dict / load_state_dict and the safetensors file
// (layout of docs/optim.md) — a resumed optimizer takes exactly the step the
// original would have taken — plus zero_grad, group validation and the
// errors a user can cause, on the eager and lazy devices.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "loom/error.h"
#include "loom/safetensors.h"
#include "optim/optim_test_util.h"

namespace loom {
namespace {

using nlohmann::json;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("loom-optim-" + std::to_string(getpid()) + "-" + name))
      .string();
}

// Parameters [3,4], [4], [2,2] with fixed values, and a deterministic
// gradient for step s.
std::vector<Tensor> make_params(const Device& dev) {
  manual_seed(11);
  std::vector<Tensor> ps;
  for (Shape s : {Shape{3, 4}, Shape{4}, Shape{2, 2}})
    ps.push_back(randn(s).to(dev).requires_grad_());
  return ps;
}
void set_grads(std::vector<Tensor>& ps, int s, const Device& dev) {
  manual_seed(100 + s);
  for (Tensor& p : ps) p.set_grad(randn(p.shape()).to(dev));
}
std::vector<Tensor> copies(const std::vector<Tensor>& ps, const Device& dev) {
  std::vector<Tensor> out;
  for (const Tensor& p : ps) {
    Tensor host = p.to(Device("cpu"));
    out.push_back(from_blob(host.data(), host.shape(), host.dtype(), dev).requires_grad_());
  }
  return out;
}

template <typename Opt, typename Options>
std::unique_ptr<optim::Optimizer> make_opt(std::vector<Tensor> ps, Options o) {
  std::vector<optim::ParamGroup> groups(2);
  groups[0].params = {ps[0], ps[1]};
  groups[1].params = {ps[2]};
  groups[1].options["lr"] = 0.05;
  return std::make_unique<Opt>(std::move(groups), o);
}

class OptimizerState : public ::testing::TestWithParam<std::string> {};

template <typename Opt, typename Options>
void check_resume(const Device& dev, Options o, const std::string& file) {
  std::vector<Tensor> a = make_params(dev);
  auto opt_a = make_opt<Opt>(a, o);
  for (int s = 0; s < 2; ++s) {
    set_grads(a, s, dev);
    opt_a->step();
    opt_a->param_groups()[0].set_lr(o.lr * (s + 2));  // a schedule changed it
    testing::sync_if_lazy(dev);
  }
  std::string path = temp_path(file);
  opt_a->save(path);

  std::vector<Tensor> b = copies(a, dev);
  auto opt_b = make_opt<Opt>(b, o);  // fresh: lr of group 0 is the default again
  opt_b->load(path);
  EXPECT_DOUBLE_EQ(opt_b->param_groups()[0].lr(), o.lr * 3);
  EXPECT_DOUBLE_EQ(opt_b->param_groups()[1].lr(), 0.05);
  optim::StateDict sa = opt_a->state_dict(), sb = opt_b->state_dict();
  ASSERT_EQ(sa.state.size(), sb.state.size());
  for (const auto& [i, st] : sa.state) EXPECT_EQ(sb.state.at(i).step, st.step) << i;

  set_grads(a, 2, dev);
  set_grads(b, 2, dev);
  opt_a->step();
  opt_b->step();
  testing::sync_if_lazy(dev);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].to_vector<float>(), b[i].to_vector<float>()) << "param " << i;
  }
  // The loaded state is a copy: stepping B did not move A's state.
  for (const auto& [i, st] : sa.state)
    for (const auto& [name, t] : st.buffers)
      EXPECT_FALSE(t.is_same(sb.state.at(i).buffers.at(name))) << i << " " << name;
  std::remove(path.c_str());
}

TEST_P(OptimizerState, AdamWResumeGivesTheSameNextStep) {
  check_resume<optim::AdamW>(Device(GetParam()),
                             optim::AdamWOptions{.lr = 0.01, .weight_decay = 0.1},
                             "adamw.safetensors");
}

TEST_P(OptimizerState, SGDResumeGivesTheSameNextStep) {
  check_resume<optim::SGD>(Device(GetParam()),
                           optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.2},
                           "sgd.safetensors");
}

TEST_P(OptimizerState, InMemoryStateDictRoundTrip) {
  Device dev(GetParam());
  std::vector<Tensor> a = make_params(dev);
  optim::AdamW opt_a(a, {.lr = 0.02});
  set_grads(a, 0, dev);
  opt_a.step();
  testing::sync_if_lazy(dev);
  std::vector<Tensor> b = copies(a, dev);
  optim::AdamW opt_b(b, {.lr = 0.5, .beta1 = 0.5});
  opt_b.load_state_dict(opt_a.state_dict());
  EXPECT_DOUBLE_EQ(opt_b.param_groups()[0].option("beta1"), 0.9);
  set_grads(a, 1, dev);
  set_grads(b, 1, dev);
  opt_a.step();
  opt_b.step();
  testing::sync_if_lazy(dev);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].to_vector<float>(), b[i].to_vector<float>()) << i;
}

INSTANTIATE_TEST_SUITE_P(Devices, OptimizerState, ::testing::Values("cpu", "lazy"));

TEST(OptimizerFile, LayoutIsDocumented) {
  std::vector<Tensor> ps = make_params(Device("cpu"));
  auto opt = make_opt<optim::AdamW>(ps, optim::AdamWOptions{.lr = 0.01});
  ps[2].zero_grad();
  set_grads(ps, 0, Device("cpu"));
  ps[1].zero_grad();  // param 1 gets no state
  opt->step();
  std::string path = temp_path("layout.safetensors");
  opt->save(path);
  auto file = safetensors::File::open(path);
  std::vector<std::string> names;
  for (const auto& t : file.tensors()) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"state.0.exp_avg", "state.0.exp_avg_sq",
                                             "state.2.exp_avg", "state.2.exp_avg_sq"}));
  EXPECT_EQ(file.at("state.2.exp_avg").shape, (Shape{2, 2}));
  EXPECT_EQ(file.at("state.2.exp_avg").dtype, DType::f32);
  EXPECT_EQ(file.metadata().at("optimizer"), "AdamW");
  json groups = json::parse(file.metadata().at("param_groups"));
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0]["params"], json({0, 1}));
  EXPECT_EQ(groups[1]["params"], json({2}));
  EXPECT_DOUBLE_EQ(groups[1]["lr"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(groups[0]["beta2"].get<double>(), 0.999);
  EXPECT_EQ(json::parse(file.metadata().at("step")), json({{"0", 1}, {"2", 1}}));
  // exp_avg after one step is (1 - beta1) * grad.
  std::vector<float> m(4), g = ps[2].grad().to_vector<float>();
  std::memcpy(m.data(), file.data(file.at("state.2.exp_avg")).data(), 16);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(m[i], 0.1f * g[i], 1e-7) << i;
  std::remove(path.c_str());
}

TEST(OptimizerFile, MismatchesThrow) {
  std::vector<Tensor> ps = make_params(Device("cpu"));
  auto adamw = make_opt<optim::AdamW>(ps, optim::AdamWOptions{});
  set_grads(ps, 0, Device("cpu"));
  adamw->step();
  std::string path = temp_path("mismatch.safetensors");
  adamw->save(path);
  // Another optimizer kind.
  optim::SGD sgd(copies(ps, Device("cpu")), {.lr = 0.1});
  EXPECT_THROW(sgd.load(path), Error);
  // Another group structure.
  optim::AdamW one_group(copies(ps, Device("cpu")));
  EXPECT_THROW(one_group.load(path), Error);
  // Another parameter shape.
  std::vector<Tensor> other = copies(ps, Device("cpu"));
  other[2] = zeros({4}).requires_grad_();
  auto wrong_shape = make_opt<optim::AdamW>(other, optim::AdamWOptions{});
  try {
    wrong_shape->load(path);
    ADD_FAILURE() << "no error for a shape mismatch";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shape"), std::string::npos) << e.what();
  }
  // Not an optimizer file / not a file.
  std::string plain = temp_path("plain.safetensors");
  float w[2] = {1, 2};
  safetensors::save(plain, {{"w", DType::f32, {2}, w}});
  EXPECT_THROW(adamw->load(plain), Error);
  EXPECT_THROW(adamw->load(temp_path("missing.safetensors")), Error);
  std::remove(plain.c_str());
  std::remove(path.c_str());
}

TEST(OptimizerGroups, ValidationErrors) {
  Tensor p = zeros({2}).requires_grad_();
  EXPECT_THROW(optim::AdamW({p}, {.beta1 = 1.0}), Error);
  EXPECT_THROW(optim::AdamW({p}, {.lr = -1}), Error);
  EXPECT_THROW(optim::AdamW({p}, {.eps = -1e-8}), Error);
  EXPECT_THROW(optim::AdamW({p, p}), Error);  // a parameter twice
  EXPECT_THROW(optim::AdamW({tensor_i64({1}, {1})}), Error);
  EXPECT_THROW(optim::AdamW({Tensor()}), Error);
  EXPECT_THROW(optim::SGD({p}, {.momentum = 0.0, .nesterov = true}), Error);
  EXPECT_THROW(optim::SGD({p}, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}), Error);
  optim::ParamGroup g;
  g.params = {p};
  g.options["momentum"] = 0.9;  // an SGD option given to AdamW
  EXPECT_THROW(optim::AdamW(std::vector<optim::ParamGroup>{g}), Error);
  optim::AdamW opt({p});
  optim::ParamGroup again;
  again.params = {p};
  EXPECT_THROW(opt.add_param_group(again), Error);
  EXPECT_THROW(opt.param_groups()[0].option("momentum"), Error);
  // A gradient of the wrong shape.
  p.set_grad(zeros({3}));
  EXPECT_THROW(opt.step(), Error);
}

TEST(OptimizerGroups, ZeroGrad) {
  Tensor p = ones({3}).requires_grad_(), q = ones({2}).requires_grad_();
  optim::SGD opt({p, q}, {.lr = 0.5});
  p.set_grad(full({3}, 2.0));
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(p.grad().defined());
  EXPECT_EQ(p.grad().to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_FALSE(q.grad().defined());
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
  // Parameters without a gradient are not updated.
  q.set_grad(full({2}, 1.0));
  opt.step();
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(q.to_vector<float>(), (std::vector<float>{0.5, 0.5}));
}

}  // namespace
}  // namespace loom
