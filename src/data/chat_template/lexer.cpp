// Jinja2 lexing with transformers' whitespace settings (see lexer.h). The tag-scanning rules
// follow Jinja2's documented syntax: `{{ }}` expressions, `{% %}` statements, `{# #}`
// comments; inside a tag, strings are skipped whole, so `{{ "}}" }}` is one tag.
#include "data/chat_template/lexer.h"

#include <algorithm>
#include <cctype>

#include "loom/error.h"

namespace loom::jinja {
namespace {

class Lexer {
 public:
  Lexer(std::string source, const std::string& name) : src_(std::move(source)), name_(name) {
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') newlines_.push_back(i);
    }
  }

  std::vector<Token> run() {
    size_t pos = 0;
    while (pos < src_.size()) {
      size_t tag = find_tag(pos);
      std::string text = src_.substr(pos, tag - pos);
      if (tag < src_.size()) trim_before_tag(text, pos, tag);
      if (!text.empty()) out_.push_back({Tok::kText, text, line_at(pos)});
      if (tag >= src_.size()) break;
      pos = lex_tag(tag);
    }
    out_.push_back({Tok::kEnd, "", line_at(src_.size())});
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(size_t pos, const std::string& msg) const {
    loom::fail("[chat_template] ", name_, " line ", line_at(pos), ": ", msg);
  }

  int line_at(size_t pos) const {
    return 1 + static_cast<int>(std::lower_bound(newlines_.begin(), newlines_.end(), pos) -
                                newlines_.begin());
  }

  size_t find_tag(size_t pos) const {
    for (size_t i = pos; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return src_.size();
  }

  // `{%-` strips all whitespace before the tag; else lstrip_blocks strips the spaces and tabs
  // between a line start and a block/comment tag (Jinja: only when nothing else precedes the
  // tag on its line, and not for `{%+` nor for `{{`).
  void trim_before_tag(std::string& text, size_t text_pos, size_t tag) const {
    char kind = src_[tag + 1];
    char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
    if (sign == '-') {
      size_t end = text.find_last_not_of(" \t\n\r\f\v");
      text.erase(end == std::string::npos ? 0 : end + 1);
      return;
    }
    if (sign == '+' || kind == '{') return;
    size_t nl = text.rfind('\n');
    size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    bool line_starting = text_pos == 0 || src_[text_pos - 1] == '\n';
    if (l_pos == 0 && !line_starting) return;
    if (l_pos < text.size() && text.find_first_not_of(" \t\f\v\r", l_pos) == std::string::npos) {
      text.erase(l_pos);
    }
  }

  // After a tag's end: `-` strips all following whitespace; trim_blocks removes one newline
  // after `%}` and `#}`; `+%}` keeps it. Returns the position after what was removed.
  size_t trim_after_tag(size_t end_pos, char sign, bool is_block) const {
    if (sign == '-') {
      while (end_pos < src_.size() && std::isspace(static_cast<unsigned char>(src_[end_pos]))) {
        ++end_pos;
      }
    } else if (sign != '+' && is_block && end_pos < src_.size() && src_[end_pos] == '\n') {
      ++end_pos;
    }
    return end_pos;
  }

  size_t lex_comment(size_t tag) {
    size_t end = src_.find("#}", tag + 2);
    if (end == std::string::npos) fail(tag, "comment '{#' is never closed with '#}'");
    char sign = end > tag + 2 && src_[end - 1] == '-' ? '-' : '\0';
    return trim_after_tag(end + 2, sign, true);
  }

  size_t lex_tag(size_t tag) {
    char kind = src_[tag + 1];
    if (kind == '#') return lex_comment(tag);
    bool block = kind == '%';
    out_.push_back({block ? Tok::kBlockBegin : Tok::kVarBegin, "", line_at(tag)});
    size_t first = out_.size();
    size_t p = tag + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    const char* close = block ? "%}" : "}}";
    while (true) {
      while (p < src_.size() && std::isspace(static_cast<unsigned char>(src_[p]))) ++p;
      if (p >= src_.size()) fail(tag, std::string("tag is never closed with '") + close + "'");
      char sign = src_[p];
      if ((sign == '-' || (block && sign == '+')) && src_.compare(p + 1, 2, close) == 0) {
        return finish_tag(tag, first, p + 3, sign, block);
      }
      if (src_.compare(p, 2, close) == 0) return finish_tag(tag, first, p + 2, '\0', block);
      p = lex_token(p);
    }
  }

  size_t finish_tag(size_t tag, size_t first, size_t end, char sign, bool block) {
    out_.push_back({block ? Tok::kBlockEnd : Tok::kVarEnd, "", line_at(end - 1)});
    size_t next = trim_after_tag(end, sign, block);
    if (block && out_.size() == first + 2 && out_[first].kind == Tok::kName &&
        out_[first].value == "raw") {
      out_.resize(first - 1);
      return lex_raw(tag, next);
    }
    return next;
  }

  // `{% raw %}...{% endraw %}`: the body is text, whatever tags it holds.
  size_t lex_raw(size_t tag, size_t body) {
    for (size_t p = src_.find("{%", body); p != std::string::npos; p = src_.find("{%", p + 2)) {
      size_t q = p + 2;
      char lsign = q < src_.size() ? src_[q] : '\0';
      if (lsign == '-' || lsign == '+') ++q;
      while (q < src_.size() && std::isspace(static_cast<unsigned char>(src_[q]))) ++q;
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q += 6;
      while (q < src_.size() && std::isspace(static_cast<unsigned char>(src_[q]))) ++q;
      char sign = '\0';
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      if (src_.compare(q, 2, "%}") != 0) continue;
      std::string text = src_.substr(body, p - body);
      trim_before_tag(text, body, p);
      if (!text.empty()) out_.push_back({Tok::kText, text, line_at(body)});
      return trim_after_tag(q + 2, sign, true);
    }
    fail(tag, "'{% raw %}' is never closed with '{% endraw %}'");
  }

  size_t lex_token(size_t p) {
    unsigned char c = static_cast<unsigned char>(src_[p]);
    if (std::isalpha(c) || c == '_') {
      size_t e = p;
      while (e < src_.size() &&
             (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) {
        ++e;
      }
      out_.push_back({Tok::kName, src_.substr(p, e - p), line_at(p)});
      return e;
    }
    if (std::isdigit(c)) return lex_number(p);
    if (c == '\'' || c == '"') return lex_string(p);
    static const char* const kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*",
                                       "/",  "%",  "~",  "<",  ">",  "=",  ".", ",", ":",
                                       "|",  "(",  ")",  "[",  "]",  "{",  "}"};
    for (const char* op : kOps) {
      size_t n = std::char_traits<char>::length(op);
      if (src_.compare(p, n, op) == 0) {
        out_.push_back({Tok::kOp, op, line_at(p)});
        return p + n;
      }
    }
    fail(p, std::string("unexpected character '") + src_[p] + "' in a tag");
  }

  size_t lex_number(size_t p) {
    size_t e = p;
    auto digits = [&] {
      while (e < src_.size() &&
             (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) {
        ++e;
      }
    };
    digits();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      is_float = true;
      ++e;
      digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t f = e + 1;
      if (f < src_.size() && (src_[f] == '+' || src_[f] == '-')) ++f;
      if (f < src_.size() && std::isdigit(static_cast<unsigned char>(src_[f]))) {
        is_float = true;
        e = f;
        digits();
      }
    }
    std::string text = src_.substr(p, e - p);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    out_.push_back({is_float ? Tok::kFloat : Tok::kInt, text, line_at(p)});
    return e;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // A Python string literal's escapes (Jinja decodes literals as Python does).
  size_t lex_string(size_t p) {
    char quote = src_[p];
    std::string value;
    size_t i = p + 1;
    for (; i < src_.size() && src_[i] != quote; ++i) {
      if (src_[i] != '\\' || i + 1 >= src_.size()) {
        value += src_[i];
        continue;
      }
      char e = src_[++i];
      switch (e) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case '0':
          value += '\0';
          break;
        case 'a':
          value += '\a';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'v':
          value += '\v';
          break;
        case '\n':
          break;
        case 'x':
        case 'u':
        case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + n >= src_.size()) fail(p, "truncated \\" + std::string(1, e) + " escape");
          append_utf8(value, static_cast<unsigned>(std::stoul(src_.substr(i + 1, n), nullptr, 16)));
          i += n;
          break;
        }
        case '\\':
        case '\'':
        case '"':
          value += e;
          break;
        default:
          value += '\\';
          value += e;
      }
    }
    if (i >= src_.size()) fail(p, "string literal is never closed");
    out_.push_back({Tok::kString, value, line_at(p)});
    return i + 1;
  }

  std::string src_;
  const std::string& name_;
  std::vector<size_t> newlines_;
  std::vector<Token> out_;
};

// Jinja reads the source with str.splitlines() and joins with "\n": line ends become "\n"
// and one trailing newline is dropped (keep_trailing_newline=False).
std::string normalize_source(const std::string& source) {
  std::string s;
  s.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      s += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      s += source[i];
    }
  }
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

std::vector<Token> lex(const std::string& source, const std::string& name) {
  return Lexer(normalize_source(source), name).run();
}

}  // namespace loom::jinja
