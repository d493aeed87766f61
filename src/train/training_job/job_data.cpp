// The data side of a job (loom/job.h): reads the train and validation files
// (or rows handed over in memory), holds back the validation split, tokenizes
// (on all cores, encode_batch) and builds the task's examples — run_clm's
// group_texts blocks, run_mlm's blocks with special tokens, or run_glue's one
// example per row. Assumes io::read_text_lines / io::read_text_table
// (src/io/text_files.h) for the file formats, io::parse_json_lines for JSON
// rows, and data::table_dataset for labels.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "data/table_dataset.h"
#include "io/json_parse.h"
#include "io/text_files.h"
#include "loom/dist.h"
#include "loom/error.h"
#include "loom/job.h"
#include "loom/model_registry.h"
#include "loom/token_cache.h"

namespace loom {
namespace fs = std::filesystem;

namespace {

// The classification split as load_classification_data builds it: examples in
// memory, so that labels can be collected and remapped.
struct ClassificationData {
  std::shared_ptr<data::InMemoryDataset> train, eval;
  std::vector<std::string> label_names;
  int64_t num_labels = 0;
};

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool is_text_file(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  return ext == ".txt" || ext == ".text";
}

void check_file(const std::string& flag, const std::string& path) {
  LOOM_CHECK(fs::exists(path), "[data] --", flag, " '", path, "': no such file");
  LOOM_CHECK(fs::is_regular_file(path), "[data] --", flag, " '", path, "': not a regular file");
}

// Where a split's rows come from: a file, or rows in memory (not both).
struct Source {
  std::string flag;  // "train_file" or "validation_file"
  std::string path;  // empty for rows
  const DataRows* rows = nullptr;

