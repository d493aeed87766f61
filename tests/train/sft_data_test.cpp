// Task sft's data path (load_sft_data, src/data/sft/) against TRL: every case
// of tests/fixtures/sft/cases.json (written by tools/make_sft_fixtures.py with
// TRL's SFTTrainer, the real Qwen2 tokenizer and the Qwen3 / Qwen2.5 / a
// {% generation %} template) gives exactly TRL's input_ids and labels; the
// truncation is counted; bad rows are one error naming the file, line and
// field; batches are padded to the length buckets with masked padding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error_of.h"
#include "common/shared_data.h"
#include "common/temp_dir.h"
#include "data/sft/sft_examples.h"
#include "loom/collator.h"
#include "loom/job.h"
#include "loom/model_registry.h"
#include "train/sft_case_job.h"

namespace loom {
namespace sft_data_test {
namespace fs = std::filesystem;
using testing::error_of;
using testing::TempDir;

const std::string kFixtures = std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/sft";

// A tokenizer folder: `tokenizer_json` + the fixture's Qwen3 special tokens
// (+ a chat template in tokenizer_config.json when given).
std::string tokenizer_folder(const TempDir& dir, const std::string& tokenizer_json,
                             const std::string& chat_template = "") {
  fs::create_directories(dir.sub("tok"));
  fs::copy_file(tokenizer_json, dir.sub("tok/tokenizer.json"));
  nlohmann::json cfg =
      nlohmann::json::parse(std::ifstream(kFixtures + "/qwen2_tokenizer_config.json"));
  if (!chat_template.empty()) cfg["chat_template"] = chat_template;
  dir.write("tok/tokenizer_config.json", cfg.dump());
  return dir.sub("tok");
}

ModelPlan sft_plan(int64_t positions = 4096) {
  ModelPlan plan;
  plan.task = kTaskSft;
  plan.max_positions = positions;
  return plan;
}

std::vector<int64_t> ints(const nlohmann::json& j) { return j.get<std::vector<int64_t>>(); }

TEST(SftData, EqualsTrlSftTrainerOnEveryFixtureCase) {
  if (!testing::require_shared("tokenizers/qwen2/tokenizer.json")) GTEST_SKIP();
  TempDir dir;
  const std::string tok_dir =
      tokenizer_folder(dir, testing::shared_data_dir() + "/tokenizers/qwen2/tokenizer.json");
  Tokenizer tok = Tokenizer::from_pretrained(tok_dir);
  nlohmann::json cases = nlohmann::json::parse(std::ifstream(kFixtures + "/cases.json"));
  ASSERT_GE(cases["cases"].size(), 12u);
  for (const auto& [name, c] : cases["cases"].items()) {
    SCOPED_TRACE(name);
    JobArguments job =
        testing::sft_case_job(c, tok_dir, kFixtures + "/" + c["rows"].get<std::string>());
    JobData data = load_sft_data(job, sft_plan(), tok, true, false);
    const auto& ex = std::dynamic_pointer_cast<const data::InMemoryDataset>(data.train)->examples();
    ASSERT_EQ(ex.size(), c["input_ids"].size());
    for (size_t i = 0; i < ex.size(); ++i) {
      EXPECT_EQ(ex[i].input_ids, ints(c["input_ids"][i])) << "row " << i;
      EXPECT_EQ(ex[i].labels, ints(c["labels"][i])) << "row " << i;
    }
  }
}

// The tiny Qwen2-style tokenizer fixture (600 tokens + <|im_start|>, <|im_end|>).
class SftBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_dir_ = tokenizer_folder(
        dir_, std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/tokenizers/qwen2/tokenizer.json");
    tok_ = std::make_unique<Tokenizer>(Tokenizer::from_pretrained(tok_dir_));
  }
  std::string error_for(const std::string& rows, JobArguments job = {}) {
    job.task = kTaskSft;
    job.tokenizer_name = tok_dir_;
    job.train_file = dir_.write("train.jsonl", rows);
    if (job.chat_template_path.empty())
      job.chat_template_path = kFixtures + "/chatml_generation.jinja";
    return error_of([&] { load_sft_data(job, sft_plan(), *tok_, true, false); });
  }
  TempDir dir_;
  std::string tok_dir_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(SftBadInput, UnknownRoleNamesFileLineAndField) {
  std::string e = error_for(
      R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})"
      "\n"
      R"({"messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "yo"}]})"
      "\n");
  EXPECT_NE(e.find("train.jsonl:2: field 'messages[1].role': unknown role 'bot'"),
            std::string::npos)
      << e;
}

