// libFuzzer harness: the data-file readers (io/text_files.h). The first input
// byte picks the reader (0: CSV, 1: TSV, 2: JSON Lines, 3: plain text lines);
// the rest is the file's text. Readers must return or throw loom::Error; a
// table they return must be rectangular with a start line per row, and every
// column name must be found by column().
#include <cstdlib>

#include "fuzz_util.h"
#include "io/text_files.h"

namespace {

void check_table(const loom::io::TextTable& table) {
  if (table.lines.size() != table.rows.size()) std::abort();
  for (const auto& row : table.rows) {
    if (row.size() != table.columns.size()) std::abort();
  }
  for (const std::string& name : table.columns) table.column(name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int reader = data[0] % 4;
  std::string_view text = loom::fuzz::as_text(data + 1, size - 1);
  loom::fuzz::run_guarded("text_files", [&] {
    switch (reader) {
      case 0:
        check_table(loom::io::parse_csv(text, ',', "<fuzz.csv>"));
        break;
      case 1:
        check_table(loom::io::parse_csv(text, '\t', "<fuzz.tsv>"));
        break;
      case 2:
        check_table(loom::io::parse_json_lines(text, "<fuzz.jsonl>"));
        break;
      default:
        for (const std::string& line : loom::io::split_text_lines(text, true)) {
          if (line.empty()) std::abort();  // a kept line holds at least its "\n"
        }
        loom::io::split_text_lines(text, false);
    }
  });
  return 0;
}
