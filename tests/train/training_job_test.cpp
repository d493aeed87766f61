// The training job as a library call (loom/job.h): rows handed over in memory
// give exactly the examples of the same rows in a .jsonl file (language
// modelling blocks, the validation split, classification labels and class
// names); a split given both ways, text rows for classification and a row
// that is not a JSON object are refused by name; build_job returns the
// task's model, collator and metrics and adjusts prediction_loss_only, or
// uses a model already built.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "loom/job.h"
#include "loom/model_registry.h"

namespace loom {
namespace {

const std::string kGpt2 = std::string(LOOM_SOURCE_DIR) + "/assets/tokenizers/gpt2";
const std::string kBert = std::string(LOOM_SOURCE_DIR) + "/assets/tokenizers/bert-base-uncased";

std::vector<std::string> sample_texts() {
  std::vector<std::string> t;
  for (int i = 0; i < 40; ++i)
    t.push_back("Row " + std::to_string(i) + ": it is a truth universally acknowledged that " +
                std::string(static_cast<size_t>(i % 5 + 1), 'x'));
  return t;
}

// The same texts as a .jsonl file with a "text" column.
std::string write_jsonl(const testing::TempDir& dir, const std::vector<nlohmann::json>& rows) {
  std::string text;
  for (const auto& r : rows) text += r.dump() + "\n";
  return dir.write("rows.jsonl", text);
}

std::vector<std::vector<int64_t>> ids_of(const data::Dataset* ds) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t i = 0; ds && i < ds->size(); ++i) out.push_back(ds->get(i).input_ids);
  return out;
}

std::vector<int64_t> labels_of(const data::Dataset* ds) {
  std::vector<int64_t> out;
  for (int64_t i = 0; ds && i < ds->size(); ++i) out.push_back(ds->get(i).label.value_or(-7));
  return out;
}

JobArguments gpt2_from_scratch() {
  JobArguments job;
  job.model_type = "gpt2";
  job.config_overrides = "n_layer=1,n_embd=16,n_head=2,n_positions=32";
  job.tokenizer_name = kGpt2;
  job.block_size = 8;
  job.validation_split_percentage = 20;
  return job;
}

TEST(JobRows, TextRowsGiveTheBlocksOfTheSameRowsInAFile) {
  testing::TempDir dir;
  std::vector<nlohmann::json> rows;
  for (const std::string& t : sample_texts()) rows.push_back({{"text", t}});
  JobArguments from_file = gpt2_from_scratch();
  from_file.train_file = write_jsonl(dir, rows);
  JobArguments from_rows = gpt2_from_scratch();
  from_rows.train_rows = DataRows::texts(sample_texts());
  Tokenizer tok = Tokenizer::from_pretrained(kGpt2);
  ModelPlan plan = plan_model(from_rows, tok);
  JobData a = load_job_data(from_file, plan, tok, true, true);
  JobData b = load_job_data(from_rows, plan, tok, true, true);
  ASSERT_GT(a.train->size(), 10);
  ASSERT_GT(a.eval->size(), 1);  // the first 20% of the rows
  EXPECT_EQ(ids_of(a.train.get()), ids_of(b.train.get()));
  EXPECT_EQ(ids_of(a.eval.get()), ids_of(b.eval.get()));
  EXPECT_EQ(a.train->get(0).input_ids.size(), 8u);
}

TEST(JobRows, JsonRowsClassifyAsTheSameRowsInAFile) {
  testing::TempDir dir;
  std::vector<nlohmann::json> rows;
  std::vector<std::string> json_rows;
  for (int i = 0; i < 20; ++i) {
    nlohmann::json r = {
        {"sentence", i % 3 ? "a happy day" : "a gloomy night number " + std::to_string(i)},
        {"label", i % 3 ? "positive" : "negative"}};
    rows.push_back(r);
    json_rows.push_back(i == 4 ? r.dump(2) : r.dump());  // a pretty-printed row reads the same
  }
  auto job = [&](bool in_memory) {
    JobArguments j;
    j.task = kTaskTextClassification;
    j.model_type = "bert";
    j.config_overrides =
        "num_hidden_layers=1,hidden_size=16,intermediate_size=32,num_attention_heads=2,"
        "max_position_embeddings=32";
    j.tokenizer_name = kBert;
    j.text_column = "sentence";
    j.max_seq_length = 12;
    j.validation_split_percentage = 25;
    if (in_memory) {
      j.train_rows = DataRows::json(json_rows);
    } else {
      j.train_file = write_jsonl(dir, rows);
    }
    return j;
  };
  Tokenizer tok = Tokenizer::from_pretrained(kBert);
  ModelPlan plan = plan_model(job(true), tok);
  JobData a = load_job_data(job(false), plan, tok, true, true);
  JobData b = load_job_data(job(true), plan, tok, true, true);
  EXPECT_EQ(b.label_names, (std::vector<std::string>{"negative", "positive"}));
  EXPECT_EQ(a.label_names, b.label_names);
  EXPECT_EQ(b.num_labels, 2);
  EXPECT_EQ(b.train->size(), 15);
  EXPECT_EQ(b.eval->size(), 5);
  EXPECT_EQ(ids_of(a.train.get()), ids_of(b.train.get()));
  EXPECT_EQ(labels_of(a.train.get()), labels_of(b.train.get()));
  EXPECT_EQ(labels_of(b.eval.get()), (std::vector<int64_t>{0, 1, 1, 0, 1}));
}

