// TextLineStream: the lines of a text file read in fixed-size chunks, so that
// a file larger than memory can be walked with a bounded buffer. Lines are
// exactly those of split_text_lines (src/io/text_files.h): universal newlines
// ("\n", "\r\n", lone "\r") normalized to "\n", kept on each line when
// `keep_linebreaks`, a leading UTF-8 BOM dropped, a last line without a break
// kept only when non-empty. Assumes the file does not change while it is read.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace loom::io {

class TextLineStream {
 public:
  /// Opens `path`; `buffer_bytes` (>= 1) is the read chunk. Throws
  /// loom::Error "[text] path: cannot open the file: <reason>".
  TextLineStream(const std::string& path, bool keep_linebreaks, size_t buffer_bytes = 1 << 20);
  ~TextLineStream();
  TextLineStream(const TextLineStream&) = delete;
  TextLineStream& operator=(const TextLineStream&) = delete;

  /// The next line into `line` (replaced); false at the end of the file.
  /// With `line` null the line is skipped without being stored. Throws
  /// loom::Error "[text] path: read error" on an I/O failure, and
  /// check_text_utf8's error (text_files.h) for a stored line that is not
  /// valid UTF-8.
  bool next(std::string* line);
  /// 1-based number of the line next() returned last (0 before the first).
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }

 private:
  bool fill();  // refills buf_; false at the end of the file
  int peek();   // the next byte or -1, without consuming it

  std::string path_;
  bool keep_linebreaks_;
  std::FILE* file_ = nullptr;
  std::vector<char> buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
  bool at_start_ = true;  // the BOM check is still to be made
  int64_t line_number_ = 0;
  int64_t bytes_read_ = 0;  // bytes fread so far (the file offset of buf_[end_])
};

/// Number of lines TextLineStream (and split_text_lines) gives for `path`.
int64_t count_text_lines(const std::string& path);

}  // namespace loom::io
