// Qwen3 (model_type "qwen3", src/nn/models/qwen3/) beyond the shared golden tests
// (golden_test.cpp, ten_steps_test.cpp and llama_test.cpp run the transformers fixture
// tests/fixtures/models/qwen3 too), and the configs of the small Llama-family models people
// fine-tune: the published Qwen3-0.6B and SmolLM2-135M config.json field sets load, count
// transformers' parameters (numbers from transformers 5.24 on the meta device) and build;
// a Llama-family config.json written by transformers is written back to the same JSON.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "io/config_json.h"
#include "nn/model_test_util.h"

namespace loom {
namespace {

using nlohmann::json;

// Qwen/Qwen3-0.6B's config.json as published (transformers 4.51 wrote it).
constexpr const char* kQwen3_0_6B = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

// HuggingFaceTB/SmolLM2-135M's config.json fields (transformers 4.48 with head_dim and
// mlp_bias; nanotron's is_llama_config / rope_interleaved kept as unknown keys).
constexpr const char* kSmolLM2_135M = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 0, "eos_token_id": 0, "head_dim": 64, "hidden_act": "silu",
  "hidden_size": 576, "initializer_range": 0.041666666666666664, "intermediate_size": 1536,
  "is_llama_config": true, "max_position_embeddings": 8192, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 9, "num_hidden_layers": 30,
  "num_key_value_heads": 3, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_interleaved": false, "rope_scaling": null, "rope_theta": 100000,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.48.0",
  "use_cache": true, "vocab_size": 49152})";

// A small config of `c`'s kind: one layer, vocab 256; the rest as given.
std::shared_ptr<LlamaForCausalLM> build_one_layer_qwen3_test(LlamaConfig c) {
  c.num_hidden_layers = 1;
  c.vocab_size = 256;
  manual_seed(7);
  return std::make_shared<LlamaForCausalLM>(c);
}

TEST(Qwen3Config, ReadsQwen3_0_6BAndCountsTransformersParameters) {
  LlamaConfig c = LlamaConfig::from_json_string(kQwen3_0_6B, "Qwen3-0.6B");
  c.validate();
  EXPECT_EQ(c.model_type, "qwen3");
  EXPECT_TRUE(c.qk_norm());
  EXPECT_EQ(c.head_size(), 128) << "explicit head_dim, not hidden_size / heads = 64";
  EXPECT_EQ(c.kv_heads(), 8);
  EXPECT_FALSE(c.qkv_bias());
  EXPECT_FALSE(c.o_bias());
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.layer_class(), "Qwen3DecoderLayer");
  // sum(p.numel()) of transformers' Qwen3ForCausalLM for this config (tied lm_head).
  EXPECT_EQ(c.parameter_count(), 596049920.0);
  std::vector<ConfigTensor> t = c.config_tensors();
  ASSERT_GE(t.size(), 2u);
  EXPECT_EQ(t[1].name, "layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(t[1].shape, Shape({16 * 128, 1024}));
  EXPECT_EQ(c.extra.at("use_sliding_window"), "false");
  EXPECT_EQ(c.extra.at("max_window_layers"), "28");
}

TEST(Qwen3Config, DefaultsAreTransformersQwen3Config) {
  // transformers 5.24: Qwen3Config().to_json_string(), the fields loom keeps.
  json j = json::parse(model_type_entry("qwen3").default_config_json());
  EXPECT_EQ(j.at("model_type"), "qwen3");
  EXPECT_EQ(j.at("vocab_size"), 151936);
  EXPECT_EQ(j.at("hidden_size"), 4096);
  EXPECT_EQ(j.at("intermediate_size"), 22016);
  EXPECT_EQ(j.at("num_hidden_layers"), 32);
  EXPECT_EQ(j.at("num_attention_heads"), 32);
  EXPECT_EQ(j.at("num_key_value_heads"), 32);
  EXPECT_EQ(j.at("head_dim"), 128);
  EXPECT_EQ(j.at("max_position_embeddings"), 32768);
  EXPECT_EQ(j.at("rms_norm_eps"), 1e-6);
  EXPECT_EQ(j.at("attention_bias"), false) << "Qwen3 writes attention_bias (Qwen2 does not)";
  EXPECT_EQ(j.at("tie_word_embeddings"), false);
  EXPECT_TRUE(j.at("bos_token_id").is_null());
  EXPECT_TRUE(j.at("eos_token_id").is_null());
  EXPECT_EQ(model_type_entry("qwen3").for_task("causal-lm")->name, "Qwen3ForCausalLM");
  EXPECT_EQ(model_type_entry("qwen3").base().name, "Qwen3Model");
  EXPECT_EQ(model_type_entry("qwen3").layer_class, "Qwen3DecoderLayer");
  // peft's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING["qwen3"].
  EXPECT_EQ(default_lora_target_modules("qwen3"), (std::vector<std::string>{"q_proj", "v_proj"}));
}

TEST(Qwen3Config, WhatQwen3DoesNotHaveIsRefused) {
  auto validate = [](const char* text) { LlamaConfig::from_json_string(text, "t").validate(); };
  EXPECT_NO_THROW(validate(R"({"model_type": "qwen3", "sliding_window": 4096})"));
  EXPECT_THROW(validate(R"({"model_type": "qwen3", "use_sliding_window": true})"), Error);
  EXPECT_THROW(validate(R"({"model_type": "qwen3", "mlp_bias": true})"), Error);
  EXPECT_THROW(validate(R"({"model_type": "qwen2", "mlp_bias": true})"), Error);
  EXPECT_NO_THROW(validate(R"({"model_type": "llama", "mlp_bias": true})"));
}

