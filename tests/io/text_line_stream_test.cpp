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
      "\xEF\xBB"
      "x\n",  // two BOM bytes only: kept as text
      "\xEF"
      "\n\n",
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

TEST(TextLineStream, MissingFileNamesIt) {
  std::string msg = testing::error_of([] { TextLineStream s("/nonexistent/x.txt", true); });
  EXPECT_NE(msg.find("[text] /nonexistent/x.txt: cannot open the file"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::io
