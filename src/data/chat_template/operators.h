// Python's operators on chat-template values: arithmetic, `~`, comparisons and `in`,
// subscripts and slices. Sources: the Python language reference ("Binary arithmetic
// operations", "Comparisons", "Slicings"); Jinja2's templates page for `~` (string
// concatenation of str() of both sides) and for subscripts falling back to attributes.
// Assumes: a fault throws EvalError (builtins.h) for the evaluator to locate.
#pragma once

#include <string>

#include "data/chat_template/value.h"

namespace loom::jinja {

/// `-v`, `+v`.
Value unary_op(const std::string& op, const Value& v);
/// `a op b` for + - * / // % ** ~.
Value binary_op(const std::string& op, const Value& a, const Value& b);
/// `a op b` for == != < <= > >= in notin.
bool compare_op(const std::string& op, const Value& a, const Value& b);
/// `obj[key]`: list/str index (negative from the end), dict key; a miss is Undefined.
Value get_item(const Value& obj, const Value& key);
/// `obj[start:stop:step]` on a list or str (None: omitted), Python's slice rules.
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

}  // namespace loom::jinja
