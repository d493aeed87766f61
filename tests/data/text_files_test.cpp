// Tests of the CSV/TSV/JSON Lines readers and the text-line splitter
// (src/io/text_files.h). Expected fields are written out by hand from RFC
// 4180's rules; for the quoted-field case they were also checked against
// Python's csv module (csv.reader(io.StringIO(text, newline=""))).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error_of.h"
#include "io/text_files.h"
#include "loom/error.h"

namespace loom::io {
namespace {

std::vector<std::string> texts(const std::vector<TableCell>& row) {
  std::vector<std::string> out;
  for (const TableCell& c : row) out.push_back(c.text);
  return out;
}

using testing::error_of;

TEST(TextFiles, CsvQuotedFieldsBomAndCrlf) {
  std::string text =
      "\xEF\xBB\xBFtext,label\r\n"
      "\"Hello, world\",pos\r\n"
      "\"She said \"\"hi\"\"\",neg\r\n"
      "\"two\r\nlines\",pos\r\n"
      "\r\n"
      "plain \"inner\" quote,neg\r\n"
      ",\n"
      "last,row";
  TextTable t = parse_csv(text, ',', "in.csv");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"text", "label"}));  // BOM dropped
  ASSERT_EQ(t.rows.size(), 6u);
  EXPECT_EQ(texts(t.rows[0]), (std::vector<std::string>{"Hello, world", "pos"}));
  EXPECT_EQ(texts(t.rows[1]), (std::vector<std::string>{"She said \"hi\"", "neg"}));
  EXPECT_EQ(texts(t.rows[2]), (std::vector<std::string>{"two\r\nlines", "pos"}));
  EXPECT_EQ(texts(t.rows[3]), (std::vector<std::string>{"plain \"inner\" quote", "neg"}));
  EXPECT_EQ(texts(t.rows[4]), (std::vector<std::string>{"", ""}));
  EXPECT_EQ(texts(t.rows[5]), (std::vector<std::string>{"last", "row"}));
  // Physical line on which each record starts (the blank line 6 is skipped).
  EXPECT_EQ(t.lines, (std::vector<int64_t>{2, 3, 4, 7, 8, 9}));
  EXPECT_EQ(t.rows[0][0].kind, TableCell::Kind::kString);
}

TEST(TextFiles, LoneCarriageReturnEndsARecord) {
  TextTable t = parse_csv("a,b\r1,2\r3,4", ',', "mac.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(texts(t.rows[1]), (std::vector<std::string>{"3", "4"}));
  EXPECT_EQ(t.lines, (std::vector<int64_t>{2, 3}));
}

TEST(TextFiles, TsvKeepsCommasAndQuotes) {
  TextTable t = parse_csv("sentence\tlabel\na, b\t1\n\"x\ty\"\t0\n", '\t', "in.tsv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(texts(t.rows[0]), (std::vector<std::string>{"a, b", "1"}));
  EXPECT_EQ(texts(t.rows[1]), (std::vector<std::string>{"x\ty", "0"}));
  EXPECT_EQ(t.reader, "tsv");
}

TEST(TextFiles, CsvErrorsNameFileLineAndFault) {
  EXPECT_EQ(error_of([] { parse_csv("a,b,c\n1,2,3\n4,5\n", ',', "d.csv"); }),
            "[csv] d.csv:3: row has 2 fields, the header has 3");
  EXPECT_EQ(error_of([] { parse_csv("a\n\n\"open\nstill open", ',', "q.csv"); }),
            "[csv] q.csv:3: quoted field is not closed before the end of the file");
  EXPECT_NE(error_of([] {
              parse_csv("a,b\n\"x\"y,1\n", ',', "c.csv");
            }).find("[csv] c.csv:2: unexpected character 'y' after the closing quote"),
            std::string::npos);
  EXPECT_EQ(error_of([] { parse_csv("a,a\n1,2\n", ',', "h.csv"); }),
            "[csv] h.csv:1: duplicate column 'a' in the header");
  EXPECT_EQ(error_of([] { parse_csv("\xEF\xBB\xBF\r\n", ',', "e.csv"); }),
            "[csv] e.csv: the file is empty (a header line is required)");
  TextTable t = parse_csv("text,y\nhi,1\n", ',', "m.csv");
  EXPECT_EQ(error_of([&] { t.column("label"); }),
            "[csv] m.csv: no column 'label' (columns: text, y)");
}

TEST(TextFiles, JsonLinesKeepTypesAndUnionOfKeys) {
  std::string text =
      "\xEF\xBB\xBF{\"text\": \"caf\\u00e9\", \"label\": 1}\r\n"
      "\n"
      "{\"label\": \"pos\", \"text\": \"b\", \"extra\": [1, 2]}\n"
      "{\"text\": null, \"label\": 2.5}";
  TextTable t = parse_json_lines(text, "in.jsonl");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"text", "label", "extra"}));  // file order
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.lines, (std::vector<int64_t>{1, 3, 4}));
  const size_t text_col = t.column("text"), label_col = t.column("label");
  EXPECT_EQ(t.rows[0][text_col].text, "caf\xC3\xA9");
  EXPECT_EQ(t.rows[0][label_col].kind, TableCell::Kind::kInteger);
  EXPECT_EQ(t.rows[1][label_col].kind, TableCell::Kind::kString);
  EXPECT_EQ(t.rows[0][t.column("extra")].kind, TableCell::Kind::kMissing);
  EXPECT_EQ(t.rows[1][t.column("extra")].kind, TableCell::Kind::kOther);
  EXPECT_EQ(t.rows[2][text_col].kind, TableCell::Kind::kNull);
  EXPECT_EQ(t.rows[2][label_col].kind, TableCell::Kind::kFloat);
}

