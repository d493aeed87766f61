// check_json_depth: a single pass over JSON text that tracks whether it is
// inside a string (and after a backslash there) and counts the open
// arrays/objects, failing at the first byte that goes past the limit. See
// io/json_parse.h.
#include "io/json_parse.h"

#include "loom/error.h"

namespace loom::io {

void check_json_depth(std::string_view text, const std::string& where, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        fail(where, ": JSON nested deeper than ", max_depth, " levels (at byte ", i, ")");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

void throw_invalid_json(const std::string& where, const char* message) {
  fail(where, ": not valid JSON (", message, ")");
}

}  // namespace loom::io
