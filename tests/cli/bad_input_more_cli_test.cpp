// Issue 25's bad inputs on the newer surfaces (LoRA, Llama configs, generate,
// classification labels, tokenizer regexes, sharded checkpoints) through the
// built `loom` binary: each ends in exactly one "loom: error:" line naming the
// file, field or flag and the bad value, before anything large is allocated —
// or, where Hugging Face warns or proceeds, in that behaviour with a warning.
// docs/cli.md's "Limits on input" table lists the rule of each. One tiny Llama
// and one tiny Qwen2 base, and one LoRA adapter on the Llama, are trained once
// for the whole suite. Skips when the binary is not built.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "cli/tiny_train.h"  // kGpt2Tokenizer

namespace loom::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBertTok = std::string(LOOM_SOURCE_DIR) + "/assets/tokenizers/bert-base-uncased";
const std::string kLlama3Tok = std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/tokenizers/llama3";

json read_json_file(const std::string& path) { return json::parse(read_cli_file(path)); }
void write_json_file(const std::string& path, const json& j) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << j.dump(2);
}

// Copies directory `from` (files only) to `to`.
std::string copy_dir(const std::string& from, const std::string& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from))
    if (e.is_regular_file())
      fs::copy_file(e.path(), fs::path(to) / e.path().filename(),
                    fs::copy_options::overwrite_existing);
  return to;
}

class LoomBadInputMore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (loom_binary_path().empty()) return;
    shared_ = new TempDir();
    std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/assets/corpora/austen/prideprejudice.txt");
    std::string line, text;
    for (int i = 0; i < 60 && std::getline(in, line); ++i) text += line + "\n";
    corpus_ = shared_->write("tiny.txt", text);
    llama_ = make_base("llama");
    qwen2_ = make_base("qwen2");
    CliResult r = run_loom_cli(*shared_, lora_flags(llama_, shared_->sub("adapter"), "1"));
    adapter_ok_ = r.exit_code == 0;
    EXPECT_TRUE(adapter_ok_) << r.err;
  }
  static void TearDownTestSuite() {
    delete shared_;
    shared_ = nullptr;
  }
  void SetUp() override {
    if (loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
    ASSERT_TRUE(adapter_ok_) << "the suite's bases or adapter did not train";
  }

  static std::vector<std::string> common(const std::string& out, const std::string& steps) {
    return {"--train_file",
            corpus_,
            "--validation_split_percentage",
            "20",
            "--block_size",
            "16",
            "--output_dir",
            out,
            "--per_device_train_batch_size",
            "2",
            "--max_steps",
            steps,
            "--disable_tqdm",
            "--report_to",
            "none",
            "--device",
            "cpu"};
  }
  // A tiny from-scratch base of `type` (llama or qwen2), the same sizes.
  static std::string make_base(const std::string& type) {
    std::vector<std::string> a = {"train",
                                  "--model_type",
                                  type,
                                  "--config_overrides",
                                  "num_hidden_layers=1,hidden_size=16,intermediate_size=32,"
                                  "num_attention_heads=4,num_key_value_heads=2,"
                                  "max_position_embeddings=32",
                                  "--tokenizer_name",
                                  kGpt2Tokenizer,
                                  "--save_strategy",
                                  "no"};
    const std::string out = shared_->sub(type);
    auto c = common(out, "1");
    a.insert(a.end(), c.begin(), c.end());
    CliResult r = run_loom_cli(*shared_, a);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }
  static std::vector<std::string> lora_flags(const std::string& base, const std::string& out,
                                             const std::string& steps,
                                             std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"train", "--model_name_or_path", base, "--use_lora", "--lora_r",
                                  "4",     "--lora_alpha",         "8"};
    auto c = common(out, steps);
    a.insert(a.end(), c.begin(), c.end());
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  CliResult generate(const std::string& model, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"generate",     "--model_name_or_path", model, "--tokenizer_name",
                                  kGpt2Tokenizer, "--max_new_tokens",     "2"};
    a.insert(a.end(), extra.begin(), extra.end());
    return run_loom_cli(dir_, a);
  }
  // A copy of the suite's adapter whose adapter_config.json `edit` changes.
  std::string edited_adapter(const std::function<void(json&)>& edit) {
    const std::string dir = copy_dir(shared_->sub("adapter"), dir_.sub("edited_adapter"));
    json cfg = read_json_file(dir + "/adapter_config.json");
    edit(cfg);
    write_json_file(dir + "/adapter_config.json", cfg);
    return dir;
  }
  // A copy of the Llama base whose config.json `edit` changes.
  std::string edited_llama(const std::function<void(json&)>& edit) {
    const std::string dir = copy_dir(llama_, dir_.sub("edited_llama"));
    json cfg = read_json_file(dir + "/config.json");
    edit(cfg);
    write_json_file(dir + "/config.json", cfg);
    return dir;
  }
  // A one-step BERT classifier on CSV files (run_glue's flags).
  std::vector<std::string> bert_flags(const std::string& train, const std::string& valid) {
    return {"train",
            "--model_type",
            "bert",
            "--task",
            "text-classification",
            "--config_overrides",
            "num_hidden_layers=1,hidden_size=16,num_attention_heads=2,intermediate_size=32,"
            "max_position_embeddings=64",
            "--tokenizer_name",
            kBertTok,
            "--train_file",
            train,
            "--validation_file",
            valid,
            "--do_eval",
            "--text_column",
            "sentence",
            "--label_column",
            "label",
            "--output_dir",
            dir_.sub("out"),
            "--max_steps",
            "1",
            "--save_strategy",
            "no",
            "--disable_tqdm",
            "--max_seq_length",
            "32",
            "--report_to",
            "none"};
  }

  static TempDir* shared_;
  static std::string corpus_, llama_, qwen2_;
  static bool adapter_ok_;
  TempDir dir_;
};

