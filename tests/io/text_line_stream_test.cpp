// Tests of io::TextLineStream and count_text_lines (src/io/text_line_stream.h):
// for texts with every kind of line break, a BOM, blank lines and a last line
// with and without a break, the streamed lines at read chunks of 1, 2, 3, 7
// and 1 MiB bytes (so a "\r\n" and a BOM fall across chunk edges) must equal
// split_text_lines of the whole text, the in-memory reader the datasets used.
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "io/text_files.h"
#include "io/text_line_stream.h"

namespace loom::io {
namespace {

std::vector<std::string> streamed_lines(const std::string& path, bool keep, size_t chunk) {
  TextLineStream s(path, keep, chunk);
  std::vector<std::string> out;
  std::string line;
  while (s.next(&line)) {
    out.push_back(line);
    EXPECT_EQ(s.line_number(), static_cast<int64_t>(out.size()));
  }
  return out;
}

TEST(TextLineStream, SameLinesAsSplitTextLinesAtEveryChunkSize) {
  const std::vector<std::string> texts = {
      "",
      "\xEF\xBB\xBF",
      "\xEF\xBB\xBF"
      "a\r\nb",
      "\xEF\xBB\xBE"
      "x\n",  // U+FEFE: two BOM bytes only, kept as text
      "\xEF\xBC\x81"
      "\n\n",  // U+FF01: one BOM byte only
      "one\ntwo\r\nthree\rfour",
      "\r\n\r\n\n\r\r",
      "trailing\r",
      "  \n\tblank-ish\n\n",
      "long line without any break at all, longer than the chunks",
  };
  testing::TempDir dir;
  for (size_t t = 0; t < texts.size(); ++t) {
    const std::string path = dir.write("t" + std::to_string(t) + ".txt", texts[t]);
    for (bool keep : {false, true}) {
      const std::vector<std::string> want = split_text_lines(texts[t], keep);
      for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{1} << 20}) {
        EXPECT_EQ(streamed_lines(path, keep, chunk), want)
            << "text " << t << " keep " << keep << " chunk " << chunk;
      }
      EXPECT_EQ(count_text_lines(path), static_cast<int64_t>(want.size())) << "text " << t;
    }
  }
}

TEST(TextLineStream, SkippedLinesAreCountedNotStored) {
  testing::TempDir dir;
  const std::string path = dir.write("s.txt", "a\nbb\nccc\n");
  TextLineStream s(path, false, 2);
  ASSERT_TRUE(s.next(nullptr));
  std::string line;
  ASSERT_TRUE(s.next(&line));
  EXPECT_EQ(line, "bb");
  EXPECT_EQ(s.line_number(), 2);
  ASSERT_TRUE(s.next(nullptr));
  EXPECT_FALSE(s.next(&line));
  EXPECT_EQ(s.line_number(), 3);
}

// As datasets' text loader (UnicodeDecodeError), not U+FFFD in the tokens:
// both readers name the file, the 1-based line and the byte offset.
TEST(TextLineStream, InvalidUtf8IsAnErrorNamingTheLineAndByte) {
  testing::TempDir dir;
  struct Case {
    std::string text;
    int64_t line, offset;
    const char* byte;
  };
  const std::vector<Case> cases = {
      {"ok\nbad \xff here\n", 2, 7, "0xff"},
      {"\xEF\xBB\xBF"
       "a\r\nb\rc\xC3(\n",
       3, 9, "0xc3"},                                // BOM counted, "\r\n" and "\r"
      {"caf\xC3\xA9\nend \xE2\x82", 2, 10, "0xe2"},  // cut short at the end of the file
      {"\xED\xA0\x80\n", 1, 0, "0xed"},              // a surrogate
  };
  for (size_t t = 0; t < cases.size(); ++t) {
    const Case& c = cases[t];
    const std::string path = dir.write("u" + std::to_string(t) + ".txt", c.text);
    const std::string want = "[text] " + path + ":" + std::to_string(c.line) +
                             ": invalid UTF-8 at byte " + std::to_string(c.offset) + " (" + c.byte +
                             "); datasets' text loader raises UnicodeDecodeError";
    for (size_t chunk : {size_t{1}, size_t{3}, size_t{1} << 20}) {
      const std::string msg = testing::error_of([&] { streamed_lines(path, true, chunk); });
      EXPECT_EQ(msg.rfind(want, 0), 0u) << "case " << t << " chunk " << chunk << ": " << msg;
    }
    const std::string msg = testing::error_of([&] { read_text_lines(path, false); });
    EXPECT_EQ(msg.rfind(want, 0), 0u) << "case " << t << ": " << msg;
  }
  const std::string good = dir.write("good.txt", "caf\xC3\xA9 \xF0\x9F\x98\x80\n");
  EXPECT_EQ(read_text_lines(good, false), std::vector<std::string>{"caf\xC3\xA9 \xF0\x9F\x98\x80"});
}

TEST(TextLineStream, MissingFileNamesIt) {
  std::string msg = testing::error_of([] { TextLineStream s("/nonexistent/x.txt", true); });
  EXPECT_NE(msg.find("[text] /nonexistent/x.txt: cannot open the file"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::io