  Source(const std::string& file_flag, const std::string& file, const std::optional<DataRows>& r)
      : flag(file_flag), path(file), rows(r ? &*r : nullptr) {
    const std::string rows_flag = flag.substr(0, flag.find('_')) + "_rows";
    LOOM_CHECK(path.empty() || !rows, "[data] give --", flag, " or ", rows_flag, ", not both");
  }
  bool empty() const { return path.empty() && !rows; }
  // Lines of text: a .txt file or text rows.
  bool text() const { return rows ? rows->kind == DataRows::Kind::text : is_text_file(path); }
  // The name in messages: the file, or "<train rows>".
  std::string name() const { return rows ? "<" + flag.substr(0, flag.find('_')) + " rows>" : path; }
  // "--train_file 'f.txt'" or "train_rows (12 rows)".
  std::string what() const {
    if (rows)
      return flag.substr(0, flag.find('_')) + "_rows (" + std::to_string(rows->rows.size()) +
             " rows)";
    return "--" + flag + " '" + path + "'";
  }
};

// JSON rows as a table (io::parse_json_lines): each row one object on its own
// line, so that a row's errors name it as line i + 1.
io::TextTable table_of_rows(const Source& src) {
  std::string text;
  for (size_t i = 0; i < src.rows->rows.size(); ++i) {
    const std::string& row = src.rows->rows[i];
    io::check_json_depth(row, "[data] " + src.name() + ":" + std::to_string(i + 1));
    nlohmann::json j = nlohmann::json::parse(row, nullptr, /*allow_exceptions=*/false);
    LOOM_CHECK(!j.is_discarded() && j.is_object(), "[data] ", src.name(), ":", i + 1,
               ": expected a JSON object, got '", row.substr(0, 80), "'");
    text += j.dump() + "\n";  // one line: dump() escapes line breaks inside strings
  }
  return io::parse_json_lines(text, src.name());
}

io::TextTable table_of(const Source& src) {
  return src.rows ? table_of_rows(src) : io::read_text_table(src.path);
}

// Rows held back for evaluation: round(n * pct / 100), as datasets' "train[:pct%]".
size_t split_rows(size_t n, int64_t pct) {
  return static_cast<size_t>(std::llround(static_cast<double>(n) * pct / 100.0));
}

// A data file and the file line of each of its texts (error messages).
struct TextLines {
  std::string path;
  std::vector<int64_t> lines;
};

// Options for tokenizing text that is then concatenated: no truncation, no padding.
EncodeOptions stream_options(const Tokenizer& tok, bool special_tokens) {
  EncodeOptions o = tok.default_options();
  o.add_special_tokens = special_tokens;
  o.truncation.reset();
  o.padding.reset();
  o.return_offsets = false;
  return o;
}

// A text the tokenizer refuses (a Split regex past its match limit): the error
// names the data file and line, found by encoding the texts one by one again.
[[noreturn]] void fail_at_text_line(const Tokenizer& tok, const std::vector<std::string>& texts,
                                    const EncodeOptions& opts, const TextLines& where,
                                    const Error& batch_error) {
  for (size_t i = 0; i < texts.size(); ++i) {
    try {
      tok.encode(texts[i], opts);
    } catch (const Error& e) {
      fail("[data] ", where.path, ":", i < where.lines.size() ? where.lines[i] : int64_t(i) + 1,
           ": ", e.what());
    }
  }
  throw batch_error;
}

std::vector<std::vector<int64_t>> tokenize_texts(const Tokenizer& tok,
                                                 const std::vector<std::string>& texts,
                                                 bool special_tokens, const TextLines& where) {
  std::vector<Encoding> enc;
  try {
    enc = tok.encode_batch(texts, stream_options(tok, special_tokens));
  } catch (const Error& e) {
    fail_at_text_line(tok, texts, stream_options(tok, special_tokens), where, e);
  }
  std::vector<std::vector<int64_t>> ids(enc.size());
  for (size_t i = 0; i < enc.size(); ++i) ids[i].assign(enc[i].ids.begin(), enc[i].ids.end());
  return ids;
}

// The texts of a file: its lines (.txt) or its text column (tables); `where`
// gets the file and each text's line (for error messages).
std::vector<std::string> read_texts(const Source& src, const JobArguments& job,
                                    bool keep_linebreaks, TextLines& where) {
  const std::string path = src.name();
  where.path = path;
  where.lines.clear();
  if (src.text()) {
    std::vector<std::string> lines =
        src.rows ? src.rows->rows : io::read_text_lines(src.path, keep_linebreaks);
    for (size_t i = 0; i < lines.size(); ++i) where.lines.push_back(static_cast<int64_t>(i) + 1);
    return lines;
  }
  io::TextTable table = table_of(src);
  size_t col = table.column(job.text_column);
  std::vector<std::string> texts;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const io::TableCell& c = table.rows[r][col];
    LOOM_CHECK(c.kind == io::TableCell::Kind::kString, "[data] ", path, ":", table.lines[r],
               ": column '", job.text_column, "' is ", io::cell_kind_name(c.kind),
               ", expected a string");
    texts.push_back(c.text);
    where.lines.push_back(table.lines[r]);
  }
  return texts;
}

// Language modelling: concatenated token blocks of `block` tokens.
std::shared_ptr<data::InMemoryDataset> lm_blocks(const Tokenizer& tok,
                                                 const std::vector<std::string>& texts,
                                                 int64_t block, bool mlm, const std::string& what,
                                                 const TextLines& where) {
  std::vector<std::vector<int64_t>> ids = tokenize_texts(tok, texts, mlm, where);
  std::vector<data::Example> ex = data::group_texts(ids, block);
  int64_t tokens = 0;
  for (const auto& v : ids) tokens += static_cast<int64_t>(v.size());
  LOOM_CHECK(!ex.empty(), "[data] ", what, " has ", tokens, " tokens, fewer than one block of ",
             block, " (lower --", mlm ? "max_seq_length" : "block_size", ")");
  if (mlm)
    for (auto& e : ex) e.labels.clear();  // the masked-LM collator makes the labels
  return std::make_shared<data::InMemoryDataset>(std::move(ex));
}

int64_t lm_block_size(const JobArguments& job, const ModelPlan& plan) {
  const bool mlm = plan.task == "masked-lm";
  const std::optional<int64_t>& given = mlm ? job.max_seq_length : job.block_size;
  int64_t block = given.value_or(std::min<int64_t>(mlm ? 512 : 1024, plan.max_positions));
  LOOM_CHECK(block <= plan.max_positions, "[data] --", mlm ? "max_seq_length" : "block_size", " ",
             block, " is longer than the model's ", plan.max_positions, " positions");
  return block;
}

// Keeps the first `n` examples (datasets' select(range(n))).
void truncate(std::shared_ptr<data::InMemoryDataset>& ds, const std::optional<int64_t>& n) {
  if (!ds || !n || *n >= ds->size()) return;
  const auto& ex = ds->examples();
  ds = std::make_shared<data::InMemoryDataset>(std::vector(ex.begin(), ex.begin() + *n),
                                               ds->label_names());
}

// One split of a language-modelling .txt file, streamed through the token
// cache (loom/token_cache.h): lines after (or, `head`, within) the first
// `pct` %, blocks read from the cached token file. Null for an empty head.
std::shared_ptr<const data::Dataset> streamed_lm_blocks(
    const Tokenizer& tok, const JobArguments& job, const std::string& path, int64_t pct, bool head,
    int64_t block, bool mlm, bool keep_breaks, const std::optional<int64_t>& max,
    const std::string& what) {
  const EncodeOptions opts = stream_options(tok, mlm);
  auto encode = [&tok, &opts](const std::vector<std::string>& lines) {
    std::vector<Encoding> enc = tok.encode_batch(lines, opts);
    std::vector<std::vector<int32_t>> ids(enc.size());
    for (size_t i = 0; i < enc.size(); ++i) ids[i] = std::move(enc[i].ids);
    return ids;
  };
  const std::string tok_dir =
      job.tokenizer_name.empty() ? job.model_name_or_path : job.tokenizer_name;
  data::TokenCacheKey key{.tokenizer = data::tokenizer_fingerprint(tok_dir),
                          .flags = std::string("special_tokens=") + (mlm ? "1" : "0")};
  data::TokenFileSource src{
      .path = path, .keep_linebreaks = keep_breaks, .skip_percent = pct, .head_only = head};
  data::TokenCacheReport r;
  auto file = data::tokenize_to_cache(src, encode, key, {}, &r);
  if (dist::rank() != 0) {
    // Data parallel: every rank tokenizes (or reads the cache); rank 0 says so.
  } else if (r.hit) {
    std::printf("[data] %s: token cache hit %s (%lld lines, %lld tokens, %.2f s)\n", what.c_str(),
                r.cache_path.c_str(), static_cast<long long>(r.lines),
                static_cast<long long>(r.tokens), r.seconds);
  } else {
    // "missing": the first run for this file and tokenizer, nothing to say.
    const std::string why = r.rebuilt == "missing" ? "" : " (rebuilt: " + r.rebuilt + ")";
    std::printf(
        "[data] %s: tokenized %lld lines (%.1f MB) into %lld tokens in %.1f s (%.1f MB/s), "
        "cached in %s%s\n",
        what.c_str(), static_cast<long long>(r.lines), r.text_bytes / 1e6,
        static_cast<long long>(r.tokens), r.seconds, r.text_bytes / 1e6 / std::max(r.seconds, 1e-9),
        r.cache_path.c_str(), why.c_str());
  }
  std::fflush(stdout);
  if (head && r.lines == 0) return nullptr;
  auto ds = std::make_shared<data::TokenBlockDataset>(file, block, !mlm, max.value_or(-1));
  LOOM_CHECK(file->size() >= block, "[data] ", what, " has ", file->size(),
             " tokens, fewer than one block of ", block, " (lower --",
             mlm ? "max_seq_length" : "block_size", ")");
  return ds;
}

// causal-lm / masked-lm: train and eval blocks. A .txt file is streamed
// through the token cache; a table's text column and rows in memory are
// tokenized in memory.
void load_lm_data(JobData& out, const JobArguments& job, const ModelPlan& plan,
                  const Tokenizer& tok, const Source& train_src, const Source& eval_src,
                  bool want_train, bool want_eval) {
  const bool mlm = plan.task == "masked-lm";
  const int64_t block = lm_block_size(job, plan);
  const bool keep_breaks = !mlm && job.keep_linebreaks;
  const bool split = want_eval && eval_src.empty();
  const std::string split_what = "the validation split of '" + train_src.name() + "' (" +
                                 std::to_string(job.validation_split_percentage) + "%)";
  const std::string train_what = train_src.what();
  const int64_t pct = split ? job.validation_split_percentage : 0;
  const bool streamed = train_src.text() && !train_src.rows;
  if (streamed && (want_train || split)) {
    if (split)
      out.eval = streamed_lm_blocks(tok, job, train_src.path, pct, true, block, mlm, keep_breaks,
                                    job.max_eval_samples, split_what);
    if (want_train)
      out.train = streamed_lm_blocks(tok, job, train_src.path, pct, false, block, mlm, keep_breaks,
                                     job.max_train_samples, train_what);
  } else if (want_train || split) {
    TextLines where;
    std::vector<std::string> texts = read_texts(train_src, job, keep_breaks, where);
    size_t held = split ? split_rows(texts.size(), job.validation_split_percentage) : 0;
    if (split && held > 0) {
      std::vector<std::string> head(texts.begin(), texts.begin() + static_cast<int64_t>(held));
      auto eval = lm_blocks(tok, head, block, mlm, split_what, where);
      truncate(eval, job.max_eval_samples);
      out.eval = eval;
    }
    if (want_train) {
      texts.erase(texts.begin(), texts.begin() + static_cast<int64_t>(held));
      where.lines.erase(where.lines.begin(), where.lines.begin() + static_cast<int64_t>(held));
      auto train = lm_blocks(tok, texts, block, mlm, train_what, where);
      truncate(train, job.max_train_samples);
      out.train = train;
    }
  }
  if (want_eval && !eval_src.empty()) {
    const std::string what = eval_src.what();
    if (eval_src.text() && !eval_src.rows) {
      out.eval = streamed_lm_blocks(tok, job, eval_src.path, 0, false, block, mlm, keep_breaks,
                                    job.max_eval_samples, what);
    } else {
      TextLines where;
      std::vector<std::string> texts = read_texts(eval_src, job, keep_breaks, where);
      auto eval = lm_blocks(tok, texts, block, mlm, what, where);
      truncate(eval, job.max_eval_samples);
      out.eval = eval;
    }
  }
}

// text-classification: one example per row, [CLS] text [SEP] truncated to max_seq_length.
data::InMemoryDataset classification_rows(const Tokenizer& tok, const JobArguments& job,
                                          const Source& src,
                                          const std::vector<std::string>& label_names,
                                          const std::vector<int64_t>& known_labels = {}) {
  LOOM_CHECK(!src.text(), "[data] ",
             src.rows ? src.what() : "--" + src.flag + " '" + src.path + "'",
             ": text-classification needs a .csv, .tsv or .jsonl file with columns '",
             job.text_column, "' and '", job.label_column, "'");
  EncodeOptions opts = tok.default_options();
  opts.padding.reset();
  opts.truncation = TruncationOptions{.max_length = job.max_seq_length.value_or(128)};
  auto encode = [&](const std::string& text, const std::string* pair) {
    Encoding e = pair ? tok.encode_pair(text, *pair, opts) : tok.encode(text, opts);
    data::Example ex;
    ex.input_ids.assign(e.ids.begin(), e.ids.end());
    ex.token_type_ids.assign(e.type_ids.begin(), e.type_ids.end());
    ex.attention_mask.assign(e.attention_mask.begin(), e.attention_mask.end());
    return ex;
  };
  const data::TableOptions options{.text_column = job.text_column,
                                   .text_pair_column = job.text_pair_column,
                                   .label_column = job.label_column,
                                   .label_names = label_names,
                                   .known_integer_labels = known_labels};
  if (src.rows) return data::table_dataset_of(table_of_rows(src), encode, options);
  return data::table_dataset(src.path, encode, options);
}

void collect_labels(const data::InMemoryDataset* ds, std::set<int64_t>& ids) {
  if (!ds) return;
  for (const auto& e : ds->examples())
    if (e.label) ids.insert(*e.label);
}

// Class names that are integers written by remap_integer_labels ("1", "5"): the
// labels of a classifier fine-tuned on integer labels that were not 0..n-1.
bool integer_label_names(const std::vector<std::string>& names) {
  if (names.empty()) return false;
  for (const std::string& n : names) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
    if (ec != std::errc() || end != n.data() + n.size() || std::to_string(v) != n) return false;
  }
  return true;
}

