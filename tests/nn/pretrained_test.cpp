// from_pretrained / save_pretrained: exact save -> load, tied weights stored
// once, sharding identical to transformers' (same files, same weight_map),
// transformers' shards read, base-model prefix added or stripped, old
// LayerNorm.gamma/beta names, missing/unexpected keys, atomic directory
// replacement, and malformed directories.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/error_of.h"
#include "io/config_json.h"
#include "nn/model_test_util.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::model_fixture;
using testing::TempDir;

// Changes every parameter (so a test cannot pass by reading the fixture back).
void perturb(nn::Module& m, uint64_t seed) {
  manual_seed(seed);
  NoGradGuard no_grad;
  for (auto& [name, p] : m.named_parameters()) p.copy_(p + randn(p.shape()) * 0.01);
}

void expect_same_parameters(nn::Module& a, nn::Module& b) {
  nn::StateDict sa = a.state_dict(), sb = b.state_dict();
  ASSERT_EQ(sa.keys(), sb.keys());
  for (const auto& [name, t] : sa)
    EXPECT_EQ(t.to_vector<float>(), sb.at(name).to_vector<float>()) << name;
}

std::vector<std::string> file_keys(const std::string& path) {
  std::vector<std::string> out;
  auto file = safetensors::File::open(path);
  for (const auto& info : file.tensors()) out.push_back(info.name);
  return out;
}

TEST(Pretrained, SaveLoadIsExactAndStoresTiedWeightsOnce) {
  TempDir tmp;
  auto model = GPT2LMHeadModel::from_pretrained(model_fixture("gpt2"));
  perturb(*model, 1);
  model->save_pretrained(tmp / "out");
  EXPECT_TRUE(fs::exists(tmp / "out/config.json"));
  std::vector<std::string> keys = file_keys(tmp / "out/model.safetensors");
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "lm_head.weight"), 0);
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "transformer.wte.weight"), 1);
  EXPECT_EQ(keys.size(), model->named_parameters().size());
  EXPECT_EQ(safetensors::File::open(tmp / "out/model.safetensors").metadata().at("format"), "pt");

  auto back = GPT2LMHeadModel::from_pretrained(tmp / "out");
  expect_same_parameters(*model, *back);
  EXPECT_TRUE(back->lm_head().weight().is_same(back->transformer().wte().weight()));
  json saved = json::parse(io::read_config_text(tmp / "out/config.json"));
  json original = json::parse(io::read_config_text(model_fixture("gpt2/config.json")));
  EXPECT_EQ(saved, original) << "config (unknown keys included) written back unchanged";

  auto bert = BertForMaskedLM::from_pretrained(model_fixture("bert"));
  perturb(*bert, 2);
  bert->save_pretrained(tmp / "bert");
  keys = file_keys(tmp / "bert/model.safetensors");
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "cls.predictions.decoder.weight"), 0);
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "cls.predictions.decoder.bias"), 0);
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "cls.predictions.bias"), 1);
  auto bert_back = BertForMaskedLM::from_pretrained(tmp / "bert");
  expect_same_parameters(*bert, *bert_back);
}

