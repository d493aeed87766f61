// SFT rows from Parquet (src/io/parquet_rows.cpp through pyarrow's Arrow C++,
// src/data/sft/sft_files.cpp): the fixtures of tests/fixtures/sft/parquet/,
// written from the .jsonl fixtures by datasets (tools/make_parquet_fixtures.py,
// two rows per row group), give the same rows and exactly the same tokens and
// labels as the JSONL versions (and TRL's, cases.json); pre-tokenized rows
// are taken as they are; a wrong column, a wrong type and a file that is not
// Parquet are one error naming the file. In a build without pyarrow every
// read is the error that says to run scripts/setup.sh.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error_of.h"
#include "common/shared_data.h"
#include "common/temp_dir.h"
#include "data/sft/sft_files.h"
#include "io/parquet_rows.h"
#include "loom/job.h"
#include "loom/model_registry.h"
#include "train/sft_case_job.h"

namespace loom {
namespace sft_parquet_test {
namespace fs = std::filesystem;
using testing::error_of;
using testing::TempDir;

const std::string kSft = std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/sft";
const std::string kParquet = kSft + "/parquet";

std::string tokenizer_folder(const TempDir& dir, const std::string& tokenizer_json) {
  fs::create_directories(dir.sub("tok"));
  fs::copy_file(tokenizer_json, dir.sub("tok/tokenizer.json"));
  fs::copy_file(kSft + "/qwen2_tokenizer_config.json", dir.sub("tok/tokenizer_config.json"));
  return dir.sub("tok");
}

ModelPlan sft_plan() {
  ModelPlan plan;
  plan.task = kTaskSft;
  plan.max_positions = 4096;
  return plan;
}

// A copy: the JobData is often a temporary.
std::vector<data::Example> examples_of(const JobData& d) {
  return std::dynamic_pointer_cast<const data::InMemoryDataset>(d.train)->examples();
}

std::vector<std::string> fixture_stems() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kSft))
    if (e.path().extension() == ".jsonl") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ParquetRows, EveryFixtureRowEqualsItsJsonlRow) {
  if (!io::parquet_available()) GTEST_SKIP() << "built without pyarrow (scripts/setup.sh)";
  const std::vector<std::string> stems = fixture_stems();
  ASSERT_GE(stems.size(), 15u);
  for (const std::string& stem : stems) {
    SCOPED_TRACE(stem);
    const std::vector<data::SftRow> want =
        data::read_sft_rows(kSft + "/" + stem + ".jsonl", stem, "text");
    const std::vector<data::SftRow> got =
        data::read_sft_rows(kParquet + "/" + stem + ".parquet", stem, "text");
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(got.empty());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].value, want[i].value) << "row " << i;
      EXPECT_EQ(got[i].where, kParquet + "/" + stem + ".parquet: row " + std::to_string(i + 1));
    }
  }
  // Several row groups of 2 rows: read one after the other.
  EXPECT_EQ(data::read_sft_rows(kParquet + "/loss_rows.parquet", "t", "text").size(), 8u);
  // Only the named columns are read; all of them when none is named.
  std::vector<nlohmann::ordered_json> rows;
  io::read_parquet_rows(
      kParquet + "/messages_tools_qwen3.parquet", {"tools"},
      [&](nlohmann::ordered_json&& r, int64_t) { rows.push_back(r); }, "t");
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].size(), 1u);
  EXPECT_TRUE(rows[0]["tools"].is_string());
  EXPECT_EQ(io::parquet_columns(kParquet + "/messages_tools_qwen3.parquet", "t"),
            (std::vector<std::string>{"messages", "tools"}));
}

