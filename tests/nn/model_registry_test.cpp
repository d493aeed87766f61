// The open model registry (loom/model_registry.h): register_model_type's
// refusals (a taken model_type, no base model, an entry not built from a
// ModelConfig) and what the registry derives from each config's
// loom::ModelConfig members (LoRA defaults, max positions). A successful
// registration from outside loom is examples/custom_model.cpp (CTest
// example_custom_model); none is made here, so the registry stays loom's own
// for the other tests of this binary.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error_of.h"
#include "loom/models.h"
#include "train/train_test_util.h"  // tiny_gpt2_config

namespace loom {
namespace {

using testing::error_of;

TEST(RegisterModelType, RefusesATakenModelType) {
  std::string m = error_of([] {
    register_model_type(
        model_type_of<GPT2Config>("gpt2", {causal_lm_class<GPT2LMHeadModel>("GPT2LMHeadModel"),
                                           base_model_class<GPT2Model>("GPT2Model")}));
  });
  EXPECT_NE(m.find("model_type 'gpt2' is already registered"), std::string::npos) << m;
}

TEST(RegisterModelType, RefusesAnEntryWithoutBaseModel) {
  std::string m = error_of([] {
    register_model_type(
        model_type_of<GPT2Config>("gpt2_headless", {causal_lm_class<GPT2LMHeadModel>("X")}));
  });
  EXPECT_NE(m.find("'gpt2_headless' registers no base model"), std::string::npos) << m;
  m = error_of([] { model_type_entry("gpt2_headless"); });  // not registered half-way
  EXPECT_NE(m.find("model_type 'gpt2_headless' is not supported"), std::string::npos) << m;
}

TEST(RegisterModelType, RefusesAHandBuiltEntryWithoutConfigFunctions) {
  ModelTypeEntry e;
  e.model_type = "hand_built";
  e.architectures = {base_model_class<GPT2Model>("GPT2Model")};
  std::string m = error_of([&] { register_model_type(e); });
  EXPECT_NE(m.find("'hand_built' lacks its config functions"), std::string::npos) << m;
  e.model_type = "";
  m = error_of([&] { register_model_type(e); });
  EXPECT_NE(m.find("the model_type is empty"), std::string::npos) << m;
}

TEST(ModelConfigConcept, LoraDefaultsComeFromEachConfig) {
  // peft/utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING.
  EXPECT_EQ(default_lora_target_modules("gpt2"), std::vector<std::string>{"c_attn"});
  EXPECT_EQ(default_lora_target_modules("llama"), (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(default_lora_target_modules("qwen2"), (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(default_lora_target_modules("bert"), (std::vector<std::string>{"query", "value"}));
  std::string m = error_of([] { default_lora_target_modules("t5"); });
  EXPECT_NE(m.find("no default target_modules for model_type 't5'"), std::string::npos) << m;
}

TEST(ModelConfigConcept, RegistryReadsMaxPositionsFromEachConfig) {
  EXPECT_EQ(model_type_entry("gpt2").read_config(R"({"n_positions": 77})", "t").max_positions, 77);
  EXPECT_EQ(
      model_type_entry("bert").read_config(R"({"max_position_embeddings": 66})", "t").max_positions,
      66);
  EXPECT_EQ(model_type_entry("qwen2").read_config(R"({"model_type": "qwen2"})", "t").max_positions,
            32768);  // Qwen2Config's default, from the registry's defaults
  EXPECT_NE(model_type_entry("qwen2").default_config_json().find("\"qwen2\""), std::string::npos);
}

// parameter_count() (what the memory checks use) is the base model's
// parameters plus an untied LM head, for each of loom's configs, tied and untied.
TEST(ModelConfigConcept, ParameterCountIsTheBaseModelPlusAnUntiedHead) {
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    GPT2Config g = testing::tiny_gpt2_config();
    g.tie_word_embeddings = tied;
    const double g_head = tied ? 0 : static_cast<double>(g.vocab_size * g.n_embd);
    EXPECT_EQ(g.parameter_count(), static_cast<double>(GPT2Model(g).num_parameters()) + g_head);
    if (!tied)  // no shared tensor: num_parameters counts the head once
      EXPECT_EQ(g.parameter_count(), static_cast<double>(GPT2LMHeadModel(g).num_parameters()));
    BertConfig b;
    b.num_hidden_layers = 2;
    b.hidden_size = 16;
    b.num_attention_heads = 2;
    b.intermediate_size = 32;
    b.max_position_embeddings = 24;
    b.vocab_size = 50;
    b.tie_word_embeddings = tied;
    const double b_head = tied ? 0 : static_cast<double>(b.vocab_size * b.hidden_size);
    EXPECT_EQ(b.parameter_count(), static_cast<double>(BertModel(b).num_parameters()) + b_head);
  }
  // The untied counts are larger by exactly the head: a test of the formula.
  GPT2Config tied, untied;
  untied.tie_word_embeddings = false;
  EXPECT_EQ(untied.parameter_count() - tied.parameter_count(),
            static_cast<double>(tied.vocab_size * tied.n_embd));
}

}  // namespace
}  // namespace loom
