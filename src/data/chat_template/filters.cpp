// Jinja2's builtin filters that chat templates use, specified from Jinja's "List of Builtin
// Filters" (jinja.palletsprojects.com/en/stable/templates/#builtin-filters), and transformers'
// tojson (chat_template_utils.py: json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys)). One table lists them all.
#include <algorithm>
#include <cmath>

#include "data/chat_template/builtins.h"

namespace loom::jinja {
namespace {

using FilterFn = Value (*)(const Value&, CallArgs&);

std::vector<Value> as_sequence(const Value& v, const char* filter) {
  if (v.is_list()) return v.list();
  if (v.is_undefined()) return {};
  if (v.is_string()) {
    std::vector<Value> out;
    for (std::string& c : utf8_chars(v.str())) out.emplace_back(std::move(c));
    return out;
  }
  if (v.is_dict()) {
    std::vector<Value> out;
    for (const auto& [k, e] : v.dict()) out.emplace_back(k);
    return out;
  }
  throw EvalError(std::string("filter '") + filter + "' needs a sequence, got " + type_name(v));
}

Value f_length(const Value& v, CallArgs&) {
  if (v.is_string()) return utf8_size(v.str());
  if (v.is_list()) return static_cast<int64_t>(v.list().size());
  if (v.is_dict()) return static_cast<int64_t>(v.dict().size());
  if (v.is_undefined()) return int64_t{0};
  throw EvalError("object of type '" + type_name(v) + "' has no len()");
}

Value f_trim(const Value& v, CallArgs& a) {
  std::optional<Value> chars = arg(a, 0, "chars");
  std::optional<std::string> set;
  if (chars && chars->is_string()) set = chars->str();
  return py_strip(to_str(v), set, true, true);
}

Value f_tojson(const Value& v, CallArgs& a) {
  std::optional<Value> indent = arg(a, 1, "indent");
  std::optional<Value> ascii = arg(a, 0, "ensure_ascii");
  std::optional<Value> seps = arg(a, 2, "separators");
  std::optional<Value> sort = arg(a, 3, "sort_keys");
  if ((ascii && truthy(*ascii)) || (seps && !seps->is_none())) {
    throw EvalError("tojson: ensure_ascii=true and separators are not supported");
  }
  int ind = indent && !indent->is_none() ? static_cast<int>(indent->as_int()) : -1;
  try {
    return to_json(v, ind, sort && truthy(*sort));
  } catch (const std::invalid_argument& e) {
    throw EvalError(std::string("tojson: ") + e.what());
  }
}

Value f_items(const Value& v, CallArgs&) {
  if (v.is_undefined()) return List{};
  if (!v.is_dict()) throw EvalError("filter 'items' needs a mapping, got " + type_name(v));
  List out;
  for (const auto& [k, e] : v.dict()) out.push_back(tuple_of(List{Value(k), e}));
  return out;
}

Value f_join(const Value& v, CallArgs& a) {
  std::optional<Value> sep = arg(a, 0, "d");
  std::optional<Value> attr = arg(a, 1, "attribute");
  std::string out;
  std::vector<Value> items = as_sequence(v, "join");
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0 && sep) out += to_str(*sep);
    out += to_str(attr ? get_attr(items[i], to_str(*attr)) : items[i]);
  }
  return out;
}

Value f_string(const Value& v, CallArgs&) { return to_str(v); }

Value f_int(const Value& v, CallArgs& a) {
  std::optional<Value> def = arg(a, 0, "default");
  if (v.is_number())
    return static_cast<int64_t>(v.is_float() ? std::trunc(v.as_double()) : v.as_int());
  if (v.is_string()) {
    try {
      size_t used = 0;
      std::string s = py_strip(v.str(), std::nullopt, true, true);
      int64_t i = std::stoll(s, &used);
      if (used == s.size()) return i;
      double d = std::stod(s, &used);
      if (used == s.size()) return static_cast<int64_t>(std::trunc(d));
    } catch (const std::exception&) {
    }
  }
  return def ? *def : Value(int64_t{0});
}

Value f_float(const Value& v, CallArgs& a) {
  std::optional<Value> def = arg(a, 0, "default");
  if (v.is_number()) return v.as_double();
  if (v.is_string()) {
    try {
      size_t used = 0;
      std::string s = py_strip(v.str(), std::nullopt, true, true);
      double d = std::stod(s, &used);
      if (used == s.size()) return d;
    } catch (const std::exception&) {
    }
  }
  return def ? *def : Value(0.0);
}

Value f_default(const Value& v, CallArgs& a) {
  std::optional<Value> def = arg(a, 0, "default_value");
  std::optional<Value> boolean = arg(a, 1, "boolean");
  bool use_default = v.is_undefined() || (boolean && truthy(*boolean) && !truthy(v));
  if (!use_default) return v;
  return def ? *def : Value(std::string());
}

Value f_first(const Value& v, CallArgs&) {
  std::vector<Value> s = as_sequence(v, "first");
  return s.empty() ? Value(Undefined{"first item of an empty sequence"}) : s.front();
}

Value f_last(const Value& v, CallArgs&) {
  std::vector<Value> s = as_sequence(v, "last");
  return s.empty() ? Value(Undefined{"last item of an empty sequence"}) : s.back();
}

Value f_list(const Value& v, CallArgs&) { return List(as_sequence(v, "list")); }

