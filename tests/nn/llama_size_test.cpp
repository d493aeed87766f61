// Size checks before allocation for the Llama family (issue 13): the parameter count of
// LlamaConfig::parameter_count equals the built model's (tied, untied, Qwen2 biases, GQA,
// head_dim), a config larger than memory is a loom::Error before anything is allocated
// (constructor, registry check_fits, from_pretrained), and a config.json whose sizes
// disagree with the checkpoint is refused before the model is built. Also: every
// registered class implements its task's interface (ModelRegistryTasks).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "io/config_json.h"
#include "loom/llama.h"
#include "loom/masked_lm.h"
#include "loom/model_registry.h"
#include "loom/sequence_classifier.h"
#include "nn/model_test_util.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

LlamaConfig tiny_llama_config() {
  LlamaConfig c;
  c.vocab_size = 96;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 64;
  return c;
}

TEST(LlamaSize, ParameterCountEqualsTheBuiltModel) {
  LlamaConfig tied = tiny_llama_config();
  LlamaConfig untied = tiny_llama_config();
  untied.tie_word_embeddings = false;
  untied.head_dim = 12;  // != hidden_size / heads
  untied.mlp_bias = true;
  untied.attention_bias = true;
  LlamaConfig qwen = LlamaConfig::qwen2();
  qwen.vocab_size = 80;
  qwen.hidden_size = 32;
  qwen.intermediate_size = 40;
  qwen.num_hidden_layers = 3;
  qwen.num_attention_heads = 8;
  qwen.num_key_value_heads = 1;
  qwen.tie_word_embeddings = false;
  LlamaConfig qwen3 = qwen;  // q_norm / k_norm over head_dim, attention_bias on q/k/v/o
  qwen3.model_type = "qwen3";
  qwen3.head_dim = 6;
  qwen3.attention_bias = true;
  for (const LlamaConfig& c : {tied, untied, qwen, qwen3}) {
    SCOPED_TRACE(c.size_text());
    LlamaModel base(c);
    EXPECT_EQ(c.parameter_count(false), static_cast<double>(base.num_parameters()));
    if (!c.tie_word_embeddings) {  // no shared tensor: num_parameters counts the head once
      LlamaForCausalLM lm(c);
      EXPECT_EQ(c.parameter_count(), static_cast<double>(lm.num_parameters()));
    }
  }
}

TEST(LlamaSize, ConfigLargerThanMemoryIsRefusedBeforeAllocating) {
  LlamaConfig c = tiny_llama_config();
  c.num_hidden_layers = 1'000'000'000'000;
  std::string m = testing::error_of([&] { LlamaForCausalLM model(c); });
  EXPECT_EQ(m.rfind("[LlamaModel] num_hidden_layers 1000000000000, hidden_size 32, "
                    "intermediate_size 48, num_attention_heads 4, num_key_value_heads 2, "
                    "vocab_size 96 make ",
                    0),
            0u)
      << m;
  EXPECT_NE(m.find(" of memory available ("), std::string::npos) << m;
  c = tiny_llama_config();
  c.hidden_size = 4'000'000'000;  // divisible by 4 heads; H*H overflows int64 sizes' products
  m = testing::error_of([&] { LlamaModel model(c); });
  EXPECT_NE(m.find("of memory available"), std::string::npos) << m;
  // The registry's check_fits (what `loom train` runs before building the model).
  const ModelTypeEntry& e = model_type_entry("qwen2");
  json j = json::parse(e.default_config_json());
  j["num_hidden_layers"] = 1'000'000'000;
  m = testing::error_of([&] { e.check_fits(j.dump(), "<test>", "[train]", 4, "weights, grads"); });
  EXPECT_EQ(m.rfind("[train] num_hidden_layers 1000000000, ", 0), 0u) << m;
  EXPECT_NE(m.find("x 4 (weights, grads)"), std::string::npos) << m;
}

// Rewrites the copied fixture's config.json with `key` = `value`.
std::string llama_fixture_with(const testing::TempDir& tmp, const std::string& key, int64_t value) {
  const std::string dir = tmp / "m";
  fs::copy(testing::model_fixture("llama"), dir);
  json cfg = json::parse(io::read_config_text(dir + "/config.json"));
  cfg[key] = value;
  std::ofstream(dir + "/config.json") << cfg.dump();
  return dir;
}

