// Batch, InMemoryDataset and the text-file datasets of loom/dataset.h: line by
// line (run_mlm --line_by_line) and concatenated blocks (run_clm's
// group_texts). Tables (CSV/TSV/JSON Lines) are in dataset_table.cpp.
// Assumes the tokenize/encode callbacks are deterministic; each text is
// encoded exactly once, at construction.
#include <sstream>

#include "io/text_files.h"
#include "loom/dataset.h"
#include "loom/error.h"

namespace loom::data {
namespace {

void check_field(const std::vector<int64_t>& field, const char* name, const Example& e,
                 size_t index) {
  LOOM_CHECK(field.empty() || field.size() == e.input_ids.size(), "[dataset] example ", index, ": ",
             name, " has ", field.size(), " entries, input_ids ", e.input_ids.size());
}

bool is_blank(const std::string& line) {
  return line.find_first_not_of(" \t\n\r\v\f") == std::string::npos;
}

}  // namespace

// ---- Batch ----

const Tensor& Batch::at(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) return it->second;
  std::ostringstream names;
  for (const auto& [n, t] : tensors_) names << (names.tellp() > 0 ? ", " : "") << n;
  fail("[batch] no tensor '", name, "' (has: ", names.str(), ")");
}

int64_t Batch::size() const {
  for (const auto& [name, t] : tensors_)
    if (t.defined() && t.dim() > 0) return t.size(0);
  return 0;
}

Batch Batch::to(const Device& device) const {
  Batch out;
  for (const auto& [name, t] : tensors_) out.set(name, t.defined() ? t.to(device) : t);
  return out;
}

// ---- InMemoryDataset ----

InMemoryDataset::InMemoryDataset(std::vector<Example> examples,
                                 std::vector<std::string> label_names)
    : examples_(std::move(examples)), label_names_(std::move(label_names)) {
  for (size_t i = 0; i < examples_.size(); ++i) {
    const Example& e = examples_[i];
    check_field(e.attention_mask, "attention_mask", e, i);
    check_field(e.token_type_ids, "token_type_ids", e, i);
    check_field(e.special_tokens_mask, "special_tokens_mask", e, i);
    check_field(e.labels, "labels", e, i);
  }
}

const Example& InMemoryDataset::at(int64_t index) const {
  LOOM_CHECK(index >= 0 && index < size(), "[dataset] index ", index, " out of range [0, ", size(),
             ")");
  return examples_[static_cast<size_t>(index)];
}

void truncate_example(Example& e, int64_t max_length) {
  if (max_length <= 0 || static_cast<int64_t>(e.input_ids.size()) <= max_length) return;
  for (auto* f :
       {&e.input_ids, &e.attention_mask, &e.token_type_ids, &e.special_tokens_mask, &e.labels}) {
    if (!f->empty()) f->resize(static_cast<size_t>(max_length));
  }
}

// ---- encoders ----

TextEncoder ids_encoder(TokenizeFn tokenize) {
  LOOM_CHECK(tokenize != nullptr, "[dataset] the tokenize function is empty");
  return [tokenize = std::move(tokenize)](const std::string& text, const std::string* pair) {
    LOOM_CHECK(pair == nullptr,
               "[dataset] a plain tokenize function cannot encode a text "
               "pair; pass a TextEncoder that joins the two texts");
    Example e;
    e.input_ids = tokenize(text);
    return e;
  };
}

// ---- text files ----

InMemoryDataset text_lines_dataset(const std::string& path, const TextEncoder& encode,
                                   const TextLinesOptions& options) {
  LOOM_CHECK(encode != nullptr, "[dataset] ", path, ": the encoder is empty");
  std::vector<Example> examples;
  for (const std::string& line : io::read_text_lines(path, options.keep_linebreaks)) {
    if (options.skip_blank_lines && is_blank(line)) continue;
    Example e = encode(line, nullptr);
    truncate_example(e, options.max_length);
    examples.push_back(std::move(e));
  }
  return InMemoryDataset(std::move(examples));
}

InMemoryDataset text_lines_dataset(const std::string& path, const TokenizeFn& tokenize,
                                   const TextLinesOptions& options) {
  return text_lines_dataset(path, ids_encoder(tokenize), options);
}

std::vector<Example> group_texts(const std::vector<std::vector<int64_t>>& tokenized,
                                 int64_t block_size, int64_t group_size) {
  LOOM_CHECK(block_size > 0, "[dataset] block_size must be > 0, got ", block_size);
  LOOM_CHECK(group_size >= 0, "[dataset] group_size must be >= 0, got ", group_size);
  const size_t group = group_size > 0 ? static_cast<size_t>(group_size) : tokenized.size();
  const size_t block = static_cast<size_t>(block_size);
  std::vector<Example> out;
  std::vector<int64_t> joined;
  for (size_t start = 0; start < tokenized.size(); start += group) {
    joined.clear();
    size_t stop = std::min(tokenized.size(), start + group);
    for (size_t i = start; i < stop; ++i)
      joined.insert(joined.end(), tokenized[i].begin(), tokenized[i].end());
    size_t usable = joined.size() / block * block;  // the remainder is dropped
    for (size_t b = 0; b < usable; b += block) {
      Example e;
      e.input_ids.assign(joined.begin() + static_cast<std::ptrdiff_t>(b),
                         joined.begin() + static_cast<std::ptrdiff_t>(b + block));
      e.labels = e.input_ids;
      out.push_back(std::move(e));
    }
  }
  return out;
}

InMemoryDataset text_blocks_dataset(const std::string& path, const TokenizeFn& tokenize,
                                    const TextBlocksOptions& options) {
  LOOM_CHECK(tokenize != nullptr, "[dataset] ", path, ": the tokenize function is empty");
  LOOM_CHECK(options.block_size > 0, "[dataset] ", path, ": block_size must be > 0, got ",
             options.block_size);
  std::vector<std::vector<int64_t>> tokenized;
  for (const std::string& line : io::read_text_lines(path, options.keep_linebreaks))
    tokenized.push_back(tokenize(line));
  return InMemoryDataset(group_texts(tokenized, options.block_size, options.group_size));
}

}  // namespace loom::data
