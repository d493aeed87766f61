// CSV/TSV parsing (RFC 4180 with a chosen delimiter), text-file line splitting
// and file reading for io/text_files.h. JSON Lines is in text_files_jsonl.cpp.
// Assumes the whole file fits in memory (datasets are tokenized once into
// memory anyway).
#include "io/text_files.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_set>

#include "io/safetensors_format.h"
#include "loom/error.h"

namespace loom::io {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

std::string_view strip_bom(std::string_view text) {
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  return text;
}

// A cursor over CSV text that tracks the 1-based physical line.
class CsvParser {
 public:
  CsvParser(std::string_view text, char delimiter, const std::string& source, const char* reader)
      : text_(strip_bom(text)), delim_(delimiter), source_(source), reader_(reader) {}

  // Reads the next record into `fields`; false at the end of the text.
  // Blank records (an empty line) are skipped. `line` is where it starts.
  bool next_record(std::vector<std::string>& fields, int64_t& line) {
    for (;;) {
      if (pos_ >= text_.size()) return false;
      fields.clear();
      line = line_;
      if (at_line_break()) {  // blank line
        skip_line_break();
        continue;
      }
      read_fields(fields);
      return true;
    }
  }

 private:
  bool at_line_break() const { return text_[pos_] == '\n' || text_[pos_] == '\r'; }
  void skip_line_break() {
    if (text_[pos_] == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') ++pos_;
    ++pos_;
    ++line_;
  }
  void read_fields(std::vector<std::string>& fields) {
    for (;;) {
      std::string field;
      if (pos_ < text_.size() && text_[pos_] == '"')
        read_quoted(field);
      else
        read_plain(field);
      fields.push_back(std::move(field));
      if (pos_ >= text_.size()) return;
      if (at_line_break()) {
        skip_line_break();
        return;
      }
      ++pos_;  // the delimiter; a field follows (possibly empty)
      if (pos_ >= text_.size()) {
        fields.emplace_back();
        return;
      }
    }
  }
  void read_plain(std::string& field) {
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != delim_ && !at_line_break()) ++pos_;
    field.assign(text_.substr(start, pos_ - start));
  }
  void read_quoted(std::string& field) {
    int64_t start_line = line_;
    ++pos_;  // opening quote
    for (;;) {
      LOOM_CHECK(pos_ < text_.size(), "[", reader_, "] ", source_, ":", start_line,
                 ": quoted field is not closed before the end of the file");
      char c = text_[pos_];
      if (c == '"') {
        if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
          field.push_back('"');
          pos_ += 2;
          continue;
        }
        ++pos_;  // closing quote
        break;
      }
      if (c == '\r' || c == '\n') {  // a line break inside the field, kept as written
        size_t start = pos_;
        skip_line_break();
        field.append(text_.substr(start, pos_ - start));
        continue;
      }
      field.push_back(c);
      ++pos_;
    }
    if (pos_ < text_.size() && text_[pos_] != delim_ && !at_line_break()) {
      fail("[", reader_, "] ", source_, ":", line_, ": unexpected character '", text_[pos_],
           "' after the closing quote of a field (write a quote inside a quoted field as \"\")");
    }
  }

  std::string_view text_;
  char delim_;
  const std::string& source_;
  const char* reader_;
  size_t pos_ = 0;
  int64_t line_ = 1;
};

void check_header(const std::vector<std::string>& header, const std::string& source,
                  const char* reader) {
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < header.size(); ++i) {
    LOOM_CHECK(seen.insert(header[i]).second, "[", reader, "] ", source, ":1: duplicate column '",
               header[i], "' in the header");
  }
}

bool has_suffix(const std::string& s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  std::string tail = s.substr(s.size() - suffix.size());
  for (char& c : tail) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return tail == suffix;
}

}  // namespace

const char* cell_kind_name(TableCell::Kind kind) {
  switch (kind) {
    case TableCell::Kind::kMissing:
      return "missing";
    case TableCell::Kind::kString:
      return "string";
    case TableCell::Kind::kInteger:
      return "integer";
    case TableCell::Kind::kFloat:
      return "float";
    case TableCell::Kind::kBool:
      return "bool";
    case TableCell::Kind::kNull:
      return "null";
    case TableCell::Kind::kOther:
      return "array/object";
  }
  return "?";
}

