// SFT rows from .jsonl / .json / .parquet files (sft_files.h). JSON is read
// whole (io::read_file_text); Parquet one row group at a time, only the
// columns of TRL's schemas, each row an object as datasets gives it.
#include "data/sft/sft_files.h"

#include <algorithm>
#include <filesystem>

#include "io/json_parse.h"
#include "io/parquet_rows.h"
#include "io/text_files.h"
#include "loom/error.h"

namespace loom::data {
namespace fs = std::filesystem;

namespace {

using OJson = nlohmann::ordered_json;

std::vector<SftRow> parquet_rows(const std::string& path, const std::string& what,
                                 const std::string& text_field) {
  const std::string at = "[sft] " + what;
  const std::vector<std::string> columns = io::parquet_columns(path, at);
  const std::vector<std::string> wanted = sft_columns(text_field);
  const bool any = std::any_of(columns.begin(), columns.end(), [&](const std::string& c) {
    return c == text_field || c == "messages" || c == "prompt" || c == "input_ids";
  });
  if (!any) {
    std::string have;
    for (const std::string& c : columns) have += (have.empty() ? "" : ", ") + c;
    fail(at, ": no column of TRL's dataset schemas: expected '", text_field,
         "' (--dataset_text_field), 'messages', 'prompt' + 'completion', or 'input_ids'; the file "
         "has columns: ",
         have.empty() ? "none" : have);
  }
  std::vector<SftRow> out;
  io::read_parquet_rows(
      path, wanted,
      [&](OJson&& row, int64_t i) {
        out.push_back({std::move(row), path + ": row " + std::to_string(i + 1)});
      },
      at);
  return out;
}

std::vector<SftRow> json_rows(const std::string& path) {
  const std::string text = io::read_file_text(path, "sft");
  std::vector<SftRow> out;
  const size_t first = text.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
  if (first != std::string::npos && text[first] == '[') {  // one array of objects
    OJson all = io::parse_json<OJson>(text, "[sft] " + path);
    for (size_t i = 0; i < all.size(); ++i)
      out.push_back({std::move(all[i]), path + ": row " + std::to_string(i + 1)});
    return out;
  }
  std::vector<std::string> lines = io::split_text_lines(text, /*keep_linebreaks=*/false);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(i + 1);
    out.push_back({io::parse_json<OJson>(lines[i], "[sft] " + where), where});
  }
  return out;
}

}  // namespace

std::vector<std::string> sft_columns(const std::string& dataset_text_field) {
  return {dataset_text_field,     "messages",  "prompt",          "completion",     "tools",
          "chat_template_kwargs", "input_ids", "completion_mask", "assistant_masks"};
}

std::vector<SftRow> read_sft_rows(const std::string& path, const std::string& what,
                                  const std::string& dataset_text_field) {
  const std::string ext = fs::path(path).extension().string();
  LOOM_CHECK(ext == ".jsonl" || ext == ".ndjson" || ext == ".json" || ext == ".parquet", "[sft] ",
             what, ": sft reads .jsonl, .json or .parquet files (TRL's dataset schemas), got '",
             ext, "'");
  LOOM_CHECK(fs::is_regular_file(path), "[data] ", what, ": no such file");
  if (ext == ".parquet") return parquet_rows(path, what, dataset_text_field);
  return json_rows(path);
}

}  // namespace loom::data
