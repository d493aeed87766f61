// table_dataset (loom/dataset.h) and table_dataset_of (data/table_dataset.h): examples from
// CSV/TSV/JSON Lines with a chosen text column, optional second text column and optional label
// column. Label ids follow Hugging Face: integer labels are kept (digits beyond int64 are an
// error); string labels are mapped through their sorted unique values (datasets'
// class_encode_column and run_glue's `label_list.sort()`), or through the names the caller gives.
#include <algorithm>
#include <map>
#include <optional>

#include "core/parse_number.h"
#include "data/table_dataset.h"
#include "io/text_files.h"
#include "loom/dataset.h"
#include "loom/error.h"

namespace loom::data {
namespace {

using io::TableCell;
using Kind = io::TableCell::Kind;

// "file:line" for row r of the table (line 0: a JSON array element).
std::string where(const io::TextTable& t, size_t r) {
  if (t.lines[r] > 0) return t.source + ":" + std::to_string(t.lines[r]);
  return t.source + " (record " + std::to_string(r) + ")";
}

const TableCell& cell(const io::TextTable& t, size_t r, size_t c) {
  const TableCell& x = t.rows[r][c];
  LOOM_CHECK(x.kind != Kind::kMissing, "[dataset] ", where(t, r), ": missing column '",
             t.columns[c], "'");
  return x;
}

const std::string& text_cell(const io::TextTable& t, size_t r, size_t c) {
  const TableCell& x = cell(t, r, c);
  LOOM_CHECK(x.kind == Kind::kString, "[dataset] ", where(t, r), ": column '", t.columns[c],
             "' has type ", io::cell_kind_name(x.kind), " (", x.text, "), expected a string");
  return x.text;
}

// Decimal integer text, as pandas infers an int64 CSV column; nullopt for
// other text. Digits beyond int64 are an error, not a class name: pandas
// would not read them as int64 either, and a label id there is a mistake.
std::optional<int64_t> parse_integer(const io::TextTable& t, size_t r, const std::string& s) {
  NumberError why = NumberError::kNone;
  std::optional<int64_t> v = parse_decimal_int(s, &why);
  LOOM_CHECK(why != NumberError::kOverflow, "[dataset] ", where(t, r), ": label ", s,
             " is beyond int64 (class ids are 0, 1, ..., num_labels - 1)");
  return v;
}

bool all_integers(const io::TextTable& t, size_t c) {
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const TableCell& x = cell(t, r, c);
    bool integer_cell =
        x.kind == Kind::kInteger || (t.reader != "jsonl" && x.kind == Kind::kString);
    if (!integer_cell || !parse_integer(t, r, x.text).has_value()) return false;
  }
  return true;
}

// An integer label as it is (datasets keeps GLUE's -1 "no label" of test
// splits; a trainer checks ids against its num_labels).
int64_t class_id(const io::TextTable& t, size_t r, size_t c) {
  std::optional<int64_t> id = parse_integer(t, r, t.rows[r][c].text);
  LOOM_CHECK(id.has_value(), "[dataset] ", where(t, r), ": label '", t.rows[r][c].text,
             "' is not an integer");
  return *id;
}

struct Labels {
  std::vector<int64_t> ids;
  std::vector<std::string> names;
};

Labels integer_labels(const io::TextTable& t, size_t c, const std::vector<int64_t>& known) {
  Labels out;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    out.ids.push_back(class_id(t, r, c));
    const int64_t id = out.ids.back();
    if (known.empty() || id < 0 || std::binary_search(known.begin(), known.end(), id)) continue;
    std::string list;
    for (int64_t k : known) list += (list.empty() ? "" : ", ") + std::to_string(k);
    fail("[dataset] ", where(t, r), ": label ", id, " is not a label of the training split (", list,
         "): the classes come from the training data, as run_glue's label_list");
  }
  return out;
}

// An empty label cell (pandas reads it as NaN; run_glue's label_list would
// hold None) is an error, never a class "".
void check_no_empty_label(const io::TextTable& t, size_t c) {
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const TableCell& x = cell(t, r, c);
    LOOM_CHECK(!(x.kind == Kind::kString && x.text.empty()), "[dataset] ", where(t, r),
               ": the label in column '", t.columns[c], "' is empty");
  }
}

