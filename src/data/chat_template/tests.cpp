// Jinja2's builtin tests (`x is defined`, `x is string`, ...), specified from Jinja's "List of
// Builtin Tests" (jinja.palletsprojects.com/en/stable/templates/#builtin-tests). As in
// Python, bool counts as a number; `sequence` is anything with a length (str, list, dict);
// `iterable` is str, list, dict or undefined (Jinja's Undefined iterates as empty).
#include <cctype>

#include "data/chat_template/builtins.h"

namespace loom::jinja {
namespace {

Value first_arg(const CallArgs& a, const char* test) {
  std::optional<Value> v = arg(a, 0, "other");
  if (!v) throw EvalError(std::string("test '") + test + "' needs an argument");
  return *v;
}

bool sameas(const Value& a, const Value& b) {
  if (a.v.index() != b.v.index()) return false;
  if (a.is_list()) return &a.list() == &b.list();
  if (a.is_dict()) return &a.dict() == &b.dict();
  if (a.is_namespace() || a.is_callable()) return equals(a, b);
  if (a.is_string() || a.is_float()) return false;  // identity of these is an implementation detail
  return equals(a, b);
}

bool all_cased(const std::string& s, bool upper) {
  bool any = false;
  for (unsigned char c : s) {
    if (std::isalpha(c)) {
      any = true;
      if (upper ? std::islower(c) : std::isupper(c)) return false;
    }
  }
  return any;
}

bool run_test(const std::string& n, const Value& v, CallArgs& a) {
  if (n == "defined") return !v.is_undefined();
  if (n == "undefined") return v.is_undefined();
  if (n == "none") return v.is_none();
  if (n == "string") return v.is_string();
  if (n == "mapping") return v.is_dict();
  if (n == "iterable") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (n == "sequence") return v.is_string() || v.is_list() || v.is_dict();
  if (n == "number") return v.is_number();
  if (n == "integer") return v.is_int();
  if (n == "float") return v.is_float();
  if (n == "boolean") return v.is_bool();
  if (n == "true") return v.is_bool() && v.boolean();
  if (n == "false") return v.is_bool() && !v.boolean();
  if (n == "callable") return v.is_callable();
  if (n == "lower") return v.is_string() && all_cased(v.str(), false);
  if (n == "upper") return v.is_string() && all_cased(v.str(), true);
  if (n == "even" || n == "odd" || n == "divisibleby") {
    if (!v.is_number() || v.is_float()) throw EvalError("test '" + n + "' needs an integer");
    int64_t d = n == "divisibleby" ? first_arg(a, "divisibleby").as_int() : 2;
    if (d == 0) throw EvalError("divisibleby 0");
    bool divisible = v.as_int() % d == 0;
    return n == "odd" ? !divisible : divisible;
  }
  if (n == "sameas") return sameas(v, first_arg(a, "sameas"));
  if (n == "in") return contains(first_arg(a, "in"), v);
  Value other = first_arg(a, n.c_str());
  if (n == "eq" || n == "equalto" || n == "==") return equals(v, other);
  if (n == "ne" || n == "!=") return !equals(v, other);
  if (n == "lt" || n == "lessthan" || n == "<") return less_than(v, other);
  if (n == "gt" || n == "greaterthan" || n == ">") return less_than(other, v);
  if (n == "le" || n == "<=") return !less_than(other, v);
  if (n == "ge" || n == ">=") return !less_than(v, other);
  throw EvalError("unsupported test '" + n + "'");
}

constexpr const char* kTests[] = {
    "!=",      "<",        "<=",       ">",           ">=",          "==",
    "boolean", "callable", "defined",  "divisibleby", "eq",          "equalto",
    "even",    "false",    "float",    "ge",          "greaterthan", "gt",
    "in",      "integer",  "iterable", "le",          "lessthan",    "lower",
    "lt",      "mapping",  "ne",       "none",        "number",      "odd",
    "sameas",  "sequence", "string",   "true",        "undefined",   "upper"};

}  // namespace

bool is_test(std::string_view name) {
  for (const char* t : kTests) {
    if (name == t) return true;
  }
  return false;
}

bool apply_test(const std::string& name, const Value& value, CallArgs& args) {
  return run_test(name, value, args);
}

}  // namespace loom::jinja