TEST(SftParquet, TokensEqualTheJsonlVersionAndTrlOnEveryFixtureCase) {
  if (!io::parquet_available()) GTEST_SKIP() << "built without pyarrow (scripts/setup.sh)";
  if (!testing::require_shared("tokenizers/qwen2/tokenizer.json")) GTEST_SKIP();
  TempDir dir;
  const std::string tok_dir =
      tokenizer_folder(dir, testing::shared_data_dir() + "/tokenizers/qwen2/tokenizer.json");
  Tokenizer tok = Tokenizer::from_pretrained(tok_dir);
  nlohmann::json cases = nlohmann::json::parse(std::ifstream(kSft + "/cases.json"));
  for (const auto& [name, c] : cases["cases"].items()) {
    SCOPED_TRACE(name);
    const std::string rows = c["rows"].get<std::string>();
    JobArguments job = testing::sft_case_job(
        c, tok_dir, kParquet + "/" + rows.substr(0, rows.size() - 6) + ".parquet");
    const std::vector<data::Example> ex =
        examples_of(load_sft_data(job, sft_plan(), tok, true, false));
    ASSERT_EQ(ex.size(), c["input_ids"].size());
    for (size_t i = 0; i < ex.size(); ++i) {
      EXPECT_EQ(ex[i].input_ids, c["input_ids"][i].get<std::vector<int64_t>>()) << "row " << i;
      EXPECT_EQ(ex[i].labels, c["labels"][i].get<std::vector<int64_t>>()) << "row " << i;
    }
  }
  // Pre-tokenized rows (input_ids + completion_mask): TRL's ids and labels as they are.
  JobArguments job;
  job.task = kTaskSft;
  job.tokenizer_name = tok_dir;
  job.train_file = kParquet + "/tokenized.parquet";
  const std::vector<data::Example> ex =
      examples_of(load_sft_data(job, sft_plan(), tok, true, false));
  const nlohmann::json& c = cases["cases"]["prompt_completion"];
  ASSERT_EQ(ex.size(), c["input_ids"].size());
  for (size_t i = 0; i < ex.size(); ++i) {
    EXPECT_EQ(ex[i].input_ids, c["input_ids"][i].get<std::vector<int64_t>>()) << "row " << i;
    EXPECT_EQ(ex[i].labels, c["labels"][i].get<std::vector<int64_t>>()) << "row " << i;
  }
}

// The tiny tokenizer fixture: runs without ../shared/data.
class SftParquetTiny : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_dir_ = tokenizer_folder(
        dir_, std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/tokenizers/qwen2/tokenizer.json");
    tok_ = std::make_unique<Tokenizer>(Tokenizer::from_pretrained(tok_dir_));
  }
  JobArguments job(const std::string& train_file) const {
    JobArguments j;
    j.task = kTaskSft;
    j.tokenizer_name = tok_dir_;
    j.chat_template_path = kSft + "/chatml_generation.jinja";
    j.assistant_only_loss = true;
    j.train_file = train_file;
    return j;
  }
  std::string error_for(const std::string& train_file) const {
    return error_of([&] { load_sft_data(job(train_file), sft_plan(), *tok_, true, false); });
  }
  TempDir dir_;
  std::string tok_dir_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(SftParquetTiny, ConversationsGiveTheJsonlTokensAndLabels) {
  if (!io::parquet_available()) GTEST_SKIP() << "built without pyarrow (scripts/setup.sh)";
  const std::vector<data::Example> want =
      examples_of(load_sft_data(job(kSft + "/loss_rows.jsonl"), sft_plan(), *tok_, true, false));
  const std::vector<data::Example> got = examples_of(
      load_sft_data(job(kParquet + "/loss_rows.parquet"), sft_plan(), *tok_, true, false));
  ASSERT_EQ(got.size(), 8u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].input_ids, want[i].input_ids) << "row " << i;
    EXPECT_EQ(got[i].labels, want[i].labels) << "row " << i;
  }
}

TEST_F(SftParquetTiny, WrongColumnWrongTypeAndNotParquetAreOneErrorNamingTheFile) {
  const std::string bad = dir_.write("bad.parquet", "PAR1 this is not parquet");
  if (!io::parquet_available()) {
    const std::string e = error_for(kParquet + "/loss_rows.parquet");
    EXPECT_NE(e.find("[sft] --train_file '" + kParquet +
                     "/loss_rows.parquet': Parquet needs "
                     "pyarrow: run scripts/setup.sh"),
              std::string::npos)
        << e;
    return;
  }
  std::string e = error_for(kParquet + "/wrong_column.parquet");
  EXPECT_NE(e.find("wrong_column.parquet': no column of TRL's dataset schemas: expected 'text' "
                   "(--dataset_text_field), 'messages', 'prompt' + 'completion', or "
                   "'input_ids'; the file has columns: body"),
            std::string::npos)
      << e;
  JobArguments text = job(kParquet + "/wrong_type.parquet");
  text.assistant_only_loss = false;
  text.chat_template_path.clear();
  e = error_of([&] { load_sft_data(text, sft_plan(), *tok_, true, false); });
  EXPECT_NE(e.find("wrong_type.parquet: row 1: field 'text': expected a string, got number"),
            std::string::npos)
      << e;
  e = error_for(bad);
  EXPECT_NE(e.find("[sft] --train_file '" + bad + "': not a Parquet file"), std::string::npos) << e;
  e = error_for(dir_.sub("missing.parquet"));
  EXPECT_NE(e.find("missing.parquet': no such file"), std::string::npos) << e;
}

}  // namespace sft_parquet_test
}  // namespace loom
