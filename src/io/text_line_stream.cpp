// TextLineStream and count_text_lines (io/text_line_stream.h): a chunked
// reader with split_text_lines' line rules; a "\r\n" split across two chunks
// is one break, found by peeking at the next chunk.
#include "io/text_line_stream.h"

#include <cerrno>
#include <cstring>

#include "io/text_files.h"
#include "loom/error.h"

namespace loom::io {

TextLineStream::TextLineStream(const std::string& path, bool keep_linebreaks, size_t buffer_bytes)
    : path_(path), keep_linebreaks_(keep_linebreaks), buf_(buffer_bytes > 0 ? buffer_bytes : 1) {
  file_ = std::fopen(path.c_str(), "rb");
  LOOM_CHECK(file_ != nullptr, "[text] ", path, ": cannot open the file: ", std::strerror(errno));
}

TextLineStream::~TextLineStream() {
  if (file_) std::fclose(file_);
}

bool TextLineStream::fill() {
  pos_ = 0;
  end_ = std::fread(buf_.data(), 1, buf_.size(), file_);
  bytes_read_ += static_cast<int64_t>(end_);
  LOOM_CHECK(!std::ferror(file_), "[text] ", path_, ": read error");
  return end_ > 0;
}

int TextLineStream::peek() {
  if (pos_ >= end_ && !fill()) return -1;
  return static_cast<unsigned char>(buf_[pos_]);
}

bool TextLineStream::next(std::string* line) {
  if (at_start_) {  // a BOM is at most 3 bytes: read them one by one
    at_start_ = false;
    static constexpr unsigned char kBom[3] = {0xEF, 0xBB, 0xBF};
    size_t matched = 0;
    while (matched < 3 && peek() == kBom[matched]) {
      ++pos_;
      ++matched;
    }
    if (matched > 0 && matched < 3) {  // not a BOM: put the bytes back in front
      std::string head(reinterpret_cast<const char*>(kBom), matched);
      buf_.insert(buf_.begin() + static_cast<std::ptrdiff_t>(pos_), head.begin(), head.end());
      end_ += matched;
    }
  }
  if (line) line->clear();
  bool any = false;
  // The file offset of the line's first byte (a re-inserted BOM prefix counts back).
  const int64_t start_offset = bytes_read_ - static_cast<int64_t>(end_ - pos_);
  for (;;) {
    if (pos_ >= end_ && !fill()) {
      if (!any) return false;  // no last line without a break unless non-empty
      ++line_number_;
      if (line) check_text_utf8(*line, path_, line_number_, start_offset);
      return true;
    }
    const char* start = buf_.data() + pos_;
    size_t n = end_ - pos_;
    size_t i = 0;
    while (i < n && start[i] != '\n' && start[i] != '\r') ++i;
    if (line) line->append(start, i);
    any = any || i > 0;
    pos_ += i;
    if (i == n) continue;  // no break in this chunk
    char c = buf_[pos_++];
    if (c == '\r' && peek() == '\n') ++pos_;
    ++line_number_;
    if (line) check_text_utf8(*line, path_, line_number_, start_offset);
    if (line && keep_linebreaks_) line->push_back('\n');
    return true;
  }
}

int64_t count_text_lines(const std::string& path) {
  TextLineStream lines(path, false);
  while (lines.next(nullptr)) {
  }
  return lines.line_number();
}

}  // namespace loom::io
