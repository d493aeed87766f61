// Readers for the plain-text data files a dataset is built from: text files
// split into lines, CSV/TSV tables and JSON Lines. They return strings and
// cells only (no tokens, no tensors), so they are testable without the engine.
//
// Assumes UTF-8 input; a UTF-8 byte-order mark at the start of a file is
// dropped. Line breaks may be "\n", "\r\n" or a lone "\r" (Python's universal
// newlines, which Hugging Face datasets' text loader relies on).
//
// CSV follows RFC 4180 (https://www.rfc-editor.org/rfc/rfc4180): a field that
// starts with '"' is quoted, may hold the delimiter and line breaks, and writes
// a quote as '""'. TSV is the same grammar with a tab delimiter (as pandas'
// read_csv(sep="\t"), which Hugging Face datasets' csv loader uses). The first
// record is the header; blank lines are skipped (pandas' skip_blank_lines).
//
// Every error is a loom::Error naming the reader, the file, the 1-based line
// and the fault, e.g. "[csv] train.csv:7: row has 2 fields, the header has 3".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::io {

/// One cell of a table. CSV/TSV cells are always kString (the raw field text);
/// JSON Lines cells keep their JSON type, with `text` holding the string value
/// (kString) or the JSON text of anything else (e.g. "3", "true", "[1,2]").
struct TableCell {
  enum class Kind { kMissing, kString, kInteger, kFloat, kBool, kNull, kOther };
  Kind kind = Kind::kMissing;  ///< kMissing: a JSON Lines row without this key
  std::string text;
};

/// Name of a cell kind for messages: "missing", "string", "integer", ...
const char* cell_kind_name(TableCell::Kind kind);

/// A table read from a file: rows[i][j] is column j of row i.
struct TextTable {
  std::string source;                        ///< file name used in messages
  std::string reader;                        ///< "csv", "tsv" or "jsonl" (message prefix)
  std::vector<std::string> columns;          ///< header (CSV) or keys in first-seen order (JSONL)
  std::vector<std::vector<TableCell>> rows;  ///< every row has columns.size() cells
  std::vector<int64_t> lines;                ///< 1-based line on which row i starts
  /// Index of column `name`. Throws loom::Error "[csv] f.csv: no column 'x'
  /// (columns: a, b)" when there is none.
  size_t column(const std::string& name) const;
};

/// Parses CSV (delimiter ',') or TSV ('\t') text. `source` names the file in
/// errors. Throws loom::Error for an unterminated quoted field, a character
/// other than the delimiter or a line break after a closing quote, a row whose
/// field count differs from the header's, a duplicate header name,
/// or text without a header.
TextTable parse_csv(std::string_view text, char delimiter, const std::string& source);

/// Parses JSON Lines (https://jsonlines.org): one JSON object per line, blank
/// lines skipped. Columns are the union of keys in first-seen order; a row
/// lacking a key has a kMissing cell. Throws loom::Error naming the line for
/// invalid JSON or a value that is not an object.
TextTable parse_json_lines(std::string_view text, const std::string& source);

/// Reads `path` by its extension: ".csv" (CSV), ".tsv"/".tab" (TSV),
/// ".jsonl"/".ndjson"/".json" (JSON Lines; a ".json" file holding one JSON
/// array of objects is read as those objects, with line 0 for each). Throws
/// loom::Error for an unreadable file, an unknown extension or malformed text.
TextTable read_text_table(const std::string& path);

/// Reads the whole file. Throws loom::Error "[reader] path: cannot open".
std::string read_file_text(const std::string& path, const std::string& reader);

/// Splits text into lines as Hugging Face datasets' "text" loader does: line
/// breaks normalized to "\n", each line keeping its "\n" when
/// `keep_linebreaks` (the last line has none when the text does not end in a
/// break). A leading UTF-8 BOM is dropped. Empty text gives no lines.
std::vector<std::string> split_text_lines(std::string_view text, bool keep_linebreaks);

/// split_text_lines of the file at `path`; throws loom::Error when unreadable,
/// and check_text_utf8's error when the file is not valid UTF-8.
std::vector<std::string> read_text_lines(const std::string& path, bool keep_linebreaks);

/// Throws loom::Error "[text] <path>:<line>: invalid UTF-8 at byte <offset>
/// (0x<byte>) ..." when `text` (bytes [offset0, ...) of the file, the first on
/// line `line0`) is not valid UTF-8, as datasets' text loader raises
/// UnicodeDecodeError: the tokenizer would otherwise see U+FFFD in its place.
void check_text_utf8(std::string_view text, const std::string& path, int64_t line0 = 1,
                     int64_t offset0 = 0);

}  // namespace loom::io