TEST(JobRows, RefusesWhatCannotWorkByName) {
  Tokenizer tok = Tokenizer::from_pretrained(kGpt2);
  JobArguments both = gpt2_from_scratch();
  both.train_file = "x.txt";
  both.train_rows = DataRows::texts({"a"});
  ModelPlan plan = plan_model(both, tok);
  EXPECT_EQ(std::string(testing::error_of([&] { load_job_data(both, plan, tok, true, false); })),
            "[data] give --train_file or train_rows, not both");

  JobArguments bad = gpt2_from_scratch();
  bad.train_rows = DataRows::json({R"({"text": "fine"})", "[1, 2]"});
  EXPECT_EQ(std::string(testing::error_of([&] { load_job_data(bad, plan, tok, true, false); })),
            "[data] <train rows>:2: expected a JSON object, got '[1, 2]'");

  JobArguments text_cls;
  text_cls.task = kTaskTextClassification;
  text_cls.model_type = "bert";
  text_cls.tokenizer_name = kBert;
  text_cls.train_rows = DataRows::texts({"a", "b", "c"});
  Tokenizer bert = Tokenizer::from_pretrained(kBert);
  ModelPlan cls = plan_model(text_cls, bert);
  std::string msg = testing::error_of([&] { load_job_data(text_cls, cls, bert, true, false); });
  EXPECT_NE(msg.find("[data] train_rows (3 rows): text-classification needs"), std::string::npos)
      << msg;
}

TEST(BuildJob, ReturnsTheTasksModelCollatorAndMetrics) {
  JobArguments job = gpt2_from_scratch();
  job.train_rows = DataRows::texts(sample_texts());
  TrainingArguments args;
  Job built = build_job(job, args, {.want_eval = false});
  EXPECT_EQ(built.plan.task, kTaskCausalLM);
  EXPECT_EQ(built.model->architecture(), "GPT2LMHeadModel");
  EXPECT_EQ(built.data.eval, nullptr);
  EXPECT_GT(built.data.train->size(), 0);
  EXPECT_NE(built.options.data_collator, nullptr);
  EXPECT_TRUE(static_cast<bool>(built.options.compute_metrics));
  EXPECT_EQ(built.options.tokenizer_dir, kGpt2);
  EXPECT_TRUE(args.prediction_loss_only);  // perplexity needs only the loss

  TrainingArguments kept;
  build_job(job, kept, {.want_eval = false, .given = {"prediction_loss_only"}});
  EXPECT_FALSE(kept.prediction_loss_only);  // given on purpose: kept
}

// Python's Trainer(model=loom_model): build_job uses the given model object
// (its datasets still built on the plan), not a fresh one.
TEST(BuildJob, UsesAModelAlreadyBuilt) {
  JobArguments job = gpt2_from_scratch();
  job.train_rows = DataRows::texts(sample_texts());
  TrainingArguments args;
  Job first = build_job(job, args, {.want_eval = false});
  Job again = build_job(job, args, {.want_eval = false, .model = first.model});
  EXPECT_EQ(again.model.get(), first.model.get());
  EXPECT_EQ(ids_of(again.data.train.get()), ids_of(first.data.train.get()));
  Job fresh = build_job(job, args, {.want_eval = false});
  EXPECT_NE(fresh.model.get(), first.model.get());
}

}  // namespace
}  // namespace loom