// Rewrites every non-negative label of `ds` through `id_of` (raw label -> class id).
void map_labels(std::shared_ptr<data::InMemoryDataset>& ds, const std::map<int64_t, int64_t>& id_of,
                const std::vector<std::string>& names) {
  if (!ds) return;
  std::vector<data::Example> ex = ds->examples();
  for (data::Example& e : ex) {
    if (!e.label || *e.label < 0) continue;
    auto it = id_of.find(*e.label);
    LOOM_CHECK(it != id_of.end(), "[data] label ", *e.label,
               " is not one of the model's integer labels (its id2label: ", join_names(names), ")");
    e.label = it->second;
  }
  ds = std::make_shared<data::InMemoryDataset>(std::move(ex), names);
}

// Integer labels as run_glue's label_to_id: the sorted distinct labels become
// class ids 0..n-1 and their decimal text the class names (config id2label /
// label2id), so {1, 2} or {0, 1, 5} train as 2 or 3 classes. Labels already
// 0..n-1 are kept as they are (names stay empty: LABEL_i). `given` are the
// integer names of a fine-tuned classifier, which fix the mapping instead.
// Negative labels (GLUE's -1 "no label") are left for check_label_range.
void remap_integer_labels(ClassificationData& out, const std::vector<std::string>& given,
                          std::vector<std::string>& names) {
  std::map<int64_t, int64_t> id_of;
  if (!given.empty()) {
    for (size_t i = 0; i < given.size(); ++i) id_of[std::stoll(given[i])] = static_cast<int64_t>(i);
  } else {
    std::set<int64_t> ids;
    for (auto* ds : {out.train.get(), out.eval.get()}) {
      if (!ds) continue;
      for (const auto& e : ds->examples())
        if (e.label && *e.label >= 0) ids.insert(*e.label);
    }
    if (ids.empty() || *ids.rbegin() == static_cast<int64_t>(ids.size()) - 1) return;  // 0..n-1
    for (int64_t id : ids) id_of.emplace(id, static_cast<int64_t>(id_of.size()));
  }
  names.clear();
  for (const auto& [raw, id] : id_of) names.push_back(std::to_string(raw));
  map_labels(out.train, id_of, names);
  map_labels(out.eval, id_of, names);
}