// Strings mapped through `names` (given, or the sorted unique strings).
Labels named_labels(const io::TextTable& t, size_t c, std::vector<std::string> names,
                    bool inferred) {
  Labels out;
  if (inferred) {
    for (size_t r = 0; r < t.rows.size(); ++r) {
      const TableCell& x = cell(t, r, c);
      LOOM_CHECK(x.kind == Kind::kString, "[dataset] ", where(t, r), ": label column '",
                 t.columns[c], "' mixes strings and ", io::cell_kind_name(x.kind), " values (",
                 x.text, ")");
      names.push_back(x.text);
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
  }
  std::map<std::string, int64_t> id_of;
  for (size_t i = 0; i < names.size(); ++i) id_of.emplace(names[i], static_cast<int64_t>(i));
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const TableCell& x = cell(t, r, c);
    if (x.kind == Kind::kInteger) {  // a JSON id given with label names
      int64_t id = class_id(t, r, c);
      LOOM_CHECK(id >= 0 && id < static_cast<int64_t>(names.size()), "[dataset] ", where(t, r),
                 ": label id ", id, " is outside [0, ", names.size(), ")");
      out.ids.push_back(id);
      continue;
    }
    LOOM_CHECK(x.kind == Kind::kString, "[dataset] ", where(t, r), ": label column '", t.columns[c],
               "' has type ", io::cell_kind_name(x.kind), " (", x.text,
               "), expected a class name or an integer id");
    auto it = id_of.find(x.text);
    LOOM_CHECK(it != id_of.end(), "[dataset] ", where(t, r), ": label '", x.text,
               "' is not one of the ", names.size(), " label names");
    out.ids.push_back(it->second);
  }
  out.names = std::move(names);
  return out;
}

Labels read_labels(const io::TextTable& t, const TableOptions& options) {
  size_t c = t.column(options.label_column);
  check_no_empty_label(t, c);
  if (!options.label_names.empty()) return named_labels(t, c, options.label_names, false);
  std::vector<int64_t> known = options.known_integer_labels;
  std::sort(known.begin(), known.end());
  if (all_integers(t, c)) return integer_labels(t, c, known);
  return named_labels(t, c, {}, true);
}

}  // namespace

InMemoryDataset table_dataset(const std::string& path, const TextEncoder& encode,
                              const TableOptions& options) {
  LOOM_CHECK(encode != nullptr, "[dataset] ", path, ": the encoder is empty");
  return table_dataset_of(io::read_text_table(path), encode, options);
}

InMemoryDataset table_dataset_of(const io::TextTable& table, const TextEncoder& encode,
                                 const TableOptions& options) {
  LOOM_CHECK(encode != nullptr, "[dataset] ", table.source, ": the encoder is empty");
  size_t text_col = table.column(options.text_column);
  std::optional<size_t> pair_col;
  if (!options.text_pair_column.empty()) pair_col = table.column(options.text_pair_column);
  Labels labels;
  if (!options.label_column.empty()) labels = read_labels(table, options);
  std::vector<Example> examples;
  examples.reserve(table.rows.size());
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const std::string& text = text_cell(table, r, text_col);
    const std::string* pair = pair_col ? &text_cell(table, r, *pair_col) : nullptr;
    Example e;
    try {
      e = encode(text, pair);
    } catch (const Error& err) {  // e.g. a Split regex past its match limit: name the row
      fail("[dataset] ", where(table, r), ": ", err.what());
    }
    truncate_example(e, options.max_length);
    if (!options.label_column.empty()) e.label = labels.ids[r];
    examples.push_back(std::move(e));
  }
  return InMemoryDataset(std::move(examples), std::move(labels.names));
}

InMemoryDataset table_dataset(const std::string& path, const TokenizeFn& tokenize,
                              const TableOptions& options) {
  return table_dataset(path, ids_encoder(tokenize), options);
}

}  // namespace loom::data