size_t TextTable::column(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return i;
  std::ostringstream names;
  for (size_t i = 0; i < columns.size(); ++i) names << (i ? ", " : "") << columns[i];
  // TRL's schemas given to a task that reads text: say which task reads them.
  const auto has = [&](const char* c) {
    return std::find(columns.begin(), columns.end(), c) != columns.end();
  };
  const bool trl = has("messages") || (has("prompt") && has("completion"));
  fail("[", reader, "] ", source, ": no column '", name, "' (columns: ", names.str(), ")",
       trl ? "; conversational or prompt-completion rows are read by --task sft" : "");
}

TextTable parse_csv(std::string_view text, char delimiter, const std::string& source) {
  const char* reader = delimiter == '\t' ? "tsv" : "csv";
  TextTable table;
  table.source = source;
  table.reader = reader;
  CsvParser parser(text, delimiter, source, reader);
  std::vector<std::string> fields;
  int64_t line = 0;
  LOOM_CHECK(parser.next_record(fields, line), "[", reader, "] ", source,
             ": the file is empty (a header line is required)");
  check_header(fields, source, reader);
  table.columns = fields;
  while (parser.next_record(fields, line)) {
    LOOM_CHECK(fields.size() == table.columns.size(), "[", reader, "] ", source, ":", line,
               ": row has ", fields.size(), " field", fields.size() == 1 ? "" : "s",
               ", the header has ", table.columns.size());
    std::vector<TableCell> row(fields.size());
    for (size_t i = 0; i < fields.size(); ++i)
      row[i] = {TableCell::Kind::kString, std::move(fields[i])};
    table.rows.push_back(std::move(row));
    table.lines.push_back(line);
  }
  return table;
}

std::string read_file_text(const std::string& path, const std::string& reader) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "[", reader, "] ", path, ": cannot open the file");
  std::ostringstream buf;
  buf << in.rdbuf();
  LOOM_CHECK(!in.bad(), "[", reader, "] ", path, ": read error");
  return buf.str();
}

TextTable read_text_table(const std::string& path) {
  if (has_suffix(path, ".csv")) return parse_csv(read_file_text(path, "csv"), ',', path);
  if (has_suffix(path, ".tsv") || has_suffix(path, ".tab"))
    return parse_csv(read_file_text(path, "tsv"), '\t', path);
  if (has_suffix(path, ".jsonl") || has_suffix(path, ".ndjson") || has_suffix(path, ".json"))
    return parse_json_lines(read_file_text(path, "jsonl"), path);
  fail("[dataset] ", path, ": unknown table format (expected a .csv, .tsv, .jsonl or .json file)");
}

std::vector<std::string> split_text_lines(std::string_view text, bool keep_linebreaks) {
  text = strip_bom(text);
  std::vector<std::string> lines;
  std::string current;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c != '\n' && c != '\r') {
      current.push_back(c);
      continue;
    }
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    if (keep_linebreaks) current.push_back('\n');
    lines.push_back(std::move(current));
    current.clear();
  }
  if (!current.empty()) lines.push_back(std::move(current));
  return lines;
}

std::vector<std::string> read_text_lines(const std::string& path, bool keep_linebreaks) {
  const std::string text = read_file_text(path, "text");
  check_text_utf8(text, path);
  return split_text_lines(text, keep_linebreaks);
}

void check_text_utf8(std::string_view text, const std::string& path, int64_t line0,
                     int64_t offset0) {
  const std::optional<size_t> bad = safetensors::detail::find_invalid_utf8(text);
  if (!bad) return;
  int64_t line = line0;  // universal newlines: "\n", "\r\n" and a lone "\r" end a line
  for (size_t i = 0; i < *bad; ++i)
    if (text[i] == '\n' || (text[i] == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n')))
      ++line;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(text[*bad]));
  fail("[text] ", path, ":", line, ": invalid UTF-8 at byte ", offset0 + static_cast<int64_t>(*bad),
       " (", hex,
       "); datasets' text loader raises UnicodeDecodeError here: convert the file to "
       "UTF-8 (iconv -f <encoding> -t utf-8)");
}

}  // namespace loom::io