TempDir* LoomBadInputMore::shared_ = nullptr;
std::string LoomBadInputMore::corpus_, LoomBadInputMore::llama_, LoomBadInputMore::qwen2_;
bool LoomBadInputMore::adapter_ok_ = false;

// Rows 1 and 3: a rank above the layer width was a bad_alloc (10^9) or a 448 MB adapter (10^6).
TEST_F(LoomBadInputMore, LoraRankAboveTheLayerWidthIsRefusedBeforeAllocating) {
  for (const char* r : {"1000000000", "1000000", "17"}) {  // q_proj: 16 -> 16
    SCOPED_TRACE(r);
    auto flags = lora_flags(llama_, dir_.sub("out"), "1");
    flags.insert(flags.end(), {"--lora_r", r});
    CliResult res = run_loom_cli(dir_, flags);
    expect_one_error_line(res, std::string("[lora] r ") + r +
                                   " is larger than target layer 'model.layers.0.self_attn.q_proj' "
                                   "(in_features 16, out_features 16): the rank must be at most "
                                   "min(in, out) = 16");
  }
  // Each layer's own width: v_proj is 16 -> 8 (2 kv heads of 4).
  auto nine = lora_flags(llama_, dir_.sub("out"), "1", {"--lora_r", "9"});
  expect_one_error_line(run_loom_cli(dir_, nine),
                        "[lora] r 9 is larger than target layer 'model.layers.0.self_attn.v_proj' "
                        "(in_features 16, out_features 8): the rank must be at most min(in, out) "
                        "= 8");
  // r = the smallest width is allowed.
  auto flags = lora_flags(llama_, dir_.sub("ok"), "1", {"--lora_r", "8"});
  CliResult ok = run_loom_cli(dir_, flags);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// Row 2: adapter_config.json "r": 10^9, then `loom generate`.
TEST_F(LoomBadInputMore, AdapterRankAboveTheLayerWidthIsRefusedByGenerate) {
  const std::string a = edited_adapter([](json& c) { c["r"] = 1000000000; });
  expect_one_error_line(generate(a), "[lora] r 1000000000 is larger than target layer");
}

// Row 6: --lora_alpha inf was saved as "lora_alpha": null.
TEST_F(LoomBadInputMore, LoraAlphaMustBeFinite) {
  // -inf and nan already stop at the flag's own check (> 0); inf passed it.
  for (const std::string alpha : {"inf", "-inf", "nan"}) {
    SCOPED_TRACE(alpha);
    auto flags = lora_flags(llama_, dir_.sub("out"), "1", {"--lora_alpha", alpha});
    CliResult r = run_loom_cli(dir_, flags);
    expect_one_error_line(r, alpha == "inf"
                                 ? "[LoraConfig] lora_alpha must be a finite number > 0, got inf"
                                 : "--lora_alpha: expected a value > 0, got " + alpha);
    EXPECT_FALSE(fs::exists(dir_.sub("out/adapter_config.json")));
  }
}

// Row 7: one target that matches nothing, in the flag and in adapter_config.json.
TEST_F(LoomBadInputMore, LoraTargetMatchingNothingIsAnError) {
  auto flags =
      lora_flags(llama_, dir_.sub("out"), "1", {"--lora_target_modules", "q_proj,foo_proj"});
  expect_one_error_line(run_loom_cli(dir_, flags),
                        "[lora] target module 'foo_proj' matches no layer of the base model "
                        "LlamaForCausalLM (target_modules: q_proj, foo_proj)");
  const std::string a = edited_adapter([](json& c) {
    c["target_modules"] = json({"q_proj", "v_proj", "foo_proj"});
  });
  expect_one_error_line(generate(a), "[lora] target module 'foo_proj' matches no layer");
}

// Rows 8 and 16: adapter_config.json fields of the wrong type name the field.
TEST_F(LoomBadInputMore, AdapterConfigFieldsOfTheWrongTypeNameTheField) {
  struct Case {
    const char* field;
    json value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"r", 4.5, "r must be an integer, got 4.5"},
      {"r", "4", "r must be an integer, got \"4\""},
      {"lora_alpha", "8", "lora_alpha must be a number, got \"8\""},
      {"lora_dropout", true, "lora_dropout must be a number, got true"},
      {"target_modules", json({1, 2}),
       "target_modules must be a list of names (strings), got [1,2]"},
      {"fan_in_fan_out", "no", "fan_in_fan_out must be true or false, got \"no\""},
      {"base_model_name_or_path", 7, "base_model_name_or_path must be a string, got 7"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    fs::remove_all(dir_.sub("edited_adapter"));
    const std::string a = edited_adapter([&](json& j) { j[c.field] = c.value; });
    expect_one_error_line(generate(a), "[LoraConfig] " + a + "/adapter_config.json: " + c.message);
  }
}

// Row 9: a Llama adapter checkpoint resumed onto a Qwen2 base of the same shapes.
TEST_F(LoomBadInputMore, ResumingAnAdapterOntoAnotherBaseWarns) {
  const std::string out = dir_.sub("lora"), ckpt = out + "/checkpoint-2";
  CliResult r = run_loom_cli(dir_, lora_flags(llama_, out, "2", {"--save_steps", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(ckpt + "/adapter_config.json"));
  // The same base: no warning.
  r = run_loom_cli(dir_,
                   lora_flags(llama_, dir_.sub("same"), "3", {"--resume_from_checkpoint", ckpt}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("is an adapter of base model"), std::string::npos) << r.err;
  // Another base (PEFT loads it since the shapes fit): loaded, with a warning naming both.
  r = run_loom_cli(dir_,
                   lora_flags(qwen2_, dir_.sub("other"), "3", {"--resume_from_checkpoint", ckpt}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("[lora] warning: " + ckpt +
                       "/adapter_config.json is an adapter of base "
                       "model '" +
                       llama_ + "', loaded here onto base model '" + qwen2_ + "'"),
            std::string::npos)
      << r.err;
}

// Row 4: generate built the model from config.json before any size check.
TEST_F(LoomBadInputMore, GenerateChecksConfigSizesBeforeAllocating) {
  std::string m = edited_llama([](json& c) { c["hidden_size"] = 64; });
  CliResult r = generate(m);
  expect_one_error_line(r,
                        "[from_pretrained] " + m +
                            ": shape mismatch: model.embed_tokens.weight "
                            "(checkpoint [50257,16], model [50257,64]); config.json's vocab_size, "
                            "hidden_size disagree with the weights (checked before the model is "
                            "allocated)");
  // The 8192 (4.0 GB before the shape error) and a missing hidden_size
  // (transformers' default 4096): refused before allocating, by the shapes or the memory.
  for (const char* edit : {"8192", "missing"}) {
    SCOPED_TRACE(edit);
    fs::remove_all(m);
    m = edited_llama([&](json& c) {
      if (std::string(edit) == "missing")
        c.erase("hidden_size");
      else
        c["hidden_size"] = 8192;
    });
    expect_one_error_line(generate(m), "[from_pretrained] " + m + ": ");
  }
}

// Row 13: temperatures whose logits overflow float32 gave NaN probabilities
// (a temperature that lets one logit overflow: tests/nn/generation_test.cpp).
TEST_F(LoomBadInputMore, SamplingTemperatureThatMakesNaNIsRefused) {
  for (const std::string device : {"cpu", "lazy"})
    for (const std::string t : {"1e-45", "1e-300"}) {
      SCOPED_TRACE(device + " " + t);
      CliResult r = generate(llama_, {"--do_sample", "--temperature", t, "--device", device});
      expect_one_error_line(r, "[generate] temperature " + t + " is below 2.93874e-39");
    }
  // Greedy decoding never divides: any positive temperature is fine there.
  CliResult g = generate(llama_, {"--temperature", "1e-45"});
  EXPECT_EQ(g.exit_code, 0) << g.err;
}

// Row 14: rope_type linear without its factor (transformers raises KeyError).
TEST_F(LoomBadInputMore, RopeLinearWithoutFactorIsRefused) {
  std::string m = edited_llama([](json& c) {
    c.erase("rope_scaling");
    c.erase("rope_theta");
    c["rope_parameters"] = {{"rope_type", "linear"}, {"rope_theta", 10000.0}};
  });
  expect_one_error_line(
      generate(m), "[config] " + m + "/config.json: rope_type 'linear' needs the key 'factor'");
  fs::remove_all(m);
  m = edited_llama([](json& c) {
    c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}};
  });
  expect_one_error_line(generate(m),
                        "rope_type 'llama3' needs the key 'original_max_position_embeddings'");
}

// Row 19: a shard that is a symlink to itself was a raw filesystem_error.
TEST_F(LoomBadInputMore, SelfLinkingShardIsALoomError) {
  const std::string m = copy_dir(llama_, dir_.sub("sharded"));
  fs::remove(m + "/model.safetensors");
  const std::string shard = "model-00001-of-00001.safetensors";
  write_json_file(m + "/model.safetensors.index.json",
                  {{"metadata", json::object()}, {"weight_map", {{"lm_head.weight", shard}}}});
  fs::create_symlink(shard, m + "/" + shard);
  CliResult r = generate(m);
  expect_one_error_line(r, "[from_pretrained] shard '" + m + "/" + shard +
                               "': cannot read it (Too many levels of symbolic links)");
  EXPECT_EQ(r.err.find("filesystem error"), std::string::npos) << r.err;
  // model.safetensors itself as the loop.
  fs::remove(m + "/model.safetensors.index.json");
  fs::create_symlink("model.safetensors", m + "/model.safetensors");
  expect_one_error_line(
      generate(m), "[from_pretrained] weights file '" + m + "/model.safetensors': cannot read it");
}

// Row 17: a Split regex past PCRE2's match limit named tokenizer.json only.
TEST_F(LoomBadInputMore, RegexMatchLimitWhileTokenizingNamesTheDataFileAndLine) {
  const std::string tok = copy_dir(kLlama3Tok, dir_.sub("tok"));
  json j = read_json_file(tok + "/tokenizer.json");
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Regex", "(a+)+$"}};  // exponential
  write_json_file(tok + "/tokenizer.json", j);
  const std::string data =
      dir_.write("regex.txt", "It is a truth.\nuniversally acknowledged\n" + std::string(40, 'a') +
                                  "!\nthat a single man\n");
  std::vector<std::string> flags = {"train",
                                    "--model_type",
                                    "gpt2",
                                    "--config_overrides",
                                    "n_layer=1,n_embd=16,n_head=2,n_positions=32,vocab_size=705",
                                    "--tokenizer_name",
                                    tok,
                                    "--train_file",
                                    data,
                                    "--block_size",
                                    "4",
                                    "--output_dir",
                                    dir_.sub("out"),
                                    "--max_steps",
                                    "1",
                                    "--save_strategy",
                                    "no",
                                    "--disable_tqdm"};
  CliResult r = run_loom_cli(dir_, flags);
  expect_one_error_line(r, "[data] " + data + ":3: ");
  EXPECT_NE(r.err.find("match limit"), std::string::npos) << r.err;
  // The same through a CSV text column: the row's line.
  const std::string csv = dir_.write(
      "regex.csv", "text\nIt is a truth\n\"" + std::string(40, 'a') + "!\"\nthat a single man\n");
  flags[8] = csv;
  r = run_loom_cli(dir_, flags);
  expect_one_error_line(r, "[data] " + csv + ":3: ");
}

// Rows 10, 11, 12: classification labels come from the training split (run_glue).
TEST_F(LoomBadInputMore, ValidationLabelNotInTrainingIsAnErrorNamingFileAndLine) {
  const std::string train = dir_.write("train.csv", "sentence,label\ngood,1\nbad,0\nok,1\n");
  for (const char* label : {"7", "2"}) {
    SCOPED_TRACE(label);
    const std::string valid =
        dir_.write("valid.csv", std::string("sentence,label\ngood,1\nbad,") + label + "\n");
    CliResult r = run_loom_cli(dir_, bert_flags(train, valid));
    expect_one_error_line(r, "[dataset] " + valid + ":3: label " + label +
                                 " is not a label of the training split (0, 1)");
    EXPECT_EQ(r.out.find("loom train:"), std::string::npos) << "refused before training";
  }
  // A string label new in validation stays an error naming file and line.
  const std::string strain = dir_.write("strain.csv", "sentence,label\ngood,pos\nbad,neg\n");
  const std::string svalid = dir_.write("svalid.csv", "sentence,label\ngood,pos\nbad,meh\n");
  expect_one_error_line(run_loom_cli(dir_, bert_flags(strain, svalid)),
                        "[dataset] " + svalid + ":3: label 'meh' is not one of the 2 label names");
}

TEST_F(LoomBadInputMore, EmptyLabelCellIsAnError) {
  const std::string valid = dir_.write("valid.csv", "sentence,label\ngood,1\nbad,0\n");
  for (const char* rows : {"good,1\nbad,\nok,0\n", "good,pos\nbad,\nok,neg\n"}) {
    SCOPED_TRACE(rows);
    const std::string train = dir_.write("train.csv", std::string("sentence,label\n") + rows);
    expect_one_error_line(run_loom_cli(dir_, bert_flags(train, valid)),
                          "[dataset] " + train + ":3: the label in column 'label' is empty");
  }
}

TEST_F(LoomBadInputMore, SingleClassTrainsWithAWarning) {
  const std::string train = dir_.write("train.csv", "sentence,label\ngood,0\nbad,0\nok,0\n");
  const std::string valid = dir_.write("valid.csv", "sentence,label\ngood,0\n");
  CliResult r = run_loom_cli(dir_, bert_flags(train, valid));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("loom: warning: [data] --train_file '" + train +
                       "' has a single class in column 'label'"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_json_file(dir_.sub("out/config.json"))["id2label"].size(), 1u);
  // Two classes: no warning.
  const std::string two = dir_.write("two.csv", "sentence,label\ngood,0\nbad,1\n");
  fs::remove_all(dir_.sub("out"));
  r = run_loom_cli(dir_, bert_flags(two, valid));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("single class"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace loom::testing
