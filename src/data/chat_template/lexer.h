// The chat-template lexer: Jinja2 source -> tokens (text, tag delimiters, expression tokens),
// with the whitespace control transformers renders with: trim_blocks (the first newline after
// a block or comment tag is removed), lstrip_blocks (spaces and tabs before a block or comment
// tag that starts a line are removed), `{%-`/`-%}` (all whitespace before/after the tag is
// removed; the same for `{{-`, `-}}`, `{#-`, `-#}`), `{%+`/`+%}` (no lstrip/trim), Jinja's
// default keep_trailing_newline=False (one trailing newline of the source is dropped) and its
// newline normalisation (\r\n and \r read as \n).
// Source: Jinja2's documented "Whitespace Control" and "Line Statements" rules; `{% raw %}`
// blocks become text. Line statements (`# for`) are off, as in transformers.
#pragma once

#include <string>
#include <vector>

namespace loom::jinja {

enum class Tok {
  kText,        // template data (value: the text)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword
  kString,      // string literal (value: decoded)
  kInt,         // integer literal (value: digits)
  kFloat,       // float literal (value: text)
  kOp,          // operator or punctuation (value: its spelling)
  kEnd,         // end of the source
};

struct Token {
  Tok kind;
  std::string value;
  int line;  // 1-based line of the token's first character in the source
};

/// Tokenizes `source`. Throws loom::Error "[chat_template] <name> line N: ..." for an unclosed
/// tag, comment or string, or a character that starts no token.
std::vector<Token> lex(const std::string& source, const std::string& name);

}  // namespace loom::jinja
