// Task sft's data (load_sft_data, loom/job.h): reads the train / validation
// rows (.jsonl, .json, .parquet files, a dataset folder's split files,
// --dataset_name from the hub cache; JSON rows or texts in memory), holds back the validation split
// as the other tasks do, loads the chat template when the rows are conversational, and hands the
// rows to data::sft_examples (src/data/sft/), which tokenizes them as TRL's SFTTrainer. Prints one
// line per split: rows, schema, truncated, dropped. With --packing the examples are then packed
// (data/sft/sft_packing.h). Assumes plan.max_positions bounds every example.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "data/sft/sft_examples.h"
#include "data/sft/sft_files.h"
#include "data/sft/sft_packing.h"
#include "io/json_parse.h"
#include "loom/dist.h"
#include "loom/error.h"
#include "loom/hub.h"
#include "loom/job.h"

namespace loom {
namespace fs = std::filesystem;

namespace {

using OJson = nlohmann::ordered_json;

// A split's rows: from a file, the split's files of a dataset folder
// (--train_file DIR, --dataset_name), or rows in memory.
struct SftSource {
  std::string flag;  // "train_file", "validation_file" or "dataset_name"
  std::string path;  // a file or a dataset folder
  const DataRows* rows = nullptr;
  std::string split;               // of a dataset folder: "train", "test", ...
  std::string label;               // --dataset_name's value, for messages
  std::vector<std::string> files;  // resolved: the split's files
  bool empty() const { return path.empty() && !rows; }
  std::string name() const { return rows ? "<" + flag.substr(0, flag.find('_')) + " rows>" : path; }
  std::string what() const {
    if (rows) return name();
    if (!label.empty()) return "--" + flag + " '" + label + "' (split " + split + ")";
    return "--" + flag + " '" + path + "'";
  }
};

void check_sft_arguments(const JobArguments& job) {
  LOOM_CHECK(job.packing_strategy == "bfd" || job.packing_strategy == "wrapped",
             "[sft] --packing_strategy: expected bfd or wrapped, got '", job.packing_strategy, "'");
  LOOM_CHECK(!job.packing || job.max_length, "[sft] --packing true needs --max_length N (the ",
             "packed rows' length), got --max_length none");
  LOOM_CHECK(!job.max_length || *job.max_length > 0,
             "[sft] --max_length: expected a positive "
             "integer or none, got ",
             job.max_length.value_or(0));
}

// The files of a source: itself, or a dataset folder's split files.
std::vector<std::string> source_files(const SftSource& src, const JobArguments& job) {
  if (!src.files.empty()) return src.files;
  std::error_code ec;
  if (!fs::is_directory(src.path, ec)) return {src.path};
  const std::string split =
      src.split.empty() ? (src.flag == "train_file" ? "train" : "validation") : src.split;
  std::vector<std::string> files =
      dataset_split_files(src.path, split, job.dataset_config, "[sft] " + src.what());
  LOOM_CHECK(!files.empty(), "[sft] ", src.what(), ": no files of split '", split, "' in ",
             src.path, " (datasets' conventions: data/", split, "-00000-of-00001.parquet, ", split,
             ".jsonl, ", split, "/*.json, ...)");
  return files;
}

std::vector<data::SftRow> rows_of_files(const SftSource& src, const JobArguments& job) {
  std::vector<data::SftRow> out;
  const std::vector<std::string> files = source_files(src, job);
  for (const std::string& f : files) {
    const std::string what = files.size() == 1 && f == src.path ? src.what() : "'" + f + "'";
    std::vector<data::SftRow> rows = data::read_sft_rows(f, what, job.dataset_text_field);
    out.insert(out.end(), std::make_move_iterator(rows.begin()),
               std::make_move_iterator(rows.end()));
  }
  return out;
}

// Text rows become language-modeling rows {dataset_text_field: text}.
std::vector<data::SftRow> rows_of(const SftSource& src, const JobArguments& job) {
  if (!src.rows) return rows_of_files(src, job);
  std::vector<data::SftRow> out;
  for (size_t i = 0; i < src.rows->rows.size(); ++i) {
    const std::string where = src.name() + ":" + std::to_string(i + 1);
    const std::string& row = src.rows->rows[i];
    if (src.rows->kind == DataRows::Kind::text) {
      OJson v = OJson::object();
      v[job.dataset_text_field] = row;
      out.push_back({std::move(v), where});
    } else {
      out.push_back({io::parse_json<OJson>(row, "[sft] " + where), where});
    }
  }
  return out;
}

bool conversational(data::SftSchema s) {
  return s == data::SftSchema::kMessages || s == data::SftSchema::kConversationalPromptCompletion;
}

// The template of the tokenizer folder or --chat_template_path, checked for
// what --assistant_only_loss needs.
ChatTemplate load_template(const JobArguments& job) {
  const std::string dir = job.tokenizer_name.empty() ? job.model_name_or_path : job.tokenizer_name;
  ChatTemplate t = ChatTemplate::from_pretrained(dir, job.chat_template_path);
  LOOM_CHECK(!job.assistant_only_loss || t.has_generation_markers(),
             "[sft] --assistant_only_loss: ", "the chat template ", t.name(),
             " has no {% generation %} ... {% endgeneration %} block marking the assistant's "
             "tokens; give --chat_template_path FILE.jinja with one (TRL raises the same for "
             "templates it has no training version of)");
  return t;
}

data::SftOptions sft_options(const JobArguments& job, const Tokenizer& tok) {
  data::SftOptions o;
  o.dataset_text_field = job.dataset_text_field;
  o.completion_only_loss = job.completion_only_loss;
  o.assistant_only_loss = job.assistant_only_loss;
  o.max_length = job.max_length;
  if (!job.eos_token.empty()) {
    LOOM_CHECK(tok.token_to_id(job.eos_token).has_value(), "[sft] --eos_token '", job.eos_token,
               "' is not in the tokenizer's vocabulary");
    o.eos_token = job.eos_token;
    o.template_eos_token = job.eos_token;
  } else if (auto id = tok.eos_token_id()) {
    o.eos_token = tok.id_to_token(*id).value_or("");
  }
  return o;
}

std::shared_ptr<data::InMemoryDataset> split_examples(
    const std::vector<data::SftRow>& rows, const Tokenizer& tok, const ChatTemplate* tmpl,
    const data::SftOptions& o, const ModelPlan& plan, const std::string& what) {
  data::SftExamples ex = data::sft_examples(rows, tok, tmpl, o);
  for (size_t i = 0; i < ex.examples.size(); ++i)
    LOOM_CHECK(static_cast<int64_t>(ex.examples[i].input_ids.size()) <= plan.max_positions,
               "[sft] ", what, ": an example has ", ex.examples[i].input_ids.size(),
               " tokens, more than the model's ", plan.max_positions,
               " positions (give --max_length ", plan.max_positions, " or less)");
  if (dist::rank() == 0) {
    std::string cut = o.max_length
                          ? std::to_string(ex.truncated) + " longer than --max_length " +
                                std::to_string(*o.max_length) + " truncated (keep_start), " +
                                std::to_string(ex.dropped) + " left without a label token dropped"
                          : "no truncation (--max_length none)";
    std::printf("[sft] %s: %zu rows, %s; %s\n", what.c_str(), rows.size(),
                data::sft_schema_name(ex.schema), cut.c_str());
  }
  return std::make_shared<data::InMemoryDataset>(std::move(ex.examples));
}

// --packing: the examples packed into rows of max_length tokens (TRL packs
// the train and eval splits alike), with one line saying how full they are.
void pack_split(std::shared_ptr<data::InMemoryDataset>& ds, const JobArguments& job,
                const std::string& what) {
  if (!ds || !job.packing) return;
  const auto& ex = ds->examples();
  const int64_t len = *job.max_length;
  std::vector<data::Example> rows =
      job.packing_strategy == "bfd" ? data::pack_bfd(ex, len) : data::pack_wrapped(ex, len);
  int64_t tokens = 0;
  for (const auto& r : rows) tokens += static_cast<int64_t>(r.input_ids.size());
  if (dist::rank() == 0)
    std::printf("[sft] %s: %zu sequences packed (%s) into %zu rows of %lld tokens, %.1f%% full\n",
                what.c_str(), ex.size(), job.packing_strategy.c_str(), rows.size(),
                static_cast<long long>(len),
                100.0 * static_cast<double>(tokens) /
                    static_cast<double>(std::max<size_t>(rows.size(), 1) * len));
  ds = std::make_shared<data::InMemoryDataset>(std::move(rows));
}

void keep_first(std::shared_ptr<data::InMemoryDataset>& ds, const std::optional<int64_t>& n) {
  if (!ds || !n || *n >= ds->size()) return;
  const auto& ex = ds->examples();
  ds = std::make_shared<data::InMemoryDataset>(std::vector(ex.begin(), ex.begin() + *n));
}

// --dataset_name: the train split, and (when evaluating without
// --validation_file) the test split's files if the dataset has them; else
// the validation split is held back from train as for --train_file.
void dataset_sources(const JobArguments& job, SftSource& train, SftSource& eval, bool want_eval) {
  LOOM_CHECK(train.empty(),
             "[sft] give --dataset_name or --train_file, not both (got --train_file '",
             train.name(), "' and --dataset_name '", job.dataset_name, "')");
  const std::string dir = resolve_dataset_dir(job.dataset_name, "main", "[sft] --dataset_name");
  train = SftSource{"dataset_name", dir, nullptr, job.dataset_train_split, job.dataset_name, {}};
  train.files = source_files(train, job);
  if (!want_eval || !eval.empty()) return;
  SftSource test{"dataset_name", dir, nullptr, job.dataset_test_split, job.dataset_name, {}};
  std::vector<std::string> files =
      dataset_split_files(dir, test.split, job.dataset_config, "[sft] " + test.what());
  if (files.empty()) return;
  test.files = std::move(files);
  eval = std::move(test);
}

}  // namespace

std::vector<int64_t> sft_length_buckets(int64_t max_length) {
  std::vector<int64_t> out;
  for (int64_t b = 16; b < max_length; b *= 2) out.push_back(b);
  out.push_back(max_length);
  return out;
}

JobData load_sft_data(const JobArguments& job, const ModelPlan& plan, const Tokenizer& tok,
                      bool want_train, bool want_eval) {
  check_sft_arguments(job);
  LOOM_CHECK(!job.max_length || *job.max_length <= plan.max_positions, "[sft] --max_length ",
             job.max_length.value_or(0), " is longer than the model's ", plan.max_positions,
             " positions");
  SftSource train{
      "train_file", job.train_file, job.train_rows ? &*job.train_rows : nullptr, "", "", {}};
  SftSource eval{"validation_file",
                 job.validation_file,
                 job.validation_rows ? &*job.validation_rows : nullptr,
                 "",
                 "",
                 {}};
  if (!job.dataset_name.empty()) dataset_sources(job, train, eval, want_eval);
  const bool split = want_eval && eval.empty();
  std::vector<data::SftRow> train_rows, eval_rows;
  if (want_train || split) {
    LOOM_CHECK(!train.empty(), "[data] --train_file (or --dataset_name) is required");
    train_rows = rows_of(train, job);
    LOOM_CHECK(!train_rows.empty(), "[sft] ", train.what(), " has no rows");
  }
  if (want_eval && !eval.empty()) eval_rows = rows_of(eval, job);
  if (split) {  // the first pct% of the training rows, as datasets' train[:pct%]
    const auto held = static_cast<int64_t>(std::llround(static_cast<double>(train_rows.size()) *
                                                        job.validation_split_percentage / 100.0));
    eval_rows.assign(train_rows.begin(), train_rows.begin() + held);
    train_rows.erase(train_rows.begin(), train_rows.begin() + held);
  }
  const data::SftOptions options = sft_options(job, tok);
  std::optional<ChatTemplate> tmpl;
  for (const auto* rows : {&train_rows, &eval_rows}) {
    if (!tmpl && !rows->empty() &&
        conversational(data::sft_schema(rows->front(), options.dataset_text_field)))
      tmpl = load_template(job);
  }
  const ChatTemplate* t = tmpl ? &*tmpl : nullptr;
  JobData out;
  std::shared_ptr<data::InMemoryDataset> tr, ev;
  if (want_train) tr = split_examples(train_rows, tok, t, options, plan, train.what());
  if (want_eval && !eval_rows.empty())
    ev = split_examples(eval_rows, tok, t, options, plan,
                        split ? "the validation split of " + train.what() : eval.what());
  keep_first(tr, job.max_train_samples);
  keep_first(ev, job.max_eval_samples);
  pack_split(tr, job, train.what());
  pack_split(ev, job, split ? "the validation split of " + train.what() : eval.what());
  out.train = tr;
  out.eval = ev;
  return out;
}

}  // namespace loom