TEST(TextFiles, JsonLinesErrorsNameTheLine) {
  std::string bad = error_of([] { parse_json_lines("{\"a\": 1}\n{\"a\": \n", "b.jsonl"); });
  EXPECT_EQ(bad.rfind("[jsonl] b.jsonl:2: not valid JSON (", 0), 0u) << bad;
  EXPECT_EQ(error_of([] {
              parse_json_lines("{\"a\": 1}\n\n[1, 2]x\n", "c.jsonl");
            }).rfind("[jsonl] c.jsonl:3: not valid JSON", 0),
            0u);
  EXPECT_EQ(error_of([] { parse_json_lines("{\"a\": 1}\n\"text\"\n", "s.jsonl"); }),
            "[jsonl] s.jsonl:2: expected a JSON object, got string");
}

TEST(TextFiles, JsonArrayFile) {
  TextTable t =
      parse_json_lines(" [ {\"text\": \"a\"}, {\"text\": \"b\", \"label\": 0} ]", "x.json");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[1][t.column("text")].text, "b");
  EXPECT_EQ(t.rows[0][t.column("label")].kind, TableCell::Kind::kMissing);
}

TEST(TextFiles, SplitLinesLikeDatasetsTextLoader) {
  std::string text =
      "\xEF\xBB\xBF"
      "one\r\ntwo\rthree\n\nfour";
  EXPECT_EQ(split_text_lines(text, false),
            (std::vector<std::string>{"one", "two", "three", "", "four"}));
  EXPECT_EQ(split_text_lines(text, true),
            (std::vector<std::string>{"one\n", "two\n", "three\n", "\n", "four"}));
  EXPECT_EQ(split_text_lines("a\n", true), (std::vector<std::string>{"a\n"}));
  EXPECT_TRUE(split_text_lines("", true).empty());
}

TEST(TextFiles, ReadTableByExtensionAndMissingFile) {
  auto dir = std::filesystem::temp_directory_path() / "loom_text_files_test";
  std::filesystem::create_directories(dir);
  std::string path = (dir / "t.TSV").string();
  std::ofstream(path) << "a\tb\n1\t2\n";
  TextTable t = read_text_table(path);
  EXPECT_EQ(t.reader, "tsv");
  EXPECT_EQ(texts(t.rows[0]), (std::vector<std::string>{"1", "2"}));
  std::string missing = (dir / "nope.csv").string();
  EXPECT_EQ(error_of([&] { read_text_table(missing); }),
            "[csv] " + missing + ": cannot open the file");
  EXPECT_NE(error_of([&] { read_text_table((dir / "x.parquet").string()); }).find("unknown table"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loom::io