TEST(Pretrained, ShardsLikeTransformers) {
  TempDir tmp;
  auto model = GPT2LMHeadModel::from_pretrained(model_fixture("gpt2"));
  model->save_pretrained(tmp / "sharded", 50'000);  // transformers' "50KB"
  std::string ref = model_fixture("gpt2_sharded");
  json ours = json::parse(io::read_config_text(tmp / "sharded/model.safetensors.index.json"));
  json theirs = json::parse(io::read_config_text(ref + "/model.safetensors.index.json"));
  EXPECT_EQ(ours, theirs);
  for (const char* shard : {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                            "model-00003-of-00003.safetensors"})
    EXPECT_EQ(file_keys(tmp / std::string("sharded/") + shard), file_keys(ref + "/" + shard))
        << shard;
  EXPECT_FALSE(fs::exists(tmp / "sharded/model.safetensors"));
  auto back = GPT2LMHeadModel::from_pretrained(tmp / "sharded");
  expect_same_parameters(*model, *back);
}

TEST(Pretrained, ReadsTransformersShards) {
  auto single = GPT2LMHeadModel::from_pretrained(model_fixture("gpt2"));
  auto sharded = GPT2LMHeadModel::from_pretrained(model_fixture("gpt2_sharded"));
  expect_same_parameters(*single, *sharded);
}

TEST(Pretrained, BaseModelPrefixIsAddedOrStripped) {
  TempDir tmp;
  LoadInfo info;
  PretrainedOptions opts;
  opts.info = &info;
  opts.strict = true;
  // Head checkpoint ("transformer.*") into the base model: prefix stripped.
  auto base = GPT2Model::from_pretrained(model_fixture("gpt2"), {}, opts);
  EXPECT_TRUE(info.missing_keys.empty() && info.unexpected_keys.empty());
  auto head = GPT2LMHeadModel::from_pretrained(model_fixture("gpt2"));
  EXPECT_EQ(base->wte().weight().to_vector<float>(),
            head->transformer().wte().weight().to_vector<float>());
  // Base checkpoint (no prefix) into the head model: prefix added, lm_head re-tied.
  perturb(*base, 3);
  base->save_pretrained(tmp / "base");
  EXPECT_EQ(file_keys(tmp / "base/model.safetensors").front(), "h.0.attn.c_attn.bias");
  auto head2 = GPT2LMHeadModel::from_pretrained(tmp / "base", {}, opts);
  EXPECT_EQ(head2->lm_head().weight().to_vector<float>(), base->wte().weight().to_vector<float>());
}

TEST(Pretrained, OldLayerNormNamesAndUnprefixedBertLoad) {
  // Rewrite the BERT fixture as an old checkpoint: no "bert." prefix,
  // LayerNorm.gamma / LayerNorm.beta, plus an old position_ids buffer.
  TempDir tmp;
  fs::create_directories(tmp / "old");
  fs::copy_file(model_fixture("bert/config.json"), tmp / "old/config.json");
  auto file = safetensors::File::open(model_fixture("bert/model.safetensors"));
  std::vector<safetensors::TensorRef> refs;
  std::vector<std::string> names;
  for (const auto& info : file.tensors()) {
    std::string n = info.name;
    if (n.rfind("bert.", 0) == 0) n = n.substr(5);
    size_t pos = n.find("LayerNorm.weight");
    if (pos != std::string::npos) n.replace(pos, 16, "LayerNorm.gamma");
    pos = n.find("LayerNorm.bias");
    if (pos != std::string::npos) n.replace(pos, 14, "LayerNorm.beta");
    refs.push_back({n, info.dtype, info.shape, file.data(info).data()});
  }
  std::vector<int64_t> pos_ids(64);
  for (int i = 0; i < 64; ++i) pos_ids[i] = i;
  refs.push_back({"embeddings.position_ids", DType::i64, {1, 64}, pos_ids.data()});
  safetensors::save(tmp / "old/model.safetensors", refs);

  LoadInfo info;
  PretrainedOptions opts;
  opts.info = &info;
  opts.strict = true;  // the old buffer is a known ignorable key, not an error
  auto model = BertForMaskedLM::from_pretrained(tmp / "old", {}, opts);
  EXPECT_TRUE(info.missing_keys.empty());
  EXPECT_TRUE(info.unexpected_keys.empty());
  testing::Golden g = testing::load_golden(model_fixture("bert/golden.safetensors"));
  EXPECT_TRUE(testing::close_scaled(model->forward(testing::golden_inputs(g, {})).logits,
                                    g.at("logits"), 1e-4));
}

TEST(Pretrained, FreshHeadIsInitializedAndReported) {
  LoadInfo info;
  PretrainedOptions opts;
  opts.info = &info;
  opts.warn = false;
  manual_seed(0);
  auto model = BertForSequenceClassification::from_pretrained(model_fixture("bert"), {}, opts);
  EXPECT_EQ(info.missing_keys,
            (std::vector<std::string>{"bert.pooler.dense.weight", "bert.pooler.dense.bias",
                                      "classifier.weight", "classifier.bias"}));
  ASSERT_FALSE(info.unexpected_keys.empty());
  EXPECT_EQ(info.unexpected_keys.front().rfind("cls.predictions.", 0), 0u);
  // transformers' init: normal(0, 0.02) weights, zero biases.
  std::vector<float> w = model->classifier().weight().to_vector<float>();
  double ss = 0;
  for (float v : w) ss += double(v) * v;
  double std = std::sqrt(ss / w.size());
  EXPECT_GT(std, 0.01);
  EXPECT_LT(std, 0.04);
  for (float v : model->classifier().bias().to_vector<float>()) EXPECT_EQ(v, 0.0f);
  // The encoder came from the checkpoint.
  auto mlm = BertForMaskedLM::from_pretrained(model_fixture("bert"));
  EXPECT_EQ(model->bert().word_embeddings().weight().to_vector<float>(),
            mlm->bert().word_embeddings().weight().to_vector<float>());
  opts.strict = true;
  try {
    BertForSequenceClassification::from_pretrained(model_fixture("bert"), {}, opts);
    FAIL() << "strict load did not throw";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("missing keys: bert.pooler.dense.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("unexpected keys: cls.predictions."), std::string::npos) << m;
  }
}

TEST(Pretrained, ShapeMismatchNamesKeyAndShapes) {
  TempDir tmp;
  fs::copy(model_fixture("gpt2"), tmp / "m");
  json cfg = json::parse(io::read_config_text(tmp / "m/config.json"));
  cfg["n_positions"] = 32;
  std::ofstream(tmp / "m/config.json") << cfg.dump();
  try {
    GPT2LMHeadModel::from_pretrained(tmp / "m");
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("transformer.wpe.weight (checkpoint [64,32], model [32,32])"),
              std::string::npos)
        << m;
  }
}

// Issue 15: n_positions 10^7 allocated the whole model (2.5 GB) before the
// shape mismatch was found; config-set sizes are now checked first.
TEST(Pretrained, ConfigSizesAreCheckedAgainstTheCheckpointBeforeAllocating) {
  TempDir tmp;
  fs::copy(model_fixture("gpt2"), tmp / "m");
  json cfg = json::parse(io::read_config_text(tmp / "m/config.json"));
  cfg["n_positions"] = 10'000'000;
  std::ofstream(tmp / "m/config.json") << cfg.dump();
  std::string m = testing::error_of([&] { GPT2LMHeadModel::from_pretrained(tmp / "m"); });
  EXPECT_NE(m.find("shape mismatch: transformer.wpe.weight (checkpoint [64,32], model "
                   "[10000000,32]); config.json's n_positions, n_embd disagree with the weights "
                   "(checked before the model is allocated)"),
            std::string::npos)
      << m;
  fs::copy(model_fixture("bert"), tmp / "b");
  cfg = json::parse(io::read_config_text(tmp / "b/config.json"));
  cfg["vocab_size"] = 10'000'000;
  std::ofstream(tmp / "b/config.json") << cfg.dump();
  m = testing::error_of([&] { BertForMaskedLM::from_pretrained(tmp / "b"); });
  EXPECT_NE(m.find("embeddings.word_embeddings.weight"), std::string::npos) << m;
  EXPECT_NE(m.find("(checked before the model is allocated)"), std::string::npos) << m;
}

// Issue 15: n_layer 10^5..2^63-1 allocated until bad_alloc or the OOM killer.
TEST(Pretrained, ConfigLargerThanMemoryIsRefusedBeforeAllocating) {
  GPT2Config g;
  g.n_layer = 1'000'000'000'000;
  std::string m = testing::error_of([&] { GPT2LMHeadModel model(g); });
  EXPECT_EQ(m.rfind("[GPT2Model] n_layer 1000000000000, n_embd 768, n_inner 4*n_embd, "
                    "n_positions 1024, vocab_size 50257 make 7.09e+18 parameters: ",
                    0),
            0u)
      << m;
  EXPECT_NE(m.find(" of memory available ("), std::string::npos) << m;
  g.n_layer = std::numeric_limits<int64_t>::max();  // 2^63-1: counted in double, no overflow
  EXPECT_NE(testing::error_of([&] { GPT2Model model(g); }).find("of memory available"),
            std::string::npos);
  BertConfig b;
  b.hidden_size = 1'000'000;
  b.num_attention_heads = 1;
  m = testing::error_of([&] { BertModel model(b); });
  EXPECT_EQ(m.rfind("[BertModel] num_hidden_layers 12, hidden_size 1000000, ", 0), 0u) << m;
  // The pretrained path refuses it before reading any weight.
  TempDir tmp;
  fs::copy(model_fixture("gpt2"), tmp / "m");
  json cfg = json::parse(io::read_config_text(tmp / "m/config.json"));
  cfg["n_layer"] = 100'000'000'000;
  std::ofstream(tmp / "m/config.json") << cfg.dump();
  m = testing::error_of([&] { GPT2LMHeadModel::from_pretrained(tmp / "m"); });
  EXPECT_NE(m.find("[from_pretrained] " + tmp / "m" + ": config.json's n_layer 100000000000"),
            std::string::npos)
      << m;
}

// Rewrites `dir`/model.safetensors with `edit` applied to each tensor (as
// dtype, shape, bytes); dropping all of them leaves a header of {}.
void rewrite_weights(const std::string& dir,
                     const std::function<bool(safetensors::TensorRef&)>& keep) {
  const std::string path = dir + "/model.safetensors";
  std::vector<std::vector<std::byte>> bytes;
  std::vector<safetensors::TensorRef> refs;
  {
    auto file = safetensors::File::open(path);
    for (const auto& info : file.tensors()) {
      auto span = file.data(info);
      bytes.emplace_back(span.begin(), span.end());
    }
    size_t i = 0;
    for (const auto& info : file.tensors()) {
      safetensors::TensorRef r{info.name, info.dtype, info.shape, bytes[i++].data()};
      if (keep(r)) refs.push_back(r);
    }
  }
  safetensors::save(path, refs);
}

TEST(Pretrained, IntegerCheckpointTensorForAFloatWeightIsAnError) {
  TempDir tmp;
  fs::copy(model_fixture("gpt2"), tmp / "m");
  rewrite_weights(tmp / "m", [](safetensors::TensorRef& r) {
    if (r.name == "transformer.h.0.attn.c_attn.weight") r.dtype = DType::i32;  // same 4 bytes
    return true;
  });
  std::string m = testing::error_of([&] { GPT2LMHeadModel::from_pretrained(tmp / "m"); });
  EXPECT_NE(m.find("tensor 'transformer.h.0.attn.c_attn.weight' has dtype I32 but the model's "
                   "weight is F32"),
            std::string::npos)
      << m;
}

TEST(Pretrained, CheckpointWithNoneOfTheWeightsIsAnError) {
  TempDir tmp;
  fs::copy(model_fixture("gpt2"), tmp / "empty");
  rewrite_weights(tmp / "empty", [](safetensors::TensorRef&) { return false; });
  std::string m = testing::error_of([&] { GPT2LMHeadModel::from_pretrained(tmp / "empty"); });
  EXPECT_NE(m.find("the checkpoint provides none of the weights of GPT2LMHeadModel (0 tensors"),
            std::string::npos)
      << m;
  fs::copy(model_fixture("gpt2"), tmp / "other");
  rewrite_weights(tmp / "other", [](safetensors::TensorRef& r) {
    r.name = "encoder." + r.name;  // nothing matches the model's names
    return true;
  });
  m = testing::error_of([&] { GPT2LMHeadModel::from_pretrained(tmp / "other"); });
  EXPECT_NE(m.find("provides none of the weights of GPT2LMHeadModel"), std::string::npos) << m;
}

TEST(Pretrained, SaveReplacesDirectoryAtomicallyKeepingOtherFiles) {
  TempDir tmp;
  std::string dir = tmp / "ckpt";
  fs::create_directories(dir);
  std::ofstream(dir + "/tokenizer.json") << "{}";
  std::ofstream(dir + "/model-00001-of-00002.safetensors") << "stale";
  std::ofstream(dir + "/model.safetensors.index.json") << "stale";
  auto model = GPT2LMHeadModel::from_pretrained(model_fixture("gpt2"));
  model->save_pretrained(dir);
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"config.json", "model.safetensors", "tokenizer.json"}));
  std::set<std::string> siblings;
  for (const auto& e : fs::directory_iterator(tmp.path()))
    siblings.insert(e.path().filename().string());
  EXPECT_EQ(siblings, std::set<std::string>{"ckpt"}) << "no temporary directory left";
  // A failing save leaves the directory as it was.
  EXPECT_THROW(model->save_pretrained(dir, 0), Error);
  std::set<std::string> after;
  for (const auto& e : fs::directory_iterator(dir)) after.insert(e.path().filename().string());
  EXPECT_EQ(after, files);
  EXPECT_NO_THROW(GPT2LMHeadModel::from_pretrained(dir));
}

