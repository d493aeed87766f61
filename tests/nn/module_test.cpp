// nn::Module: registration, torch's traversal order, state_dict and
// load_state_dict (strict errors listing everything, tied keys), train/eval,
// to(device) keeping ties and outside handles, zero_grad.
#include <gtest/gtest.h>

#include "nn/model_test_util.h"

namespace loom {
namespace {

using nn::Linear;
using nn::Module;

// A tree with a tie, an own parameter registered after a child, and buffers:
//   scale (own), enc (Linear 3->4), head (Linear 4->3, weight tied? no:
//   head.bias separate), dec.weight tied to emb.weight.
class Net : public Module {
 public:
  Net() {
    enc = register_module("enc", std::make_shared<Linear>(3, 4));
    emb = register_module("emb", std::make_shared<nn::Embedding>(5, 4));
    dec = register_module("dec", std::make_shared<Linear>(4, 5, false));
    dec->set_parameter("weight", emb->weight());  // tied, as an LM head
    scale = register_parameter("scale", ones({1}));
    register_buffer("steps", zeros({1}), /*persistent=*/true);
    register_buffer("cache", zeros({2}), /*persistent=*/false);
  }
  std::string type_name() const override { return "Net"; }
  std::shared_ptr<Linear> enc, dec;
  std::shared_ptr<nn::Embedding> emb;
  size_t scale = 0;
};

std::vector<std::string> names_of(const std::vector<std::pair<std::string, Tensor>>& v) {
  std::vector<std::string> out;
  for (const auto& [n, t] : v) out.push_back(n);
  return out;
}

TEST(Module, NamedParametersInTorchOrderWithTiesOnce) {
  Net net;
  // Own parameters first (even though registered last), then children in order.
  EXPECT_EQ(names_of(net.named_parameters()),
            (std::vector<std::string>{"scale", "enc.weight", "enc.bias", "emb.weight"}));
  EXPECT_EQ(
      names_of(net.named_parameters(false)),
      (std::vector<std::string>{"scale", "enc.weight", "enc.bias", "emb.weight", "dec.weight"}));
  EXPECT_EQ(net.parameters().size(), 4u);
  EXPECT_EQ(net.num_parameters(), 1 + 12 + 4 + 20);
  for (const Tensor& p : net.parameters()) EXPECT_TRUE(p.requires_grad());
  EXPECT_EQ(net.num_parameters(true), 1 + 12 + 4 + 20);
  net.named_parameters()[1].second.requires_grad_(false);  // enc.weight, 12 elements
  EXPECT_EQ(net.num_parameters(true), 1 + 4 + 20);
  EXPECT_EQ(net.num_parameters(), 1 + 12 + 4 + 20);
}

TEST(Module, StateDictKeepsTiedNamesAndPersistentBuffersOnly) {
  Net net;
  nn::StateDict sd = net.state_dict();
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"scale", "steps", "enc.weight", "enc.bias",
                                                 "emb.weight", "dec.weight"}));
  EXPECT_TRUE(sd.at("dec.weight").is_same(sd.at("emb.weight")));
  EXPECT_EQ(names_of(net.named_buffers()), (std::vector<std::string>{"steps", "cache"}));
}

TEST(Module, LoadStateDictStrictListsEveryProblemInOneError) {
  Net net;
  nn::StateDict dict;
  dict.insert("enc.weight", zeros({4, 3}));
  dict.insert("enc.bias", zeros({7}));  // shape mismatch
  dict.insert("emb.weight", zeros({5, 4}));
  dict.insert("surprise", zeros({1}));  // unexpected
  // missing: scale, steps (dec.weight is tied to the present emb.weight)
  try {
    net.load_state_dict(dict);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[load_state_dict] Net"), std::string::npos) << m;
    EXPECT_NE(m.find("missing keys: scale, steps"), std::string::npos) << m;
    EXPECT_NE(m.find("unexpected keys: surprise"), std::string::npos) << m;
    EXPECT_NE(m.find("enc.bias (checkpoint [7], model [4])"), std::string::npos) << m;
    EXPECT_EQ(m.find("dec.weight"), std::string::npos) << "a tied key is not missing: " << m;
  }
}

