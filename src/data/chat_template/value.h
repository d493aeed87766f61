// The values a chat template computes with: Jinja2's view of Python objects, reduced to what
// a template can build or receive from JSON (undefined, None, bool, int, float, str, list,
// dict, namespace, callable), with Python's rules for truth, equality, str() and repr().
//
// Assumes: strings are UTF-8; Python's len/index/slice count code points, so the helpers here
// do too. Dict keys are strings (JSON objects, and the literals templates write); a dict keeps
// insertion order, as Python's does. Lists and dicts are immutable once built (transformers
// renders in Jinja's ImmutableSandboxedEnvironment), so values share them by pointer;
// namespace() objects are the one mutable container.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace loom::jinja {

struct Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;

/// Arguments of a call: positional, then keyword (in call order).
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};
using Function = std::function<Value(CallArgs&)>;

/// Jinja's default Undefined: prints as "", is falsy, iterates as empty; reading an attribute
/// of it is an error. `name` says what was missing, for that error.
struct Undefined {
  std::string name;
};
struct NoneType {};
/// A namespace() object: a dict whose entries `{% set ns.x = ... %}` may change.
struct Namespace {
  Dict fields;
};

struct Value {
  std::variant<Undefined, NoneType, bool, int64_t, double, std::string, std::shared_ptr<const List>,
               std::shared_ptr<const Dict>, std::shared_ptr<Namespace>, std::shared_ptr<Function>>
      v;

  Value() : v(Undefined{}) {}
  Value(Undefined u) : v(std::move(u)) {}
  Value(NoneType n) : v(n) {}
  Value(bool b) : v(b) {}
  Value(int64_t i) : v(i) {}
  Value(int i) : v(static_cast<int64_t>(i)) {}
  Value(double d) : v(d) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(List l) : v(std::make_shared<const List>(std::move(l))) {}
  Value(Dict d) : v(std::make_shared<const Dict>(std::move(d))) {}
  Value(std::shared_ptr<Namespace> n) : v(std::move(n)) {}
  Value(Function f) : v(std::make_shared<Function>(std::move(f))) {}

  bool is_undefined() const { return v.index() == 0; }
  bool is_none() const { return v.index() == 1; }
  bool is_bool() const { return v.index() == 2; }
  bool is_int() const { return v.index() == 3; }
  bool is_float() const { return v.index() == 4; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_string() const { return v.index() == 5; }
  bool is_list() const { return v.index() == 6; }
  bool is_dict() const { return v.index() == 7; }
  bool is_namespace() const { return v.index() == 8; }
  bool is_callable() const { return v.index() == 9; }

  const std::string& str() const { return std::get<std::string>(v); }
  const List& list() const { return *std::get<6>(v); }
  const Dict& dict() const { return *std::get<7>(v); }
  Namespace& ns() const { return *std::get<8>(v); }
  Function& fn() const { return *std::get<9>(v); }
  bool boolean() const { return std::get<bool>(v); }
  /// int value of a bool, int or float (truncated); std::bad_variant_access otherwise.
  int64_t as_int() const {
    if (is_bool()) return boolean() ? 1 : 0;
    if (is_float()) return static_cast<int64_t>(std::get<double>(v));
    return std::get<int64_t>(v);
  }
  double as_double() const { return is_float() ? std::get<double>(v) : double(as_int()); }

  /// True for a tuple (a list that prints as `(a, b)`): tuple literals, dict.items() pairs.
  bool tuple = false;
};

/// Python's type name of `v` ("str", "list", "dict", "NoneType", "undefined", ...).
std::string type_name(const Value& v);
/// Python truth: empty str/list/dict, 0, None, undefined are false.
bool truthy(const Value& v);
/// Python ==, deep for lists and dicts; 1 == 1.0 == True.
bool equals(const Value& a, const Value& b);
/// Python str(v): None -> "None", True -> "True", 1.5 -> "1.5", lists/dicts as repr; undefined
/// -> "".
std::string to_str(const Value& v);
/// Python repr(v): strings quoted as Python quotes them.
std::string repr(const Value& v);
/// Python float repr: shortest round-trip digits, "1.0", "1e+16", "inf", "nan".
std::string float_repr(double d);

/// json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=sort_keys) as transformers'
/// tojson filter calls it (indent < 0: None). Throws std::invalid_argument for values JSON
/// cannot hold (undefined, namespace, callable).
std::string to_json(const Value& v, int indent, bool sort_keys);

/// JSON -> Value (objects keep their order).
Value from_json(const nlohmann::ordered_json& j);

/// Number of code points of a UTF-8 string.
int64_t utf8_size(std::string_view s);
/// The code points of `s`, each as its UTF-8 bytes.
std::vector<std::string> utf8_chars(std::string_view s);

/// A list marked as a tuple.
inline Value tuple_of(List items) {
  Value v(std::move(items));
  v.tuple = true;
  return v;
}

/// Looks `key` up in a dict; nullptr when absent.
const Value* dict_find(const Dict& d, std::string_view key);

}  // namespace loom::jinja