// Every label id of `ds` must be a class of the model: in [0, num_labels).
void check_label_range(const data::InMemoryDataset* ds, int64_t num_labels,
                       const std::string& what) {
  if (!ds) return;
  for (const auto& e : ds->examples())
    LOOM_CHECK(!e.label || (*e.label >= 0 && *e.label < num_labels), "[data] ", what, ": label ",
               *e.label, " is outside [0, ", num_labels,
               "): integer labels become class ids 0..n-1 in sorted order (run_glue's "
               "label_to_id), and a negative label (GLUE's -1 'no label') is not a class");
}

void load_classification_data(ClassificationData& out, const JobArguments& job,
                              const ModelPlan& plan, const Tokenizer& tok, const Source& train_src,
                              const Source& eval_src, bool want_train, bool want_eval) {
  const bool split = want_eval && eval_src.empty();
  // A classifier fine-tuned on remapped integer labels reads its files' integers raw;
  // remap_integer_labels maps them through its names.
  const bool integer_names = integer_label_names(plan.label_names);
  std::vector<std::string> names = integer_names ? std::vector<std::string>{} : plan.label_names;
  if (want_train || split) {
    data::InMemoryDataset all = classification_rows(tok, job, train_src, names);
    names = all.label_names();
    const auto& ex = all.examples();
    size_t held = split ? split_rows(ex.size(), job.validation_split_percentage) : 0;
    auto first = ex.begin() + static_cast<int64_t>(held);
    if (held > 0)
      out.eval = std::make_shared<data::InMemoryDataset>(std::vector(ex.begin(), first), names);
    if (want_train)
      out.train = std::make_shared<data::InMemoryDataset>(std::vector(first, ex.end()), names);
  }
  if (want_eval && !eval_src.empty()) {
    // run_glue's label_list is the training split's: a validation label outside it is an
    // error (it used to add a class: a 3-class head for train labels {0, 1}).
    std::set<int64_t> train_ids;
    if (names.empty()) collect_labels(out.train.get(), train_ids);
    // A negative training label is the training file's own error (check_label_range, below).
    if (!train_ids.empty() && *train_ids.begin() < 0) train_ids.clear();
    out.eval = std::make_shared<data::InMemoryDataset>(classification_rows(
        tok, job, eval_src, names, std::vector<int64_t>(train_ids.begin(), train_ids.end())));
    if (names.empty()) names = out.eval->label_names();
  }
  if (names.empty()) {
    remap_integer_labels(out, integer_names ? plan.label_names : std::vector<std::string>{}, names);
  }
  out.label_names = names;
  // num_labels as run_glue: the number of distinct labels (of every file, so
  // a class seen only in validation still has a logit), or the names'
  // count, or a fine-tuned classifier's num_labels; every id (train AND
  // validation) is checked now, before any weight is allocated for the head.
  std::set<int64_t> ids;
  collect_labels(out.train.get(), ids);
  collect_labels(out.eval.get(), ids);
  ids.erase(ids.begin(), ids.lower_bound(0));  // negative labels are errors, not classes
  out.num_labels =
      std::max<int64_t>(static_cast<int64_t>(names.size()), static_cast<int64_t>(ids.size()));
  out.num_labels = std::max(out.num_labels, plan.num_labels);
  LOOM_CHECK(out.num_labels >= 1, "[data] no labels found in column '", job.label_column, "'");
  if (want_train && out.num_labels == 1 && dist::rank() == 0)
    std::fprintf(stderr,
                 "loom: warning: [data] --train_file '%s' has a single class in column '%s': "
                 "a 1-output classifier learns nothing (its loss is 0 from the start)\n",
                 train_src.name().c_str(), job.label_column.c_str());
  check_label_range(out.train.get(), out.num_labels, train_src.what());
  check_label_range(
      out.eval.get(), out.num_labels,
      eval_src.empty() ? "the validation split of '" + train_src.name() + "'" : eval_src.what());
}

}  // namespace