TEST(Pretrained, MalformedDirectoriesThrow) {
  TempDir tmp;
  auto expect_error = [](const std::string& dir, const std::string& needle) {
    try {
      GPT2LMHeadModel::from_pretrained(dir);
      ADD_FAILURE() << "no error for " << dir;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(tmp / "absent", "config.json");
  fs::create_directories(tmp / "noweights");
  fs::copy_file(model_fixture("gpt2/config.json"), tmp / "noweights/config.json");
  expect_error(tmp / "noweights", "no model.safetensors");

  auto sharded_copy = [&](const std::string& name, const json& index) {
    fs::copy(model_fixture("gpt2_sharded"), tmp / name);
    std::ofstream(tmp / (name + "/model.safetensors.index.json")) << index.dump();
    return tmp / name;
  };
  json index =
      json::parse(io::read_config_text(model_fixture("gpt2_sharded/model.safetensors.index.json")));
  json escape = index;
  escape["weight_map"]["transformer.wte.weight"] = "../model-00001-of-00003.safetensors";
  expect_error(sharded_copy("escape", escape), "not a file in the directory");
  // A NUL (or another control character) would cut the name short when the
  // file is opened: the real shard would load under a name that is not it.
  for (const std::string& bad : {std::string("model-00001-of-00003.safetensors\0junk", 37),
                                 std::string("model-00001-of-00003.safetensors\n"),
                                 std::string("sub\\model-00001-of-00003.safetensors")}) {
    json control = index;
    control["weight_map"]["transformer.wte.weight"] = bad;
    const std::string where = tmp / "control/model.safetensors.index.json";
    expect_error(sharded_copy("control", control),
                 where + ": weight_map entry 'transformer.wte.weight' names " + json(bad).dump() +
                     ", not a file in the directory");
    fs::remove_all(tmp / "control");
  }
  json missing = index;
  missing["weight_map"]["transformer.wte.weight"] = "model-00009-of-00009.safetensors";
  expect_error(sharded_copy("missing", missing), "does not exist");
  json wrong = index;
  wrong["weight_map"]["transformer.wte.weight"] = "model-00002-of-00003.safetensors";
  expect_error(sharded_copy("wrong", wrong), "does not hold it");
  expect_error(sharded_copy("nomap", json{{"metadata", json::object()}}), "weight_map");

  fs::copy(model_fixture("gpt2"), tmp / "bert_cfg");
  fs::copy_file(model_fixture("bert/config.json"), tmp / "bert_cfg/config.json",
                fs::copy_options::overwrite_existing);
  expect_error(tmp / "bert_cfg", "model_type is 'bert'");
  fs::copy(model_fixture("gpt2"), tmp / "trunc");
  fs::resize_file(tmp / "trunc/model.safetensors", 1000);
  expect_error(tmp / "trunc", "[safetensors]");
}

TEST(Pretrained, AutoPicksTheArchitecture) {
  auto g = auto_from_pretrained(model_fixture("gpt2"));
  EXPECT_NE(dynamic_cast<GPT2LMHeadModel*>(g.get()), nullptr);
  auto b = auto_from_pretrained(model_fixture("bert_seqcls"));
  EXPECT_NE(dynamic_cast<BertForSequenceClassification*>(b.get()), nullptr);
  EXPECT_EQ(b->architecture(), "BertForSequenceClassification");
}

}  // namespace
}  // namespace loom