TEST_F(SftBadInput, RowWithoutSchemaAndMixedSchemas) {
  std::string e = error_for("{\"text\": \"a\"}\n\n{\"body\": \"b\"}\n");
  EXPECT_NE(e.find("train.jsonl:3: no recognised schema"), std::string::npos) << e;
  EXPECT_NE(e.find("keys: body"), std::string::npos) << e;
  e = error_for("{\"text\": \"a\"}\n{\"prompt\": \"b\", \"completion\": \"c\"}\n");
  EXPECT_NE(e.find("train.jsonl:2: mixed schemas: this row is prompt-completion but"),
            std::string::npos)
      << e;
  e = error_for(R"({"prompt": "b", "completion": [{"role": "assistant", "content": "c"}]})");
  EXPECT_NE(e.find("train.jsonl:1: field 'prompt': prompt and completion must both be"),
            std::string::npos)
      << e;
  e = error_for("{\"text\": 3}\n");
  EXPECT_NE(e.find("train.jsonl:1: field 'text': expected a string, got number"), std::string::npos)
      << e;
  e = error_for("{\"text\": \"a\"}\n{\"text\": \n");
  EXPECT_NE(e.find("train.jsonl:2: not valid JSON"), std::string::npos) << e;
}

TEST_F(SftBadInput, TemplateThatRaisesNamesTheRowAndTemplate) {
  JobArguments job;
  job.chat_template_path =
      dir_.write("strict.jinja",
                 "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system "
                 "turns') }}{% endif %}{{ m.content }}{% endfor %}");
  std::string e = error_for(
      R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})"
      "\n"
      R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]})"
      "\n",
      job);
  EXPECT_NE(e.find("[sft] " + dir_.sub("train.jsonl") + ":2: chat template strict.jinja"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("no system turns"), std::string::npos) << e;
}

TEST_F(SftBadInput, AssistantOnlyLossNeedsGenerationMarkersAndAnAssistantTurn) {
  const std::string conv =
      R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})";
  JobArguments job;
  job.assistant_only_loss = true;
  job.chat_template_path =
      dir_.write("plain.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}");
  std::string e = error_for(conv + "\n", job);
  EXPECT_NE(e.find("--assistant_only_loss: the chat template plain.jinja has no {% generation %}"),
            std::string::npos)
      << e;
  job.chat_template_path.clear();  // chatml_generation.jinja
  e = error_for(conv + "\n" + R"({"messages": [{"role": "user", "content": "only a question"}]})",
                job);
  EXPECT_NE(
      e.find("train.jsonl:2: --assistant_only_loss: this conversation has no assistant token"),
      std::string::npos)
      << e;
  e = error_for("{\"text\": \"a\"}\n", job);
  EXPECT_NE(e.find("--assistant_only_loss needs conversational rows"), std::string::npos) << e;
  // An empty assistant turn is trained as TRL does: its end-of-turn token is in the mask.
  JobData d = [&] {
    JobArguments j = job;
    j.task = kTaskSft;
    j.tokenizer_name = tok_dir_;
    j.chat_template_path = kFixtures + "/chatml_generation.jinja";
    j.train_file = dir_.write(
        "empty.jsonl",
        R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}]})");
    return load_sft_data(j, sft_plan(), *tok_, true, false);
  }();
  const auto& ex = std::dynamic_pointer_cast<const data::InMemoryDataset>(d.train)->examples();
  ASSERT_EQ(ex.size(), 1u);
  int64_t kept = 0;
  for (int64_t l : ex[0].labels) kept += l != -100;
  EXPECT_EQ(kept, 1);  // <|im_end|>
  EXPECT_EQ(ex[0].labels[ex[0].labels.size() - 2], *tok_->token_to_id("<|im_end|>"));
}

TEST_F(SftBadInput, PackingWithoutMaxLengthAndParquetAreErrors) {
  JobArguments job;
  job.packing = true;
  job.max_length = std::nullopt;
  EXPECT_NE(error_for("{\"text\": \"a\"}\n", job).find("--packing true needs --max_length N"),
            std::string::npos);
  job.packing_strategy = "best";
  EXPECT_NE(error_for("{\"text\": \"a\"}\n", job).find("--packing_strategy: expected bfd"),
            std::string::npos);
  JobArguments pq;
  pq.task = kTaskSft;
  pq.tokenizer_name = tok_dir_;
  pq.train_file = dir_.write("train.parquet", "PAR1");
  // Parquet is read (sft_parquet_test.cpp); "PAR1" alone is no Parquet file,
  // and a build without pyarrow says what to install.
  const std::string pq_error = error_of([&] { load_sft_data(pq, sft_plan(), *tok_, true, false); });
  EXPECT_TRUE(pq_error.find("train.parquet': not a Parquet file") != std::string::npos ||
              pq_error.find("train.parquet': Parquet needs pyarrow: run scripts/setup.sh") !=
                  std::string::npos)
      << pq_error;
  JobArguments eos;
  eos.eos_token = "<|nope|>";
  EXPECT_NE(error_for("{\"text\": \"a\"}\n", eos).find("--eos_token '<|nope|>' is not in"),
            std::string::npos);
}

