// config.json (loom/config.h): the fixtures transformers wrote read with the
// right values, write back to the same JSON (unknown keys kept), aliases,
// num_labels, and errors that name the file and field.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "io/config_json.h"
#include "nn/model_test_util.h"

namespace loom {
namespace {

using nlohmann::json;

json read_json(const std::string& path) { return json::parse(io::read_config_text(path)); }

TEST(Config, ReadsTransformersGpt2Config) {
  GPT2Config c = GPT2Config::from_json_file(testing::model_fixture("gpt2/config.json"));
  EXPECT_EQ(c.model_type, "gpt2");
  EXPECT_EQ(c.architectures, std::vector<std::string>{"GPT2LMHeadModel"});
  EXPECT_EQ(c.vocab_size, 96);
  EXPECT_EQ(c.n_embd, 32);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_positions, 64);
  EXPECT_FALSE(c.n_inner.has_value());
  EXPECT_EQ(c.inner_dim(), 128);
  EXPECT_EQ(c.activation_function, "gelu_new");
  EXPECT_DOUBLE_EQ(c.layer_norm_epsilon, 1e-5);
  EXPECT_DOUBLE_EQ(c.attn_pdrop, 0.1);
  EXPECT_EQ(c.bos_token_id, 95);
  EXPECT_FALSE(c.pad_token_id.has_value());
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.extra.at("transformers_version").front(), '"');
  EXPECT_EQ(c.extra.at("summary_type"), "\"cls_index\"");
  EXPECT_EQ(c.num_labels(), 2);
}

TEST(Config, ReadsTransformersBertConfigWithLabels) {
  BertConfig c = BertConfig::from_json_file(testing::model_fixture("bert_seqcls/config.json"));
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.intermediate_size, 64);
  EXPECT_EQ(c.hidden_act, "gelu");
  EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-12);
  EXPECT_EQ(c.type_vocab_size, 2);
  EXPECT_EQ(c.pad_token_id, 0);
  EXPECT_EQ(c.num_labels(), 3);
  EXPECT_EQ(c.id2label.at(2), "positive");
  EXPECT_EQ(c.problem_type, "single_label_classification");
  EXPECT_FALSE(c.classifier_dropout.has_value());
}

TEST(Config, WritesBackTheSameJsonTransformersWrote) {
  for (const char* dir : {"gpt2", "bert", "bert_seqcls"}) {
    std::string path = testing::model_fixture(std::string(dir) + "/config.json");
    json original = read_json(path);
    std::string text = std::string(dir) == "gpt2"
                           ? GPT2Config::from_json_file(path).to_json_string()
                           : BertConfig::from_json_file(path).to_json_string();
    EXPECT_EQ(json::parse(text), original) << dir << ":\n" << text;
  }
}

TEST(Config, SaveWritesUnknownKeysAndChangesAtomically) {
  testing::TempDir tmp;
  GPT2Config c = GPT2Config::from_json_string(
      R"({"model_type": "gpt2", "n_embd": 64, "my_tool": {"a": [1, 2]}, "n_inner": 100})");
  c.n_layer = 3;
  c.save(tmp / "config.json");
  json j = read_json(tmp / "config.json");
  EXPECT_EQ(j["my_tool"], json::parse(R"({"a": [1, 2]})"));
  EXPECT_EQ(j["n_layer"], 3);
  EXPECT_EQ(j["n_inner"], 100);
  EXPECT_EQ(j["n_embd"], 64);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(tmp.path()),
                          std::filesystem::directory_iterator()),
            1)
      << "no temporary left behind";
}

TEST(Config, AcceptsAliasesAndNumLabels) {
  GPT2Config g = GPT2Config::from_json_string(
      R"({"hidden_size": 48, "num_hidden_layers": 5, "num_attention_heads": 6,
          "max_position_embeddings": 77})");
  EXPECT_EQ(g.n_embd, 48);
  EXPECT_EQ(g.n_layer, 5);
  EXPECT_EQ(g.n_head, 6);
  EXPECT_EQ(g.n_positions, 77);
  EXPECT_EQ(g.extra.count("hidden_size"), 0u) << "aliases are not kept twice";
  BertConfig b = BertConfig::from_json_string(R"({"model_type": "bert", "num_labels": 4})");
  EXPECT_EQ(b.num_labels(), 4);
  EXPECT_EQ(b.id2label.at(3), "LABEL_3");
  json j = json::parse(b.to_json_string());
  EXPECT_EQ(j["label2id"]["LABEL_3"], 3);
  EXPECT_EQ(j.count("num_labels"), 0u);
}

TEST(Config, BadInputThrowsNamingFileAndField) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    try {
      GPT2Config::from_json_string(text, "cfg.json");
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cfg.json"), std::string::npos) << e.what();
    }
  };
  expect_error(R"({"n_embd": "32"})", "field 'n_embd' must be an integer");
  expect_error(R"({"n_embd": 32.5})", "n_embd");
  expect_error(R"({"layer_norm_epsilon": "x"})", "layer_norm_epsilon");
  expect_error(R"({"model_type": "bert"})", "model_type is 'bert'");
  expect_error(R"({"n_embd": 32,)", "not valid JSON");
  expect_error(R"([1, 2])", "not a JSON object");
  expect_error(R"({"id2label": {"x": "a"}})", "id2label");
  expect_error(R"({"id2label": {"0": "a", "2": "b"}})", "lacks id 1");
  expect_error(R"({"architectures": "GPT2Model"})", "architectures");
  expect_error(R"({"problem_type": "ranking"})", "problem_type");
  EXPECT_THROW(GPT2Config::from_json_file("/nonexistent/config.json"), Error);
}

// Llama 3's config.json gives eos_token_id as a list, valid in transformers:
// every id is kept (generation stops at any), the first is eos_token_id, and
// the list is written back as it was.
TEST(Config, EosTokenIdMayBeAList) {
  json j = read_json(testing::model_fixture("llama/config.json"));
  j["eos_token_id"] = {128001, 128008, 128009};
  const LlamaConfig c = LlamaConfig::from_json_string(j.dump(), "llama3/config.json");
  EXPECT_EQ(c.eos_token_id, 128001);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(json::parse(c.to_json_string())["eos_token_id"], j["eos_token_id"]);
  j["eos_token_id"] = 7;
  const LlamaConfig one = LlamaConfig::from_json_string(j.dump(), "one/config.json");
  EXPECT_EQ(one.eos_token_id, 7);
  EXPECT_TRUE(one.eos_token_ids.empty());
  for (const json& bad : {json::array(), json{1, "x"}, json("2")}) {
    j["eos_token_id"] = bad;
    try {
      LlamaConfig::from_json_string(j.dump(), "bad/config.json");
      ADD_FAILURE() << bad.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("[config] bad/config.json: field 'eos_token_id' must be "
                                           "an integer, a list of integers or null"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Config, ValidateRejectsInconsistentSizes) {
  GPT2Config g;
  g.n_embd = 30;
  g.n_head = 4;
  EXPECT_THROW(g.validate(), Error);
  g.n_head = 3;
  EXPECT_NO_THROW(g.validate());
  g.activation_function = "gelu2";
  EXPECT_THROW(g.validate(), Error);
  BertConfig b;
  b.hidden_dropout_prob = 1.0;
  EXPECT_THROW(b.validate(), Error);
  b = BertConfig::from_json_string(R"({"position_embedding_type": "relative_key"})");
  EXPECT_THROW(b.validate(), Error);
  EXPECT_THROW(std::make_shared<BertModel>(b), Error);
}

}  // namespace
}  // namespace loom
