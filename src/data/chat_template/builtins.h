// The filters, tests and methods chat templates call, with Jinja2's documented semantics
// (jinja.palletsprojects.com, "List of Builtin Filters" / "List of Builtin Tests") and
// Python's for the str/dict methods; `tojson` is transformers' override (json.dumps with
// ensure_ascii=False, indent, separators, sort_keys).
// Assumes: the caller (evaluator.cpp) turns a thrown EvalError into a loom::Error naming the
// template and line.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "data/chat_template/value.h"

namespace loom::jinja {

/// A fault found while evaluating (bad operand type, wrong argument count, ...). The
/// evaluator adds the template's name and line.
struct EvalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Whether `name` is a filter / test loom implements.
bool is_filter(std::string_view name);
bool is_test(std::string_view name);

/// `value | name(args)`. Throws EvalError for a bad operand or arguments.
Value apply_filter(const std::string& name, const Value& value, CallArgs& args);
/// `value is name(args)`.
bool apply_test(const std::string& name, const Value& value, CallArgs& args);

/// `obj.name` as a bound method (str.strip, dict.items, ...); nullopt when `obj` has none.
std::optional<Value> bound_method(const Value& obj, const std::string& name);

/// Python `needle in haystack` (substring, list element, dict key). Throws EvalError for
/// types Python refuses.
bool contains(const Value& haystack, const Value& needle);

/// Python's str.strip/lstrip/rstrip: `chars` nullopt strips whitespace.
std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left,
                     bool right);

/// Python `a < b` for numbers, strings and lists. Throws EvalError for other types.
bool less_than(const Value& a, const Value& b);

/// Jinja's attribute lookup for `obj.name` and filter attributes: a bound method, a dict entry
/// or namespace field, else Undefined naming what was missing. Throws EvalError when `obj`
/// itself is undefined.
Value get_attr(const Value& obj, const std::string& name);

/// The argument `index` positionally or by keyword `name`; nullopt when absent.
std::optional<Value> arg(const CallArgs& a, size_t index, const char* name);

}  // namespace loom::jinja