TEST(LlamaSize, PretrainedConfigSizesAreCheckedBeforeAllocating) {
  {
    testing::TempDir tmp;
    std::string dir = llama_fixture_with(tmp, "vocab_size", 10'000'000);
    std::string m = testing::error_of([&] { LlamaForCausalLM::from_pretrained(dir); });
    EXPECT_NE(m.find("shape mismatch: model.embed_tokens.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("config.json's vocab_size, hidden_size disagree with the weights (checked "
                     "before the model is allocated)"),
              std::string::npos)
        << m;
  }
  {
    testing::TempDir tmp;
    std::string dir = llama_fixture_with(tmp, "num_hidden_layers", 100'000'000'000);
    std::string m = testing::error_of([&] { LlamaForCausalLM::from_pretrained(dir); });
    EXPECT_NE(m.find("[from_pretrained] " + dir + ": config.json's num_hidden_layers 100000000000"),
              std::string::npos)
        << m;
  }
  {
    testing::TempDir tmp;
    std::string dir = llama_fixture_with(tmp, "intermediate_size", 7);
    std::string m = testing::error_of([&] { LlamaForCausalLM::from_pretrained(dir); });
    EXPECT_NE(m.find("layers.0.mlp.gate_proj.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("intermediate_size, hidden_size"), std::string::npos) << m;
  }
}

// Each registered class serves its task through the task's interface (what the Trainer and
// the CLI use): built from a tiny config, serves_task says so and the interface's sizes are
// the config's; a class never serves another task.
TEST(ModelRegistryTasks, EveryClassImplementsItsTasksInterface) {
  const std::map<std::string, std::string> tiny = {
      {"gpt2", R"({"model_type": "gpt2", "n_layer": 1, "n_embd": 16, "n_head": 2,
                   "n_positions": 32, "vocab_size": 40})"},
      {"bert", R"({"model_type": "bert", "num_hidden_layers": 1, "hidden_size": 16,
                   "num_attention_heads": 2, "intermediate_size": 32,
                   "max_position_embeddings": 32, "vocab_size": 40, "num_labels": 3})"},
      {"llama", R"({"model_type": "llama", "num_hidden_layers": 1, "hidden_size": 16,
                    "intermediate_size": 32, "num_attention_heads": 2,
                    "max_position_embeddings": 32, "vocab_size": 40})"},
      {"qwen2", R"({"model_type": "qwen2", "num_hidden_layers": 1, "hidden_size": 16,
                    "intermediate_size": 32, "num_attention_heads": 2,
                    "num_key_value_heads": 1, "max_position_embeddings": 32,
                    "vocab_size": 40})"},
      {"qwen3", R"({"model_type": "qwen3", "num_hidden_layers": 1, "hidden_size": 16,
                    "intermediate_size": 32, "num_attention_heads": 2, "head_dim": 12,
                    "num_key_value_heads": 1, "max_position_embeddings": 32,
                    "vocab_size": 40})"}};
  const std::vector<std::string> tasks = {kTaskCausalLM, kTaskMaskedLM, kTaskTextClassification};
  for (const ModelTypeEntry& e : model_types()) {
    ASSERT_TRUE(tiny.count(e.model_type)) << e.model_type << ": add a tiny config here";
    for (const ArchitectureEntry& a : e.architectures) {
      SCOPED_TRACE(a.name);
      std::shared_ptr<PretrainedModel> m = a.make(tiny.at(e.model_type), "test");
      EXPECT_EQ(m->architecture(), a.name);
      for (const std::string& t : tasks) EXPECT_EQ(serves_task(*m, t), t == a.task) << t;
      if (auto* lm = dynamic_cast<MaskedLM*>(m.get())) {
        EXPECT_EQ(lm->vocab_size(), 40);
        EXPECT_EQ(lm->max_positions(), 32);
      }
      if (auto* cls = dynamic_cast<SequenceClassifier*>(m.get())) {
        EXPECT_EQ(cls->num_labels(), 3);
        EXPECT_EQ(cls->pretrained_config().num_labels(), 3);
      }
    }
  }
}

}  // namespace
}  // namespace loom