TEST_F(SftBadInput, TruncationIsCountedAndFullyMaskedRowsDropped) {
  std::vector<data::SftRow> rows = {
      {nlohmann::ordered_json{{"prompt", "abc abc abc abc"}, {"completion", " d"}}, "t:1"},
      {nlohmann::ordered_json{{"prompt", "a"}, {"completion", " b c d e f g h"}}, "t:2"},
      {nlohmann::ordered_json{{"prompt", "a"}, {"completion", " b"}}, "t:3"}};
  data::SftOptions o;
  o.eos_token = "<|im_end|>";
  o.max_length = 4;
  data::SftExamples ex = data::sft_examples(rows, *tok_, nullptr, o);
  EXPECT_EQ(ex.schema, data::SftSchema::kPromptCompletion);
  EXPECT_EQ(ex.truncated, 2);
  EXPECT_EQ(ex.dropped, 1);  // row 1: its prompt fills the 4 tokens
  ASSERT_EQ(ex.examples.size(), 2u);
  EXPECT_EQ(ex.examples[0].input_ids.size(), 4u);
  EXPECT_EQ(ex.examples[0].labels[0], -100);  // the prompt "a"
  EXPECT_NE(ex.examples[0].labels[1], -100);
}

TEST(SftBatches, PadToLengthBucketsWithMaskedPadding) {
  EXPECT_EQ(sft_length_buckets(1024), (std::vector<int64_t>{16, 32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(sft_length_buckets(100), (std::vector<int64_t>{16, 32, 64, 100}));
  EXPECT_EQ(sft_length_buckets(8), (std::vector<int64_t>{8}));
  TempDir dir;
  JobArguments job;
  job.task = kTaskSft;
  job.model_type = "qwen3";
  job.config_overrides =
      "num_hidden_layers=1,hidden_size=16,intermediate_size=32,num_attention_heads=2,"
      "num_key_value_heads=1,head_dim=8,max_position_embeddings=64";
  job.tokenizer_name = tokenizer_folder(
      dir, std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/tokenizers/qwen2/tokenizer.json");
  job.chat_template_path = kFixtures + "/chatml_generation.jinja";
  job.train_rows = DataRows::json(
      {R"({"prompt": [{"role": "user", "content": "hi there"}], "completion": [{"role": "assistant", "content": "hello"}]})",
       R"({"prompt": [{"role": "user", "content": "a much longer question than the first one was"}], "completion": [{"role": "assistant", "content": "yes"}]})"});
  job.max_length = 64;
  TrainingArguments args;
  Job built = build_job(job, args, {.want_eval = false});
  EXPECT_EQ(built.plan.task, kTaskSft);
  EXPECT_EQ(built.model->architecture(), "Qwen3ForCausalLM");
  const auto& ex =
      std::dynamic_pointer_cast<const data::InMemoryDataset>(built.data.train)->examples();
  ASSERT_EQ(ex.size(), 2u);
  data::Batch b = built.options.data_collator->collate(ex);
  const int64_t longest =
      static_cast<int64_t>(std::max(ex[0].input_ids.size(), ex[1].input_ids.size()));
  const int64_t bucket = longest <= 16 ? 16 : longest <= 32 ? 32 : 64;
  ASSERT_EQ(b.at("input_ids").shape()[1], bucket);
  std::vector<int64_t> mask = b.at("attention_mask").to_vector<int64_t>();
  std::vector<int64_t> labels = b.at("labels").to_vector<int64_t>();
  for (size_t r = 0; r < 2; ++r) {
    for (int64_t t = 0; t < bucket; ++t) {
      const size_t k = r * static_cast<size_t>(bucket) + static_cast<size_t>(t);
      const bool real = t < static_cast<int64_t>(ex[r].input_ids.size());
      EXPECT_EQ(mask[k], real ? 1 : 0);
      EXPECT_EQ(labels[k], real ? ex[r].labels[static_cast<size_t>(t)] : -100);
    }
  }
  // The loss is the mean over the micro-batch's label tokens (shifted) of
  // -log softmax(logits): computed here by hand from the logits.
  ModelInputs in;
  in.input_ids = b.at("input_ids");
  in.attention_mask = b.at("attention_mask");
  in.labels = b.at("labels");
  ModelOutput o = built.model->forward(in);
  std::vector<float> logits = o.logits.to_vector<float>();
  const int64_t vocab = o.logits.shape()[2];
  double sum = 0;
  int64_t count = 0;
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t t = 0; t + 1 < bucket; ++t) {
      const int64_t target = labels[static_cast<size_t>(r * bucket + t + 1)];
      if (target == -100) continue;
      const float* row = logits.data() + (r * bucket + t) * vocab;
      double mx = row[0], z = 0;
      for (int64_t v = 0; v < vocab; ++v) mx = std::max(mx, static_cast<double>(row[v]));
      for (int64_t v = 0; v < vocab; ++v) z += std::exp(row[v] - mx);
      sum += -(row[target] - mx - std::log(z));
      ++count;
    }
  }
  ASSERT_GT(count, 0);
  EXPECT_NEAR(o.loss.item(), sum / static_cast<double>(count), 1e-5);
}

}  // namespace sft_data_test
}  // namespace loom