JobData load_job_data(const JobArguments& job, const ModelPlan& plan, const Tokenizer& tokenizer,
                      bool want_train, bool want_eval) {
  if (plan.task == kTaskSft) return load_sft_data(job, plan, tokenizer, want_train, want_eval);
  LOOM_CHECK(job.dataset_name.empty(), "[data] --dataset_name '", job.dataset_name,
             "': read by --task sft only; for task ", plan.task,
             " give the dataset's files with --train_file / --validation_file");
  const Source train_src("train_file", job.train_file, job.train_rows);
  const Source eval_src("validation_file", job.validation_file, job.validation_rows);
  const bool split = want_eval && eval_src.empty();
  if (want_train || split) {
    LOOM_CHECK(!train_src.empty(), "[data] --train_file is required",
               want_train ? "" : " (or give --validation_file)");
    if (!train_src.rows) check_file("train_file", job.train_file);
  }
  if (!job.validation_file.empty()) check_file("validation_file", job.validation_file);
  LOOM_CHECK(!split || job.validation_split_percentage > 0,
             "[data] evaluation needs --validation_file or --validation_split_percentage > 0");
  // Padding lengths above the model's positions could only fail later, after
  // allocating batches of that length.
  LOOM_CHECK(job.pad_to_multiple_of <= plan.max_positions, "[data] --pad_to_multiple_of ",
             job.pad_to_multiple_of, " is longer than the model's ", plan.max_positions,
             " positions");
  if (plan.task == "text-classification" && job.max_seq_length)
    LOOM_CHECK(*job.max_seq_length <= plan.max_positions, "[data] --max_seq_length ",
               *job.max_seq_length, " is longer than the model's ", plan.max_positions,
               " positions");
  JobData out;
  if (plan.task == "text-classification") {
    ClassificationData c;
    load_classification_data(c, job, plan, tokenizer, train_src, eval_src, want_train, want_eval);
    truncate(c.train, job.max_train_samples);
    truncate(c.eval, job.max_eval_samples);
    out = {c.train, c.eval, c.label_names, c.num_labels};
  } else {
    load_lm_data(out, job, plan, tokenizer, train_src, eval_src, want_train, want_eval);
  }
  LOOM_CHECK(!want_train || out.train->size() > 0, "[data] ", train_src.what(),
             " has no training example left after the validation split");
  LOOM_CHECK(!want_eval || (out.eval && out.eval->size() > 0),
             "[data] no evaluation example (the validation split of ",
             job.validation_split_percentage, "% of '", train_src.name(), "' is empty)");
  return out;
}

}  // namespace loom
