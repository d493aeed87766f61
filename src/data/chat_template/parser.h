// The chat-template parser: tokens (lexer.h) -> statements (ast.h), with Jinja2's grammar and
// operator precedence (loosest first): `x if c else y`, `or`, `and`, `not`, comparisons and
// `in`/`not in`, `+ -`, `~`, `* / // %`, `**`, unary `- +`, then postfix `.attr`, `[i]`,
// `[a:b:c]`, `(args)`, `| filter`, `is test`.
// Statements: if/elif/else, for (tuple targets, `if` filter, else), set (names, tuples,
// namespace attributes, block set), macro, break/continue (loop controls), generation.
// Anything else Jinja has (extends, block, include, import, call, filter blocks, with, do,
// recursive loops) is refused with the template's name and the line.
#pragma once

#include <string>
#include <vector>

#include "data/chat_template/ast.h"
#include "data/chat_template/lexer.h"

namespace loom::jinja {

/// Parses a whole template. Throws loom::Error "[chat_template] <name> line N: ..." for a
/// syntax error, an unknown filter or test, or an unsupported statement.
Body parse(const std::vector<Token>& tokens, const std::string& name);

}  // namespace loom::jinja