TEST(Module, LoadStateDictNonStrictReportsAndCopiesInPlace) {
  Net net;
  Tensor handle = net.enc->weight();  // an outside handle (as an optimizer holds)
  nn::StateDict dict;
  std::vector<float> w(12);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f * i;
  dict.insert("enc.weight", tensor(w, {4, 3}).to(DType::bf16));  // converted to f32
  dict.insert("dec.weight", full({5, 4}, 3.0));                  // through the tied alias
  dict.insert("extra", zeros({1}));
  nn::LoadResult r = net.load_state_dict(dict, /*strict=*/false);
  EXPECT_EQ(r.unexpected_keys, std::vector<std::string>{"extra"});
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"scale", "steps", "enc.bias"}));
  EXPECT_EQ(handle.dtype(), DType::f32);
  EXPECT_EQ(handle.to_vector<float>(), w);
  EXPECT_EQ(net.emb->weight().to_vector<float>(), std::vector<float>(20, 3.0f));
  EXPECT_TRUE(net.emb->weight().requires_grad());
  // Shape mismatches throw even when not strict.
  nn::StateDict bad;
  bad.insert("scale", zeros({2}));
  EXPECT_THROW(net.load_state_dict(bad, false), Error);
}

TEST(Module, TrainEvalReachesEverySubmodule) {
  Net net;
  EXPECT_TRUE(net.is_training());
  net.eval();
  for (auto& [name, m] : net.named_modules()) EXPECT_FALSE(m->is_training()) << name;
  net.train();
  for (auto& [name, m] : net.named_modules()) EXPECT_TRUE(m->is_training()) << name;
}

TEST(Module, ToLazyAndBackKeepsTiesHandlesAndValues) {
  testing::reset_lazy_state();
  Net net;
  Tensor outside = net.emb->weight();
  std::vector<float> before = outside.to_vector<float>();
  net.to(Device("lazy"));
  EXPECT_TRUE(net.dec->weight().is_same(net.emb->weight()));
  EXPECT_EQ(outside.device(), Device("lazy"));
  EXPECT_EQ(net.device(), Device("lazy"));
  for (auto& [name, t] : net.state_dict()) EXPECT_TRUE(t.device().is_lazy()) << name;
  // Training through the tie on the lazy device reaches the shared tensor.
  Tensor ids = tensor_i64({1, 3}, {2}).to(Device("lazy"));
  Tensor loss = sum(net.dec->forward(net.emb->forward(ids)));
  loss.backward();
  lazy::mark_step();
  ASSERT_TRUE(outside.grad().defined());
  EXPECT_EQ(outside.grad().device(), Device("lazy"));
  net.to(Device("cpu"));
  EXPECT_EQ(outside.device(), Device("cpu"));
  EXPECT_EQ(outside.grad().device(), Device("cpu"));
  EXPECT_EQ(outside.to_vector<float>(), before);
  net.zero_grad();
  for (const Tensor& p : net.parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Module, ToDtypeConvertsFloatingTensorsInPlace) {
  Net net;
  Tensor outside = net.enc->weight();
  std::vector<float> w = outside.to_vector<float>();
  net.to(DType::bf16);
  EXPECT_EQ(outside.dtype(), DType::bf16);
  EXPECT_TRUE(net.dec->weight().is_same(net.emb->weight()));
  std::vector<float> back = outside.to_vector<float>();
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(back[i], w[i], 1e-2 * std::fabs(w[i]) + 1e-6);
}

TEST(Module, RegistrationErrorsNameTheProblem) {
  Net net;
  EXPECT_THROW(net.register_parameter("scale", zeros({1})), Error);
  EXPECT_THROW(net.register_parameter("a.b", zeros({1})), Error);
  EXPECT_THROW(net.register_module("enc", std::make_shared<Linear>(1, 1)), Error);
  EXPECT_THROW(net.set_parameter("scale", zeros({3})), Error);
  EXPECT_THROW(net.set_parameter("nope", zeros({1})), Error);
  nn::ModuleList list;
  list.push_back(std::make_shared<Linear>(2, 2));
  EXPECT_EQ(list.named_children().front().first, "0");
  EXPECT_THROW(list.at<nn::Embedding>(0), Error);
  EXPECT_THROW(list.at<Linear>(1), Error);
  nn::StateDict sd;
  sd.insert("a", zeros({1}));
  EXPECT_THROW(sd.insert("a", zeros({1})), Error);
  EXPECT_THROW(sd.at("b"), Error);
}

}  // namespace
}  // namespace loom
