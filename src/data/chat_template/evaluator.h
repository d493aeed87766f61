// The chat-template evaluator: runs a parsed template (ast.h) over a context of variables and
// returns the text and the byte ranges rendered inside `{% generation %}` blocks.
// Scoping follows Jinja2: the context and globals are the outermost scope; the template's
// top level has its own; each for-loop iteration and each macro call gets a fresh one, so a
// `set` inside a loop is gone after it (namespace() objects are how state leaves a loop);
// `if` makes no scope.
// Assumes: the tree came from parser.cpp (filter/test names already checked).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "data/chat_template/ast.h"

namespace loom::jinja {

struct RenderResult {
  std::string text;
  /// [begin, end) byte offsets in `text` of each `{% generation %}` block's output, in order.
  std::vector<std::pair<size_t, size_t>> generation;
};

/// Renders `body`. `context` holds the variables (messages, add_generation_prompt, ...),
/// `globals` the functions (namespace, raise_exception, ...); context wins on a clash.
/// Throws loom::Error "[chat_template] <name> line N: ..." for any evaluation error, including
/// raise_exception("msg") ("... raise_exception: msg").
RenderResult render(const Body& body, const Dict& context, const Dict& globals,
                    const std::string& name);

}  // namespace loom::jinja
