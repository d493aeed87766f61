// LoRA mechanics (loom/lora.h) on the tiny Llama and GPT-2 fixtures: which
// layers get adapters (PEFT's defaults, suffix matching, "all-linear"), that
// the base is frozen and a fresh adapter (lora_B zeros) changes nothing,
// the adapter files (PEFT's keys, adapter_config.json fields) and loading
// them back, auto_from_pretrained on an adapter directory, and the errors
// for bad targets and configs PEFT features loom lacks.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>

#include "common/temp_dir.h"
#include "loom/lora.h"
#include "nn/model_test_util.h"

namespace loom {
namespace {

std::shared_ptr<CausalLM> tiny_base(const std::string& kind) {
  return std::dynamic_pointer_cast<CausalLM>(testing::load_fixture_model(kind, Device("cpu")));
}

std::string lora_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

ModelInputs lora_test_inputs() {
  ModelInputs in;
  in.input_ids = tensor_i64({5, 17, 42, 8, 77, 3}, {1, 6});
  return in;
}

TEST(Lora, DefaultTargetsArePeftsAndAFreshAdapterChangesNothing) {
  auto base = tiny_base("llama");
  Tensor before = base->forward(lora_test_inputs()).logits;
  manual_seed(3);
  auto peft = get_peft_model(base, {});
  EXPECT_EQ(peft->peft_config().target_modules, (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(peft->targeted_module_names(),
            (std::vector<std::string>{
                "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj",
                "model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.v_proj"}));
  std::set<std::string> trainable;
  for (const auto& [name, p] : peft->named_parameters())
    if (p.requires_grad()) trainable.insert(name);
  EXPECT_EQ(trainable.size(), 8u);
  EXPECT_TRUE(trainable.count("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"));
  EXPECT_TRUE(trainable.count("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight"));
  const auto& a = peft->named_parameters();
  for (const auto& [name, p] : a) {
    if (name.find("q_proj.lora_A") != std::string::npos) {
      EXPECT_EQ(p.shape(), (Shape{8, 32}));  // [r, in]
      double bound = 1.0 / std::sqrt(32.0), m = 0;
      for (double v : p.to_vector<double>()) m = std::max(m, std::fabs(v));
      EXPECT_LE(m, bound);
      EXPECT_GT(m, 0.5 * bound) << "lora_A drawn as nn.Linear (kaiming-uniform a=sqrt(5))";
    }
  }
  // lora_B is zeros, so the adapted model computes the base's logits.
  Tensor after = peft->forward(lora_test_inputs()).logits;
  EXPECT_TRUE(testing::close_scaled(after, before, 0)) << "a fresh adapter changed the logits";
}

TEST(Lora, AllLinearWrapsEveryLinearButTheLmHead) {
  LoraConfig cfg;
  cfg.target_modules = {"all-linear"};
  auto peft = get_peft_model(tiny_base("llama"), cfg);
  EXPECT_EQ(peft->targeted_module_names().size(), 14u);  // 7 per layer, 2 layers
  for (const std::string& n : peft->targeted_module_names())
    EXPECT_EQ(n.find("lm_head"), std::string::npos) << n;
  // Saved as PEFT does: the shorthand expanded to the layers' names.
  EXPECT_EQ(peft->peft_config().target_modules,
            (std::vector<std::string>{"down_proj", "gate_proj", "k_proj", "o_proj", "q_proj",
                                      "up_proj", "v_proj"}));
}

TEST(Lora, Gpt2Conv1DGetsFanInFanOut) {
  LoraConfig cfg;  // default for gpt2: c_attn
  auto peft = get_peft_model(tiny_base("gpt2"), cfg);
  EXPECT_TRUE(peft->peft_config().fan_in_fan_out);
  EXPECT_EQ(
      peft->targeted_module_names(),
      (std::vector<std::string>{"transformer.h.0.attn.c_attn", "transformer.h.1.attn.c_attn"}));
  auto sd = peft->adapter_state_dict();
  ASSERT_EQ(sd.size(), 4u);
  EXPECT_EQ(sd[0].first, "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight");
  EXPECT_EQ(sd[0].second.shape(), (Shape{8, 32}));
  EXPECT_EQ(sd[1].second.shape(), (Shape{96, 8}));  // [out = 3 * n_embd, r]
}

TEST(Lora, BadTargetsAreErrors) {
  LoraConfig cfg;
  cfg.target_modules = {"qq_proj"};
  EXPECT_NE(lora_error_of([&] {
              get_peft_model(tiny_base("llama"), cfg);
            }).find("target modules {qq_proj} not found"),
            std::string::npos);
  cfg.target_modules = {"self_attn"};
  EXPECT_NE(lora_error_of([&] {
              get_peft_model(tiny_base("llama"), cfg);
            }).find("'model.layers.0.self_attn' is a LlamaAttention, not a Linear"),
            std::string::npos);
  cfg.target_modules = {"q_proj"};
  cfg.r = 0;
  EXPECT_NE(lora_error_of([&] {
              get_peft_model(tiny_base("llama"), cfg);
            }).find("[LoraConfig] r must be >= 1, got 0"),
            std::string::npos);
  // A layer takes one adapter.
  auto base = tiny_base("llama");
  auto once = get_peft_model(base, {});
  EXPECT_NE(lora_error_of([&] { get_peft_model(base, {}); }).find("has an adapter already"),
            std::string::npos);
}

// Each parameter's requires_grad, by name.
std::map<std::string, bool> lora_requires_grad_of(const nn::Module& m) {
  std::map<std::string, bool> out;
  for (const auto& [name, p] : m.named_parameters()) out[name] = p.requires_grad();
  return out;
}

TEST(Lora, ABadTargetLeavesTheBaseModelAsItWas) {
  auto base = tiny_base("llama");
  Tensor before = base->forward(lora_test_inputs()).logits;
  {
    Tensor first = base->named_parameters().front().second;
    first.requires_grad_(false);  // the user's own choice, kept too
  }
  const std::map<std::string, bool> flags = lora_requires_grad_of(*base);
  LoraConfig cfg;
  // Every q_proj matches before model.norm, which is no Linear.
  cfg.target_modules = {"q_proj", "norm"};
  std::string err = lora_error_of([&] { get_peft_model(base, cfg); });
  EXPECT_NE(err.find("'model.norm' is a "), std::string::npos) << err;
  EXPECT_NE(err.find("not a Linear"), std::string::npos) << err;
  for (const auto& [name, t] : base->state_dict())
    EXPECT_EQ(name.find("lora_"), std::string::npos) << name << ": adapter left behind";
  EXPECT_EQ(lora_requires_grad_of(*base), flags) << "the failed get_peft_model froze the base";
  EXPECT_TRUE(testing::close_scaled(base->forward(lora_test_inputs()).logits, before, 0));
  // And the model takes an adapter afterwards.
  cfg.target_modules = {"q_proj"};
  EXPECT_EQ(get_peft_model(base, cfg)->targeted_module_names().size(), 2u);

  // GPT-2: c_attn (Conv1D) matches before lm_head (Linear).
  auto gpt2 = tiny_base("gpt2");
  const std::map<std::string, bool> gpt2_flags = lora_requires_grad_of(*gpt2);
  cfg.target_modules = {"c_attn", "lm_head"};
  err = lora_error_of([&] { get_peft_model(gpt2, cfg); });
  EXPECT_NE(err.find("mix Linear and Conv1D"), std::string::npos) << err;
  for (const auto& [name, t] : gpt2->state_dict())
    EXPECT_EQ(name.find("lora_"), std::string::npos) << name << ": adapter left behind";
  EXPECT_EQ(lora_requires_grad_of(*gpt2), gpt2_flags);
}

TEST(Lora, UnloadKeepsTheParametersTheUserHadFrozen) {
  for (bool merge : {false, true}) {
    auto base = tiny_base("llama");
    const std::string frozen = base->named_parameters().front().first;
    {
      Tensor first = base->named_parameters().front().second;
      first.requires_grad_(false);
    }
    const std::map<std::string, bool> flags = lora_requires_grad_of(*base);
    auto peft = get_peft_model(base, {});
    for (const auto& [name, p] : base->named_parameters())
      if (name.find("lora_") == std::string::npos) EXPECT_FALSE(p.requires_grad()) << name;
    std::shared_ptr<CausalLM> back = merge ? peft->merge_and_unload() : peft->unload();
    EXPECT_EQ(back.get(), base.get());
    const std::map<std::string, bool> after = lora_requires_grad_of(*back);
    EXPECT_EQ(after, flags) << (merge ? "merge_and_unload" : "unload");
    EXPECT_FALSE(after.at(frozen)) << frozen << " was frozen by the user";
  }
}

TEST(Lora, SavesPeftsFilesAndLoadsThemBack) {
  testing::TempDir dir;
  auto base = tiny_base("llama");
  LoraConfig cfg;
  cfg.r = 4;
  cfg.lora_alpha = 16;
  cfg.lora_dropout = 0.05;
  cfg.target_modules = {"q_proj", "down_proj"};
  cfg.base_model_name_or_path = testing::model_fixture("llama");
  auto peft = get_peft_model(base, cfg);
  {
    NoGradGuard no_grad;  // nonzero B so a lost adapter would show
    for (auto& [name, t] : peft->adapter_state_dict())
      if (name.find("lora_B") != std::string::npos) nn::init_uniform_(t, -0.5, 0.5);
  }
  peft->eval();
  Tensor expected = peft->forward(lora_test_inputs()).logits;
  peft->save_pretrained(dir.path());

  nlohmann::json j = nlohmann::json::parse(std::ifstream(dir / "adapter_config.json"));
  EXPECT_EQ(j["peft_type"], "LORA");
  EXPECT_EQ(j["task_type"], "CAUSAL_LM");
  EXPECT_EQ(j["r"], 4);
  EXPECT_EQ(j["lora_alpha"], 16.0);
  EXPECT_EQ(j["lora_dropout"], 0.05);
  EXPECT_EQ(j["bias"], "none");
  EXPECT_EQ(j["fan_in_fan_out"], false);
  EXPECT_EQ(j["inference_mode"], true);
  EXPECT_EQ(j["target_modules"], nlohmann::json({"q_proj", "down_proj"}));
  EXPECT_EQ(j["base_model_name_or_path"], testing::model_fixture("llama"));
  auto file = safetensors::File::open(dir / "adapter_model.safetensors");
  std::set<std::string> keys;
  for (const auto& info : file.tensors()) keys.insert(info.name);
  EXPECT_EQ(keys.size(), 8u);
  EXPECT_TRUE(keys.count("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"));
  EXPECT_EQ(file.metadata().at("format"), "pt");

  auto loaded = PeftModelForCausalLM::from_pretrained(tiny_base("llama"), dir.path());
  EXPECT_TRUE(testing::close_scaled(loaded->forward(lora_test_inputs()).logits, expected, 0));
  for (const auto& [name, p] : loaded->named_parameters())
    EXPECT_FALSE(p.requires_grad()) << name << ": inference_mode freezes the adapters too";
  // auto_from_pretrained on the adapter directory: base from base_model_name_or_path.
  auto any = auto_from_pretrained(dir.path());
  ASSERT_NE(dynamic_cast<PeftModelForCausalLM*>(any.get()), nullptr);
  EXPECT_TRUE(testing::close_scaled(any->forward(lora_test_inputs()).logits, expected, 0));
}

TEST(Lora, AdapterFilesThatDoNotFitAreErrors) {
  testing::TempDir dir;
  LoraConfig cfg;
  cfg.target_modules = {"q_proj"};
  get_peft_model(tiny_base("llama"), cfg)->save_pretrained(dir.path());
  // Same file, config naming another target: every key is missing / unexpected.
  nlohmann::json j = nlohmann::json::parse(std::ifstream(dir / "adapter_config.json"));
  j["target_modules"] = {"v_proj"};
  dir.write("adapter_config.json", j.dump());
  auto base = tiny_base("llama");
  Tensor before = base->forward(lora_test_inputs()).logits;
  std::string err = lora_error_of([&] { PeftModelForCausalLM::from_pretrained(base, dir.path()); });
  EXPECT_NE(err.find("missing keys: base_model.model.model.layers.0.self_attn.v_proj.lora_A"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("unexpected keys: base_model.model.model.layers.0.self_attn.q_proj"),
            std::string::npos)
      << err;
  // The failed load leaves the base as it was: no adapter, trainable, same logits.
  for (const auto& [name, t] : base->state_dict())
    EXPECT_EQ(name.find("lora_"), std::string::npos) << name;
  for (const auto& [name, p] : base->named_parameters()) EXPECT_TRUE(p.requires_grad()) << name;
  EXPECT_TRUE(testing::close_scaled(base->forward(lora_test_inputs()).logits, before, 0));
  j["target_modules"] = "q_proj|v_proj";
  dir.write("adapter_config.json", j.dump());
  err = lora_error_of([&] { LoraConfig::from_json_file(dir / "adapter_config.json"); });
  EXPECT_NE(err.find("a regex string is not supported"), std::string::npos) << err;
  j["target_modules"] = {"q_proj"};
  j["use_dora"] = true;
  dir.write("adapter_config.json", j.dump());
  err = lora_error_of([&] { LoraConfig::from_json_file(dir / "adapter_config.json"); });
  EXPECT_NE(err.find("use_dora = true is not supported"), std::string::npos) << err;
  j["use_dora"] = false;
  j["peft_type"] = "IA3";
  dir.write("adapter_config.json", j.dump());
  err = lora_error_of([&] { LoraConfig::from_json_file(dir / "adapter_config.json"); });
  EXPECT_NE(err.find("peft_type must be \"LORA\""), std::string::npos) << err;
}

TEST(Lora, DropoutActsOnTheAdapterInputInTrainingOnly) {
  LoraConfig cfg;
  cfg.lora_dropout = 0.5;
  auto peft = get_peft_model(tiny_base("llama"), cfg);
  {
    NoGradGuard no_grad;
    for (auto& [name, t] : peft->adapter_state_dict())
      if (name.find("lora_B") != std::string::npos) nn::init_uniform_(t, -0.5, 0.5);
  }
  peft->eval();
  Tensor a = peft->forward(lora_test_inputs()).logits;
  Tensor b = peft->forward(lora_test_inputs()).logits;
  EXPECT_TRUE(testing::close_scaled(a, b, 0));
  peft->train();
  manual_seed(1);
  Tensor c = peft->forward(lora_test_inputs()).logits;
  EXPECT_FALSE(testing::close_scaled(c, a, 1e-4)) << "lora_dropout had no effect in training";
}

// Where the dropout sits: in training the adapter gives
// lora_B(lora_A(dropout(x))) * lora_alpha / r with the very mask nn::Dropout
// draws on x under the same seed (PEFT's lora.Linear.forward), not dropout of
// the update nor of lora_A's output, and in eval the undropped update.
TEST(Lora, DropoutMaskIsDrawnOnTheAdapterInput) {
  LoraConfig cfg;
  cfg.r = 2;
  cfg.lora_alpha = 6;  // scaling 3
  cfg.lora_dropout = 0.5;
  manual_seed(3);
  LoraAdapter adapter(8, 5, cfg);
  {
    NoGradGuard no_grad;
    nn::init_uniform_(adapter.lora_B().weight(), -0.5, 0.5);
  }
  auto modules = adapter.modules();
  for (auto& [name, m] : modules) m->train();
  const Tensor x = randn({3, 8});
  const Tensor a_t = transpose(adapter.lora_A().weight(), 0, 1);  // [in, r]
  const Tensor b_t = transpose(adapter.lora_B().weight(), 0, 1);  // [r, out]
  manual_seed(11);
  const Tensor got = adapter.forward(x);
  nn::Dropout drop(0.5);
  drop.train();
  manual_seed(11);
  const Tensor dropped = drop.forward(x);
  EXPECT_FALSE(testing::close_scaled(dropped, x, 1e-3)) << "the mask dropped nothing";
  const Tensor want = matmul(matmul(dropped, a_t), b_t) * 3.0;
  EXPECT_TRUE(testing::close_scaled(got, want, 1e-5));
  for (auto& [name, m] : modules) m->eval();
  EXPECT_TRUE(testing::close_scaled(adapter.forward(x), matmul(matmul(x, a_t), b_t) * 3.0, 1e-5));
}

}  // namespace
}  // namespace loom
