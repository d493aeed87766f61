// Python operator semantics for chat templates (see operators.h).
#include "data/chat_template/operators.h"

#include <cmath>

#include "data/chat_template/builtins.h"

namespace loom::jinja {
namespace {

[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) throw EvalError(std::get<Undefined>(a.v).name);
  if (b.is_undefined()) throw EvalError(std::get<Undefined>(b.v).name);
  throw EvalError("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" +
                  type_name(b) + "'");
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value repeat(const Value& seq, int64_t n) {
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return out;
  }
  List out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
  return out;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  bool as_float = a.is_float() || b.is_float() || op == "/";
  if (op == "/" || op == "//" || op == "%") {
    if (b.as_double() == 0.0) throw EvalError("division by zero");
  }
  if (as_float) {
    double x = a.as_double();
    double y = b.as_double();
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "*") return x * y;
    if (op == "/") return x / y;
    if (op == "//") return std::floor(x / y);
    if (op == "%") return x - y * std::floor(x / y);
    return std::pow(x, y);
  }
  int64_t x = a.as_int();
  int64_t y = b.as_int();
  if (op == "+") return x + y;
  if (op == "-") return x - y;
  if (op == "*") return x * y;
  if (op == "//") return floor_div(x, y);
  if (op == "%") return x - y * floor_div(x, y);
  if (y < 0) return std::pow(double(x), double(y));
  int64_t r = 1;
  for (int64_t i = 0; i < y; ++i) r *= x;
  return r;
}

// Python's slice.indices(len): clamps start/stop for the step's direction.
void slice_indices(int64_t len, const Value& start, const Value& stop, int64_t step, int64_t& b,
                   int64_t& e) {
  auto clamp = [&](const Value& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    if (!v.is_number() || v.is_float()) throw EvalError("slice indices must be integers or None");
    int64_t i = v.as_int();
    if (i < 0) i += len;
    if (step > 0) return std::min(std::max(i, int64_t{0}), len);
    return std::min(std::max(i, int64_t{-1}), len - 1);
  };
  b = clamp(start, step > 0 ? 0 : len - 1);
  e = clamp(stop, step > 0 ? len : -1);
}

}  // namespace

Value unary_op(const std::string& op, const Value& v) {
  if (!v.is_number()) {
    if (v.is_undefined()) throw EvalError(std::get<Undefined>(v.v).name);
    throw EvalError("bad operand type for unary " + op + ": '" + type_name(v) + "'");
  }
  if (op == "+") return v.is_bool() ? Value(v.as_int()) : v;
  if (v.is_float()) return -v.as_double();
  return -v.as_int();
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return to_str(a) + to_str(b);
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) return a.str() + b.str();
    if (a.is_list() && b.is_list()) {
      List out = a.list();
      out.insert(out.end(), b.list().begin(), b.list().end());
      return out;
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && b.is_number() && !b.is_float())
      return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && a.is_number() && !a.is_float())
      return repeat(b, a.as_int());
  }
  bad_operands(op, a, b);
}

bool compare_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in") return contains(b, a);
  if (op == "notin") return !contains(b, a);
  if (a.is_undefined() || b.is_undefined()) bad_operands(op, a, b);
  if (op == "<") return less_than(a, b);
  if (op == ">") return less_than(b, a);
  if (op == "<=") return !less_than(b, a);
  return !less_than(a, b);  // >=
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) {
    throw EvalError(std::get<Undefined>(obj.v).name + " (reading an item of it)");
  }
  if (obj.is_dict() || obj.is_namespace()) {
    const Dict& d = obj.is_dict() ? obj.dict() : obj.ns().fields;
    if (key.is_string()) {
      if (const Value* v = dict_find(d, key.str())) return *v;
      return get_attr(obj, key.str());
    }
    return Undefined{"'dict object' has no item " + repr(key)};
  }
  if ((obj.is_list() || obj.is_string()) && key.is_number() && !key.is_float()) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      int64_t n = static_cast<int64_t>(obj.list().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n)
        return Undefined{"list index " + std::to_string(key.as_int()) + " out of range"};
      return obj.list()[static_cast<size_t>(i)];
    }
    std::vector<std::string> chars = utf8_chars(obj.str());
    int64_t n = static_cast<int64_t>(chars.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n)
      return Undefined{"string index " + std::to_string(key.as_int()) + " out of range"};
    return chars[static_cast<size_t>(i)];
  }
  if (key.is_string()) return get_attr(obj, key.str());
  return Undefined{"'" + type_name(obj) + " object' has no item " + repr(key)};
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step_v) {
  int64_t step = 1;
  if (!step_v.is_none()) {
    if (!step_v.is_number() || step_v.is_float()) throw EvalError("slice step must be an integer");
    step = step_v.as_int();
    if (step == 0) throw EvalError("slice step cannot be zero");
  }
  std::vector<Value> items;
  if (obj.is_list()) {
    items = obj.list();
  } else if (obj.is_string()) {
    for (std::string& c : utf8_chars(obj.str())) items.emplace_back(std::move(c));
  } else {
    if (obj.is_undefined()) throw EvalError(std::get<Undefined>(obj.v).name + " (slicing it)");
    throw EvalError("'" + type_name(obj) + "' object is not subscriptable");
  }
  int64_t b = 0;
  int64_t e = 0;
  slice_indices(static_cast<int64_t>(items.size()), start, stop, step, b, e);
  List out;
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step)
    out.push_back(items[static_cast<size_t>(i)]);
  if (obj.is_list()) return out;
  std::string s;
  for (const Value& c : out) s += c.str();
  return s;
}

}  // namespace loom::jinja