Value f_reverse(const Value& v, CallArgs&) {
  std::vector<Value> s = as_sequence(v, "reverse");
  std::reverse(s.begin(), s.end());
  if (!v.is_string()) return List(std::move(s));
  std::string out;
  for (const Value& c : s) out += c.str();
  return out;
}

Value case_filter(const Value& v, const char* method) {
  CallArgs none;
  return bound_method(Value(to_str(v)), method)->fn()(none);
}
Value f_upper(const Value& v, CallArgs&) { return case_filter(v, "upper"); }
Value f_lower(const Value& v, CallArgs&) { return case_filter(v, "lower"); }
Value f_title(const Value& v, CallArgs&) { return case_filter(v, "title"); }
Value f_capitalize(const Value& v, CallArgs&) { return case_filter(v, "capitalize"); }

Value f_replace(const Value& v, CallArgs& a) {
  return bound_method(Value(to_str(v)), "replace")->fn()(a);
}

Value f_safe(const Value& v, CallArgs&) { return v; }

Value f_abs(const Value& v, CallArgs&) {
  if (v.is_float()) return std::fabs(v.as_double());
  if (v.is_number()) return std::abs(v.as_int());
  throw EvalError("bad operand type for abs(): '" + type_name(v) + "'");
}

// select/reject/selectattr/rejectattr: the test (default: truth) decides each item.
Value select_items(const Value& v, CallArgs& a, bool by_attr, bool keep) {
  std::vector<Value> items = as_sequence(v, "select");
  size_t first_test_arg = by_attr ? 1 : 0;
  std::optional<std::string> attr;
  if (by_attr) {
    if (a.args.empty() || !a.args[0].is_string())
      throw EvalError("selectattr needs an attribute name");
    attr = a.args[0].str();
  }
  std::optional<std::string> test;
  CallArgs test_args;
  if (a.args.size() > first_test_arg) {
    if (!a.args[first_test_arg].is_string())
      throw EvalError("select: the test name must be a string");
    test = a.args[first_test_arg].str();
    if (!is_test(*test)) throw EvalError("unsupported test '" + *test + "'");
    test_args.args.assign(a.args.begin() + static_cast<long>(first_test_arg) + 1, a.args.end());
  }
  List out;
  for (const Value& item : items) {
    Value subject = attr ? get_attr(item, *attr) : item;
    bool pass = test ? apply_test(*test, subject, test_args) : truthy(subject);
    if (pass == keep) out.push_back(item);
  }
  return out;
}
Value f_select(const Value& v, CallArgs& a) { return select_items(v, a, false, true); }
Value f_reject(const Value& v, CallArgs& a) { return select_items(v, a, false, false); }
Value f_selectattr(const Value& v, CallArgs& a) { return select_items(v, a, true, true); }
Value f_rejectattr(const Value& v, CallArgs& a) { return select_items(v, a, true, false); }

Value f_map(const Value& v, CallArgs& a) {
  std::vector<Value> items = as_sequence(v, "map");
  List out;
  std::optional<Value> attr = arg(a, 99, "attribute");
  if (attr) {
    std::optional<Value> def = arg(a, 99, "default");
    for (const Value& item : items) {
      Value got = get_attr(item, to_str(*attr));
      out.push_back(got.is_undefined() && def ? *def : got);
    }
    return out;
  }
  if (a.args.empty() || !a.args[0].is_string())
    throw EvalError("map needs a filter name or attribute=");
  std::string filter = a.args[0].str();
  if (!is_filter(filter)) throw EvalError("unsupported filter '" + filter + "'");
  CallArgs rest;
  rest.args.assign(a.args.begin() + 1, a.args.end());
  rest.kwargs = a.kwargs;
  for (const Value& item : items) out.push_back(apply_filter(filter, item, rest));
  return out;
}

Value f_sort(const Value& v, CallArgs& a) {
  std::vector<Value> items = as_sequence(v, "sort");
  std::optional<Value> rev = arg(a, 0, "reverse");
  std::optional<Value> cs = arg(a, 1, "case_sensitive");
  std::optional<Value> attr = arg(a, 2, "attribute");
  auto key = [&](const Value& x) {
    Value k = attr ? get_attr(x, to_str(*attr)) : x;
    if (k.is_string() && !(cs && truthy(*cs))) return case_filter(k, "lower");
    return k;
  };
  std::stable_sort(items.begin(), items.end(),
                   [&](const Value& x, const Value& y) { return less_than(key(x), key(y)); });
  if (rev && truthy(*rev)) std::reverse(items.begin(), items.end());
  return List(std::move(items));
}

struct FilterEntry {
  const char* name;
  FilterFn fn;
};
constexpr FilterEntry kFilters[] = {
    {"abs", f_abs},
    {"capitalize", f_capitalize},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"first", f_first},
    {"float", f_float},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"sort", f_sort},
    {"string", f_string},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"upper", f_upper},
};

}  // namespace

bool is_filter(std::string_view name) {
  for (const FilterEntry& f : kFilters) {
    if (name == f.name) return true;
  }
  return false;
}

Value apply_filter(const std::string& name, const Value& value, CallArgs& args) {
  for (const FilterEntry& f : kFilters) {
    if (name == f.name) return f.fn(value, args);
  }
  throw EvalError("unsupported filter '" + name + "'");
}

}  // namespace loom::jinja
