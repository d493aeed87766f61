// JSON Lines parsing for io/text_files.h: one JSON object per line
// (https://jsonlines.org), or a whole-file JSON array of objects (the other
// layout Hugging Face datasets' json loader accepts). Values keep their JSON
// type in TableCell::Kind so a dataset can tell integer labels from strings.
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "io/json_parse.h"
#include "io/text_files.h"
#include "loom/error.h"

namespace loom::io {
namespace {

using Json = nlohmann::ordered_json;  // keeps keys in file order

TableCell to_cell(const Json& v) {
  switch (v.type()) {
    case Json::value_t::string:
      return {TableCell::Kind::kString, v.get<std::string>()};
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return {TableCell::Kind::kInteger, v.dump()};
    case Json::value_t::number_float:
      return {TableCell::Kind::kFloat, v.dump()};
    case Json::value_t::boolean:
      return {TableCell::Kind::kBool, v.dump()};
    case Json::value_t::null:
      return {TableCell::Kind::kNull, "null"};
    default:
      return {TableCell::Kind::kOther, v.dump()};
  }
}

// Appends one parsed object as a row; new keys become new columns (earlier
// rows get kMissing cells for them).
class RowBuilder {
 public:
  explicit RowBuilder(TextTable& table) : table_(table) {}
  void add(const Json& object, int64_t line) {
    std::vector<TableCell> row(table_.columns.size());
    for (const auto& [key, value] : object.items()) {
      auto [it, fresh] = index_.try_emplace(key, table_.columns.size());
      if (fresh) {
        table_.columns.push_back(key);
        for (auto& r : table_.rows) r.emplace_back();
        row.emplace_back();
      }
      row[it->second] = to_cell(value);
    }
    table_.rows.push_back(std::move(row));
    table_.lines.push_back(line);
  }

 private:
  TextTable& table_;
  std::unordered_map<std::string, size_t> index_;
};

std::string_view without_bom(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  return text;
}

bool is_blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// A whole-file JSON array of objects ("[{...}, {...}]").
TextTable parse_json_array(std::string_view text, const std::string& source, TextTable table) {
  Json doc = parse_json<Json>(text, "[jsonl] " + source);
  RowBuilder rows(table);
  for (size_t i = 0; i < doc.size(); ++i) {
    LOOM_CHECK(doc[i].is_object(), "[jsonl] ", source, ": element ", i,
               " of the top-level array is not a JSON object");
    rows.add(doc[i], 0);
  }
  return table;
}

}  // namespace

TextTable parse_json_lines(std::string_view text, const std::string& source) {
  text = without_bom(text);
  TextTable table;
  table.source = source;
  table.reader = "jsonl";
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '[')
    return parse_json_array(text, source, std::move(table));
  RowBuilder rows(table);
  int64_t line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view content = text.substr(pos, end - pos);
    pos = end + 1;
    ++line;
    if (is_blank(content)) continue;
    Json value = parse_json<Json>(content, "[jsonl] " + source + ":" + std::to_string(line));
    LOOM_CHECK(value.is_object(), "[jsonl] ", source, ":", line, ": expected a JSON object, got ",
               value.type_name());
    rows.add(value, line);
  }
  return table;
}

}  // namespace loom::io