// The Llama-family fixtures' config.json (written by transformers 5.24) read and written
// back by loom: the same JSON object, so transformers reads what loom saves.
TEST(Qwen3Config, WritesBackTheJsonTransformersWrote) {
  for (const char* dir : {"llama", "qwen2", "qwen3"}) {
    std::string path = testing::model_fixture(std::string(dir) + "/config.json");
    json original = json::parse(io::read_config_text(path));
    std::string text = LlamaConfig::from_json_file(path).to_json_string();
    EXPECT_EQ(json::parse(text), original) << dir << ":\n" << text;
  }
}

TEST(Qwen3Model, QkNormIsOneRmsNormWeightPerHeadDim) {
  LlamaConfig c = LlamaConfig::from_json_string(kQwen3_0_6B, "Qwen3-0.6B");
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.head_dim = 24;  // != hidden_size / heads
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  auto lm = build_one_layer_qwen3_test(c);
  EXPECT_EQ(lm->architecture(), "Qwen3ForCausalLM");
  std::map<std::string, Shape> shapes;
  double count = 0;
  for (const auto& [name, p] : lm->named_parameters()) {
    shapes[name] = p.shape();
    count += static_cast<double>(p.numel());
  }
  EXPECT_EQ(shapes.at("model.layers.0.self_attn.q_norm.weight"), Shape({24}));
  EXPECT_EQ(shapes.at("model.layers.0.self_attn.k_norm.weight"), Shape({24}));
  EXPECT_EQ(shapes.at("model.layers.0.self_attn.q_proj.weight"), Shape({4 * 24, 32}));
  EXPECT_EQ(shapes.count("model.layers.0.self_attn.q_proj.bias"), 0u);
  EXPECT_EQ(shapes.count("lm_head.weight"), 0u) << "tied: lm_head shares embed_tokens";
  EXPECT_EQ(lm->config().parameter_count(), count);
  // q_norm's weight reaches the logits (all ones at init: scale it and they change).
  ModelInputs in;
  in.input_ids = tensor_i64({3, 17, 42, 8}, {1, 4});
  Tensor before = lm->forward(in).logits;
  for (auto& [name, p] : lm->named_parameters())
    if (name == "model.layers.0.self_attn.q_norm.weight") {
      NoGradGuard no_grad;
      p.copy_(p * 3.0);
    }
  EXPECT_FALSE(testing::all_close(lm->forward(in).logits, before, 1e-4, 0));
}

TEST(SmolLMConfig, SmolLM2ConfigLoadsAsLlama) {
  LlamaConfig c = LlamaConfig::from_json_string(kSmolLM2_135M, "SmolLM2-135M");
  c.validate();
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_FALSE(c.qk_norm());
  EXPECT_EQ(c.head_size(), 64);
  EXPECT_EQ(c.kv_heads(), 3);
  EXPECT_EQ(c.rope_theta, 1e5) << "an integer rope_theta is a number";
  EXPECT_EQ(c.rope_scaling.rope_type, "default") << "rope_scaling null";
  EXPECT_FALSE(c.rope_parameters_form);
  EXPECT_EQ(c.bos_token_id, 0);
  EXPECT_EQ(c.eos_token_id, 0);
  // sum(p.numel()) of transformers' LlamaForCausalLM for this config (tied lm_head).
  EXPECT_EQ(c.parameter_count(), 134515008.0);
  // Unknown keys are kept and written back; known ones keep their values.
  json back = json::parse(c.to_json_string());
  EXPECT_EQ(back.at("is_llama_config"), true);
  EXPECT_EQ(back.at("rope_interleaved"), false);
  EXPECT_EQ(back.at("torch_dtype"), "bfloat16");
  EXPECT_TRUE(back.at("rope_scaling").is_null());
  EXPECT_EQ(back.at("rope_theta"), 1e5);
  EXPECT_EQ(back.at("head_dim"), 64);
  EXPECT_EQ(back.at("mlp_bias"), false);
  EXPECT_EQ(back.at("tie_word_embeddings"), true);
  // It builds and runs (one layer, small vocabulary), lm_head tied to embed_tokens.
  auto lm = build_one_layer_qwen3_test(c);
  EXPECT_EQ(lm->architecture(), "LlamaForCausalLM");
  EXPECT_TRUE(lm->lm_head().weight().is_same(lm->model().embed_tokens().weight()));
  ModelInputs in;
  in.input_ids = tensor_i64({3, 17, 42, 8}, {1, 4});
  EXPECT_EQ(lm->forward(in).logits.shape(), Shape({1, 4, 256}));
}

// SmolLM3 is its own transformers type (SmolLM3ForCausalLM: no rotary embedding on every
// fourth layer), not a Llama config: refused naming the types loom has.
TEST(SmolLMConfig, SmolLM3TypeIsRefusedNamingTheSupportedTypes) {
  try {
    model_type_entry("smollm3");
    FAIL() << "smollm3 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'smollm3' is not supported (gpt2, bert, llama, qwen2, "
                                         "qwen3)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom
