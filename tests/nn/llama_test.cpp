// The Llama family beyond the shared golden tests (golden_test.cpp and
// ten_steps_test.cpp run llama, qwen2 and qwen3 too): greedy generation equals
// transformers' model.generate ids (tools/make_llama_fixtures.py) with and
// without the StaticCache, on cpu and lazy (two graphs); LlamaConfig reads
// both rope forms and rejects what loom does not implement; save_pretrained
// writes transformers' keys (also sharded) and reloads to the same logits; the model
// registry finds every class.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/temp_dir.h"
#include "loom/generation.h"
#include "loom/model_registry.h"
#include "loom/safetensors.h"
#include "nn/model_test_util.h"

namespace loom {
namespace {

struct GenCase {
  std::string model, device;
  bool use_cache;
};

class LlamaGeneration : public ::testing::TestWithParam<GenCase> {
 protected:
  void SetUp() override { testing::reset_lazy_state(); }
};

TEST_P(LlamaGeneration, GreedyIdsEqualTransformers) {
  const GenCase& c = GetParam();
  Device dev(c.device);
  testing::Golden g = testing::load_golden(testing::model_fixture(c.model) + "/golden.safetensors");
  auto model = LlamaForCausalLM::from_pretrained(testing::model_fixture(c.model), dev);
  lazy::mark_step();
  int64_t before = metrics::counter("UncachedCompile");
  GenerationConfig gc;
  gc.max_new_tokens = 10;
  gc.use_cache = c.use_cache;
  GenerateOutput out = generate(*model, g.at("generate.prompt").to(dev), gc);
  EXPECT_EQ(out.sequences.to_vector<int64_t>(), g.at("generate.greedy").to_vector<int64_t>());
  if (dev.is_lazy() && c.use_cache) {
    EXPECT_LE(metrics::counter("UncachedCompile") - before, 2) << metrics::report();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, LlamaGeneration,
    ::testing::Values(GenCase{"llama", "cpu", true}, GenCase{"llama", "cpu", false},
                      GenCase{"llama", "lazy", true}, GenCase{"qwen2", "cpu", true},
                      GenCase{"qwen2", "lazy", true}, GenCase{"qwen3", "cpu", true},
                      GenCase{"qwen3", "lazy", true}),
    [](const ::testing::TestParamInfo<GenCase>& info) {
      return info.param.model + "_" + info.param.device + (info.param.use_cache ? "_cache" : "");
    });

TEST(LlamaModel, CachedLogitsEqualForwardLogits) {
  auto model = LlamaForCausalLM::from_pretrained(testing::model_fixture("llama"));
  NoGradGuard no_grad;
  Tensor ids = tensor_i64({3, 17, 42, 8, 77, 5, 5, 60, 1, 90}, {2, 5});
  ModelInputs in;
  in.input_ids = ids;
  Tensor expected = model->forward(in).logits;  // [2,5,96]
  StaticCache cache = model->new_static_cache(2, 8);
  Tensor first = model->forward_with_cache(slice(ids, 1, 0, 3), arange(3), cache).logits;
  EXPECT_TRUE(testing::all_close(first, slice(expected, 1, 0, 3), 1e-5, 1e-5));
  for (int64_t t = 3; t < 5; ++t) {
    Tensor step =
        model->forward_with_cache(slice(ids, 1, t, t + 1), tensor_i64({t}, {1}), cache, 1).logits;
    EXPECT_TRUE(testing::all_close(step, slice(expected, 1, t, t + 1), 1e-5, 1e-5)) << "t=" << t;
  }
  EXPECT_THROW(model->new_static_cache(1, 65), Error);  // > max_position_embeddings 64
}

TEST(LlamaConfig, ReadsTransformersV5RopeParametersAndWritesThemBack) {
  LlamaConfig c = LlamaConfig::from_json_file(testing::model_fixture("llama") + "/config.json");

  EXPECT_EQ(c.kv_heads(), 2);
  EXPECT_EQ(c.head_size(), 8);
  EXPECT_EQ(c.rope_scaling.rope_type, "llama3");
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 16);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.tie_word_embeddings);
  LlamaConfig back = LlamaConfig::from_json_string(c.to_json_string());
  EXPECT_EQ(back.to_json_string(), c.to_json_string());
  EXPECT_NE(c.to_json_string().find("\"rope_parameters\""), std::string::npos);
  EXPECT_EQ(c.extra.at("pretraining_tp"), "1");  // unknown keys kept
}

// Issue 25: transformers' rope_config_validation raises KeyError for a rope type
// without its required keys; {"rope_type": "linear"} alone was accepted (factor 1).
TEST(LlamaConfig, RopeTypeWithoutItsRequiredKeysIsRefused) {
  auto error = [](const std::string& rope) {
    try {
      LlamaConfig::from_json_string(R"({"model_type": "llama", "rope_parameters": )" + rope + "}",
                                    "c.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(R"({"rope_type": "linear", "rope_theta": 10000.0})"),
            "[config] c.json: rope_type 'linear' needs the key 'factor' (transformers raises on "
            "it missing)");
  EXPECT_NE(error(R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0})")
                .find("rope_type 'llama3' needs the key 'original_max_position_embeddings'"),
            std::string::npos);
  EXPECT_EQ(error(R"({"type": "linear", "factor": 2.0})"), "");
  EXPECT_EQ(error(R"({"rope_type": "default", "rope_theta": 10000.0})"), "");
}

TEST(LlamaConfig, ReadsLegacyRopeThetaAndRopeScaling) {
  LlamaConfig c = LlamaConfig::from_json_string(
      R"({"model_type": "qwen2", "rope_theta": 1000000.0,
          "rope_scaling": {"type": "linear", "factor": 2.0}, "hidden_size": 32,
          "num_attention_heads": 4})");
  EXPECT_EQ(c.rope_scaling.rope_type, "linear");
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 2.0);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_TRUE(c.qkv_bias());
  EXPECT_FALSE(c.o_bias());
  std::string text = c.to_json_string();
  EXPECT_EQ(text.find("rope_parameters"), std::string::npos) << text;
  EXPECT_EQ(text.find("attention_bias"), std::string::npos) << "Qwen2 has no such field";
  // A derived head_dim is left out (transformers would read null as None).
  EXPECT_EQ(text.find("head_dim"), std::string::npos) << text;
  EXPECT_NE(text.find("\"num_key_value_heads\": 32"), std::string::npos)
      << text;  // Qwen2Config default
}

TEST(LlamaConfig, RejectsWhatLoomDoesNotImplement) {
  auto validate = [](const std::string& json) { LlamaConfig::from_json_string(json).validate(); };
  EXPECT_THROW(validate(R"({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}})"), Error);
  EXPECT_THROW(validate(R"({"num_attention_heads": 32, "num_key_value_heads": 5})"), Error);
  EXPECT_THROW(validate(R"({"attention_dropout": 0.1})"), Error);
  EXPECT_THROW(validate(R"({"model_type": "qwen2", "use_sliding_window": true})"), Error);
  EXPECT_THROW(LlamaConfig::from_json_string(R"({"model_type": "gpt2"})"), Error);
  EXPECT_THROW(LlamaConfig::from_json_string(R"({"hidden_size": "32"})"), Error);
  try {
    validate(R"({"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}})");
    FAIL() << "dynamic rope accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rope_type 'dynamic' is not supported"), std::string::npos)
        << e.what();
  }
}

// save_pretrained writes transformers' names (no rotary buffer; lm_head only
// when untied) and from_pretrained reads them back to the same logits.
TEST(LlamaModel, SavePretrainedRoundTrip) {
  for (const std::string name : {"llama", "qwen2", "qwen3"}) {
    auto model = auto_from_pretrained(testing::model_fixture(name));
    testing::TempDir dir;
    model->save_pretrained(dir.str());
    auto file = safetensors::File::open(dir.sub("model.safetensors"));
    std::set<std::string> keys;
    for (const auto& info : file.tensors()) keys.insert(info.name);
    EXPECT_EQ(keys.count("model.rotary_emb.inv_freq"), 0u) << name;
    EXPECT_EQ(keys.count("lm_head.weight"), name == "qwen2" ? 0u : 1u) << name;
    EXPECT_EQ(keys.count("model.layers.0.self_attn.q_proj.bias"), name == "qwen2" ? 1u : 0u);
    EXPECT_EQ(keys.count("model.layers.1.self_attn.k_norm.weight"), name == "qwen3" ? 1u : 0u);
    auto back = auto_from_pretrained(dir.str(), {}, {.strict = true});
    EXPECT_EQ(back->architecture(), name == "llama"   ? "LlamaForCausalLM"
                                    : name == "qwen2" ? "Qwen2ForCausalLM"
                                                      : "Qwen3ForCausalLM");
    ModelInputs in;
    in.input_ids = tensor_i64({3, 17, 42, 8}, {1, 4});
    EXPECT_TRUE(testing::all_close(back->forward(in).logits, model->forward(in).logits, 0, 0));
  }
}

// The base model saves under its own architecture name and loads back.
TEST(LlamaModel, BaseModelRoundTripKeepsItsArchitecture) {
  auto lm = LlamaForCausalLM::from_pretrained(testing::model_fixture("qwen2"));
  LlamaModel base(lm->config());
  EXPECT_EQ(base.architecture(), "Qwen2Model");
  testing::TempDir dir;
  base.save_pretrained(dir.str());
  auto back = auto_from_pretrained(dir.str(), {}, {.strict = true});
  EXPECT_EQ(back->architecture(), "Qwen2Model");
  EXPECT_TRUE(back->is_base_model());
}

