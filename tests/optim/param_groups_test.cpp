// Weight-decay grouping against transformers' Trainer.get_decay_parameter_names
// (tests/fixtures/optim/decay_names.json: the named_parameters of tiny GPT-2
// and BERT models and which of them the Trainer decays), plus the two groups
// weight_decay_groups builds.
#include <gtest/gtest.h>

#include <set>

#include "optim/optim_test_util.h"

namespace loom {
namespace {

using nlohmann::json;

TEST(ParamGroups, NoDecayNamesMatchTheTrainer) {
  json fixture = testing::optim_fixture("decay_names.json");
  ASSERT_EQ(fixture["models"].size(), 2u);
  for (const json& m : fixture["models"]) {
    std::set<std::string> decay = m["decay"].get<std::set<std::string>>();
    size_t no_decay = 0;
    for (const std::string& name : m["names"].get<std::vector<std::string>>()) {
      bool expected = !decay.count(name);
      no_decay += expected;
      EXPECT_EQ(optim::is_no_decay_name(name), expected) << m["model"] << ": " << name;
    }
    EXPECT_GT(no_decay, 4u) << m["model"];
    EXPECT_GT(decay.size(), 4u) << m["model"];
  }
}

TEST(ParamGroups, MoreNames) {
  EXPECT_TRUE(optim::is_no_decay_name("model.norm.weight"));  // Llama final norm
  EXPECT_TRUE(optim::is_no_decay_name("layers.0.input_layernorm.weight"));
  EXPECT_TRUE(optim::is_no_decay_name("layers.0.post_attention_norm.weight"));
  EXPECT_TRUE(optim::is_no_decay_name("encoder.block.0.ln1.weight"));
  EXPECT_TRUE(optim::is_no_decay_name("blocks.3.norm2.weight"));
  EXPECT_TRUE(optim::is_no_decay_name("decoder.final_ln.weight"));
  EXPECT_TRUE(optim::is_no_decay_name("attn.c_attn.Bias"));
  EXPECT_FALSE(optim::is_no_decay_name("transformer.wte.weight"));
  EXPECT_FALSE(optim::is_no_decay_name("lm_head.weight"));
  EXPECT_FALSE(optim::is_no_decay_name("normalizer.weight"));
  EXPECT_FALSE(optim::is_no_decay_name("kiln_1.weight"));
  EXPECT_FALSE(optim::is_no_decay_name("ln_weight"));  // a parameter, not a module, named ln_*
}

TEST(ParamGroups, WeightDecayGroups) {
  Tensor wte = zeros({4, 2}).requires_grad_(), w = zeros({2, 2}).requires_grad_();
  Tensor b = zeros({2}).requires_grad_(), ln = ones({2}).requires_grad_();
  Tensor frozen = zeros({2, 2});  // requires_grad false: left out
  std::vector<std::pair<std::string, Tensor>> named = {
      {"transformer.wte.weight", wte},
      {"transformer.h.0.mlp.c_fc.weight", w},
      {"transformer.h.0.mlp.c_fc.bias", b},
      {"transformer.ln_f.weight", ln},
      {"lm_head.weight", wte},  // tied: listed once
      {"frozen.weight", frozen}};
  std::vector<optim::ParamGroup> groups = optim::weight_decay_groups(named, 0.01);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].names, (std::vector<std::string>{"transformer.wte.weight",
                                                       "transformer.h.0.mlp.c_fc.weight"}));
  EXPECT_EQ(groups[1].names,
            (std::vector<std::string>{"transformer.h.0.mlp.c_fc.bias", "transformer.ln_f.weight"}));
  EXPECT_TRUE(groups[0].params[0].is_same(wte));
  EXPECT_TRUE(groups[1].params[1].is_same(ln));
  EXPECT_DOUBLE_EQ(groups[0].option("weight_decay"), 0.01);
  EXPECT_DOUBLE_EQ(groups[1].option("weight_decay"), 0.0);

  // The groups feed AdamW: the no-decay group's parameters do not shrink.
  optim::AdamW opt(groups, {.lr = 0.1, .weight_decay = 0.5});
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].option("weight_decay"), 0.01);
  ln.set_grad(zeros({2}));
  w.set_grad(zeros({2, 2}));
  Tensor w0 = ones({2, 2});
  {
    NoGradGuard ng;
    w.copy_(w0);
  }
  opt.step();
  EXPECT_EQ(ln.to_vector<float>(), (std::vector<float>{1, 1}));
  for (float x : w.to_vector<float>()) EXPECT_FLOAT_EQ(x, 1.0f - 0.1f * 0.01f);
}

}  // namespace
}  // namespace loom