// transformers' _init_weights: Linear/Embedding normal(0, initializer_range),
// biases 0, RMSNorm weights 1.
TEST(LlamaModel, RandomInitFollowsTransformers) {
  manual_seed(3);
  LlamaConfig c = LlamaConfig::qwen2();
  c.vocab_size = 512;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.initializer_range = 0.05;
  LlamaForCausalLM model(c);
  for (const auto& [name, p] : model.named_parameters()) {
    std::vector<double> v = p.to_vector<double>();
    double sum = 0, sq = 0;
    for (double x : v) sum += x, sq += x * x;
    double mean = sum / v.size(), std = std::sqrt(sq / v.size() - mean * mean);
    if (name.find("norm") != std::string::npos) {
      EXPECT_EQ(v, std::vector<double>(v.size(), 1.0)) << name;
    } else if (name.find("bias") != std::string::npos) {
      EXPECT_EQ(v, std::vector<double>(v.size(), 0.0)) << name;
    } else {
      EXPECT_NEAR(std, 0.05, 0.01) << name;
      EXPECT_NEAR(mean, 0.0, 0.01) << name;
    }
  }
}

// Sharded checkpoints (transformers' max_shard_size, model.safetensors.index.json).
TEST(LlamaModel, ShardedSaveAndLoad) {
  auto model = LlamaForCausalLM::from_pretrained(testing::model_fixture("llama"));
  testing::TempDir dir;
  model->save_pretrained(dir.str(), /*max_shard_size=*/30'000);
  ASSERT_TRUE(std::filesystem::exists(dir.sub("model.safetensors.index.json")));
  EXPECT_FALSE(std::filesystem::exists(dir.sub("model.safetensors")));
  auto back = LlamaForCausalLM::from_pretrained(dir.str(), {}, {.strict = true});
  ModelInputs in;
  in.input_ids = tensor_i64({3, 17, 42, 8}, {1, 4});
  EXPECT_TRUE(testing::all_close(back->forward(in).logits, model->forward(in).logits, 0, 0));
}

TEST(ModelRegistry, FindsEveryClassByTaskAndName) {
  EXPECT_EQ(model_type_entry("llama").for_task("causal-lm")->name, "LlamaForCausalLM");
  EXPECT_EQ(model_type_entry("qwen2").for_task("causal-lm")->name, "Qwen2ForCausalLM");
  EXPECT_EQ(model_type_entry("gpt2").for_task("causal-lm")->name, "GPT2LMHeadModel");
  EXPECT_EQ(model_type_entry("bert").for_task("text-classification")->name,
            "BertForSequenceClassification");
  EXPECT_EQ(model_type_entry("bert").for_task("causal-lm"), nullptr);
  EXPECT_EQ(model_type_entry("gpt2").base().name, "GPT2Model");
  try {
    model_type_entry("t5");
    FAIL() << "t5 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(gpt2, bert, llama, qwen2, qwen3)"), std::string::npos)
        << e.what();
  }
  // Every entry builds its classes from its own default config (tiny sizes).
  for (const ModelTypeEntry& e : model_types()) {
    ConfigSummary s = e.read_config(e.default_config_json(), "default");
    EXPECT_EQ(s.common.model_type, e.model_type);
    EXPECT_GT(s.max_positions, 0) << e.model_type;
  }
  auto lm = model_type_entry("llama")
                .for_task("causal-lm")
                ->make(
                    R"({"model_type": "llama", "hidden_size": 16, "intermediate_size": 32,
          "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 50})",
                    "test");
  auto* causal = dynamic_cast<CausalLM*>(lm.get());
  ASSERT_NE(causal, nullptr);
  EXPECT_EQ(causal->vocab_size(), 50);
}

// config.json says tie_word_embeddings: true over a checkpoint with its own
// lm_head.weight (the llama fixture, saved untied): transformers 5 finds both
// weights with different values and does not tie them, with a warning
// (tools/make_tied_config_fixture.py checks that rule and wrote the ids).
// Before, loom tied them and loaded one checkpoint tensor into both.
TEST(LlamaTiedConfig, BothWeightsInTheCheckpointAreNotTiedAsTransformers) {
  testing::TempDir dir;
  const std::string d = dir.sub("llama");
  std::filesystem::copy(testing::model_fixture("llama"), d);
  {
    std::ifstream in(d + "/config.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string from = "\"tie_word_embeddings\": false";
    ASSERT_NE(text.find(from), std::string::npos);
    text.replace(text.find(from), from.size(), "\"tie_word_embeddings\": true");
    std::ofstream(d + "/config.json", std::ios::trunc) << text;
  }
  ::testing::internal::CaptureStderr();
  auto model = LlamaForCausalLM::from_pretrained(d, Device("cpu"));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("warning: config.json ties lm_head.weight to model.embed_tokens.weight "
                     "(tie_word_embeddings), but the checkpoint holds both with different values: "
                     "they are not tied"),
            std::string::npos)
      << log;
  const nn::StateDict sd = model->state_dict();
  EXPECT_NE(sd.find("lm_head.weight")->impl(), sd.find("model.embed_tokens.weight")->impl());
  testing::Golden want = testing::load_golden(
      std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/models/llama_tied_config.safetensors");
  testing::Golden g = testing::load_golden(testing::model_fixture("llama") + "/golden.safetensors");
  GenerationConfig gc;
  gc.max_new_tokens = 10;
  GenerateOutput out = generate(*model, g.at("generate.prompt"), gc);
  EXPECT_EQ(out.sequences.to_vector<int64_t>(), want.at("generate.greedy").to_vector<int64_t>());
}

}  // namespace
}  // namespace loom
