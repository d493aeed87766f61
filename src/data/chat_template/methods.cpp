// Python's object protocol as chat templates use it: str and dict methods
// (`content.strip()`, `message.items()`, ...), attribute lookup, `in` and `<`. Semantics: the
// Python library reference (str.split, str.strip, str.replace, str.title, dict.get, ...). Mutating
// methods (list.append, dict.update) are absent on purpose: transformers renders in an immutable
// sandbox, which refuses them.
#include <algorithm>
#include <cctype>

#include "data/chat_template/builtins.h"

namespace loom::jinja {
namespace {

// Python's str.isspace() code points (Unicode White_Space plus U+001C..U+001F).
bool is_py_space(std::string_view ch) {
  static const char* const kSpaces[] = {" ",
                                        "\t",
                                        "\n",
                                        "\r",
                                        "\v",
                                        "\f",
                                        "\x1c",
                                        "\x1d",
                                        "\x1e",
                                        "\x1f",
                                        "\xc2\x85",
                                        "\xc2\xa0",
                                        "\xe1\x9a\x80",
                                        "\xe2\x80\x80",
                                        "\xe2\x80\x81",
                                        "\xe2\x80\x82",
                                        "\xe2\x80\x83",
                                        "\xe2\x80\x84",
                                        "\xe2\x80\x85",
                                        "\xe2\x80\x86",
                                        "\xe2\x80\x87",
                                        "\xe2\x80\x88",
                                        "\xe2\x80\x89",
                                        "\xe2\x80\x8a",
                                        "\xe2\x80\xa8",
                                        "\xe2\x80\xa9",
                                        "\xe2\x80\xaf",
                                        "\xe2\x81\x9f",
                                        "\xe3\x80\x80"};
  for (const char* s : kSpaces) {
    if (ch == s) return true;
  }
  return false;
}

std::string str_arg(const CallArgs& a, size_t i, const char* name, const char* method) {
  std::optional<Value> v = arg(a, i, name);
  if (!v || !v->is_string()) {
    throw EvalError(std::string("str.") + method + "() needs a string argument '" + name + "'");
  }
  return v->str();
}

std::vector<Value> py_split(const std::string& s, const std::optional<std::string>& sep,
                            int64_t maxsplit) {
  std::vector<Value> out;
  if (sep) {
    if (sep->empty()) throw EvalError("str.split(): empty separator");
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t at = s.find(*sep, start);
      if (at == std::string::npos) break;
      out.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    out.emplace_back(s.substr(start));
    return out;
  }
  std::vector<std::string> chars = utf8_chars(s);
  size_t i = 0;
  while (true) {
    while (i < chars.size() && is_py_space(chars[i])) ++i;
    if (i >= chars.size()) break;
    std::string word;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      for (; i < chars.size(); ++i) word += chars[i];
      // Python keeps the remainder as is, but strips its trailing whitespace.
      out.emplace_back(py_strip(word, std::nullopt, false, true));
      break;
    }
    while (i < chars.size() && !is_py_space(chars[i])) word += chars[i++];
    out.emplace_back(word);
  }
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to,
                        int64_t count) {
  std::string out;
  if (from.empty()) {
    std::vector<std::string> chars = utf8_chars(s);
    int64_t n = 0;
    for (const std::string& c : chars) {
      if (count < 0 || n++ < count) out += to;
      out += c;
    }
    if (count < 0 || n < count) out += to;
    return out;
  }
  size_t start = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    size_t at = s.find(from, start);
    if (at == std::string::npos) break;
    out += s.substr(start, at - start) + to;
    start = at + from.size();
    ++n;
  }
  return out + s.substr(start);
}

// ASCII case mapping only; non-ASCII letters are left as they are (a documented limit).
std::string map_case(const std::string& s, int mode) {
  std::string out = s;
  bool prev_cased = false;
  for (size_t i = 0; i < out.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(out[i]);
    bool alpha = std::isalpha(c);
    if (mode == 0) out[i] = static_cast<char>(std::tolower(c));
    if (mode == 1) out[i] = static_cast<char>(std::toupper(c));
    if (mode == 2) {  // title: first cased letter after a non-letter is upper, others lower
      out[i] = static_cast<char>(prev_cased ? std::tolower(c) : std::toupper(c));
    }
    if (mode == 3) out[i] = static_cast<char>(i == 0 ? std::toupper(c) : std::tolower(c));
    prev_cased = alpha;
  }
  return out;
}

Value string_method(const std::string& s, const std::string& name, CallArgs& a) {
  auto opt_str = [&](size_t i, const char* key) -> std::optional<std::string> {
    std::optional<Value> v = arg(a, i, key);
    if (!v || v->is_none()) return std::nullopt;
    if (!v->is_string()) throw EvalError("str." + name + "() needs a string argument");
    return v->str();
  };
  if (name == "strip") return py_strip(s, opt_str(0, "chars"), true, true);
  if (name == "lstrip") return py_strip(s, opt_str(0, "chars"), true, false);
  if (name == "rstrip") return py_strip(s, opt_str(0, "chars"), false, true);
  if (name == "startswith" || name == "endswith") {
    std::optional<Value> p = arg(a, 0, "prefix");
    std::vector<std::string> options;
    if (p && p->is_string()) options.push_back(p->str());
    if (p && p->is_list()) {
      for (const Value& e : p->list()) {
        if (e.is_string()) options.push_back(e.str());
      }
    }
    if (options.empty()) throw EvalError("str." + name + "() needs a string argument");
    for (const std::string& o : options) {
      bool hit = name == "startswith"
                     ? s.compare(0, o.size(), o) == 0
                     : s.size() >= o.size() && s.compare(s.size() - o.size(), o.size(), o) == 0;
      if (hit) return true;
    }
    return false;
  }
  if (name == "split") {
    std::optional<Value> m = arg(a, 1, "maxsplit");
    return List(py_split(s, opt_str(0, "sep"), m ? m->as_int() : -1));
  }
  if (name == "replace") {
    std::optional<Value> c = arg(a, 2, "count");
    return replace_all(s, str_arg(a, 0, "old", "replace"), str_arg(a, 1, "new", "replace"),
                       c ? c->as_int() : -1);
  }
  if (name == "lower") return map_case(s, 0);
  if (name == "upper") return map_case(s, 1);
  if (name == "title") return map_case(s, 2);
  if (name == "capitalize") return map_case(s, 3);
  if (name == "find") {
    size_t at = s.find(str_arg(a, 0, "sub", "find"));
    return at == std::string::npos ? int64_t{-1} : utf8_size(std::string_view(s).substr(0, at));
  }
  if (name == "count") {
    std::string sub = str_arg(a, 0, "sub", "count");
    if (sub.empty()) return utf8_size(s) + 1;
    int64_t n = 0;
    for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
    return n;
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace") {
    if (s.empty()) return false;
    for (unsigned char c : s) {
      int ok = name == "isdigit"   ? std::isdigit(c)
               : name == "isalpha" ? std::isalpha(c)
                                   : std::isspace(c);
      if (!ok) return false;
    }
    return true;
  }
  if (name == "join") {
    std::optional<Value> items = arg(a, 0, "iterable");
    if (!items || !items->is_list()) throw EvalError("str.join() needs a list");
    std::string out;
    for (size_t i = 0; i < items->list().size(); ++i) {
      if (i > 0) out += s;
      out += to_str(items->list()[i]);
    }
    return out;
  }
  throw EvalError("str has no method '" + name + "'");
}

Value dict_method(const Dict& d, const std::string& name, CallArgs& a) {
  if (name == "items") {
    List out;
    for (const auto& [k, v] : d) out.push_back(tuple_of(List{Value(k), v}));
    return out;
  }
  if (name == "keys" || name == "values") {
    List out;
    for (const auto& [k, v] : d) out.push_back(name == "keys" ? Value(k) : v);
    return out;
  }
  // get
  std::optional<Value> key = arg(a, 0, "key");
  if (!key) throw EvalError("dict.get() needs a key");
  const Value* hit = key->is_string() ? dict_find(d, key->str()) : nullptr;
  if (hit != nullptr) return *hit;
  std::optional<Value> def = arg(a, 1, "default");
  return def ? *def : Value(NoneType{});
}

}  // namespace

std::optional<Value> arg(const CallArgs& a, size_t index, const char* name) {
  for (const auto& [k, v] : a.kwargs) {
    if (k == name) return v;
  }
  if (index < a.args.size()) return a.args[index];
  return std::nullopt;
}

std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left,
                     bool right) {
  std::vector<std::string> cs = utf8_chars(s);
  std::vector<std::string> set;
  if (chars) set = utf8_chars(*chars);
  auto strip_me = [&](const std::string& c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : is_py_space(c);
  };
  size_t b = 0;
  size_t e = cs.size();
  while (left && b < e && strip_me(cs[b])) ++b;
  while (right && e > b && strip_me(cs[e - 1])) --e;
  std::string out;
  for (size_t i = b; i < e; ++i) out += cs[i];
  return out;
}

std::optional<Value> bound_method(const Value& obj, const std::string& name) {
  static const char* const kStr[] = {"strip",      "lstrip",  "rstrip", "startswith", "endswith",
                                     "split",      "replace", "lower",  "upper",      "title",
                                     "capitalize", "find",    "count",  "isdigit",    "isalpha",
                                     "isspace",    "join"};
  static const char* const kDict[] = {"items", "keys", "values", "get"};
  if (obj.is_string()) {
    for (const char* m : kStr) {
      if (name == m) {
        std::string s = obj.str();
        return Value(Function([s, name](CallArgs& a) { return string_method(s, name, a); }));
      }
    }
  } else if (obj.is_dict()) {
    for (const char* m : kDict) {
      if (name == m) {
        Value d = obj;
        return Value(Function([d, name](CallArgs& a) { return dict_method(d.dict(), name, a); }));
      }
    }
  }
  return std::nullopt;
}

bool contains(const Value& haystack, const Value& needle) {
  if (haystack.is_string()) {
    if (!needle.is_string()) {
      throw EvalError("'in <string>' requires a string as left operand, not " + type_name(needle));
    }
    return haystack.str().find(needle.str()) != std::string::npos;
  }
  if (haystack.is_list()) {
    for (const Value& e : haystack.list()) {
      if (equals(e, needle)) return true;
    }
    return false;
  }
  if (haystack.is_dict()) {
    return needle.is_string() && dict_find(haystack.dict(), needle.str()) != nullptr;
  }
  if (haystack.is_namespace()) {
    return needle.is_string() && dict_find(haystack.ns().fields, needle.str()) != nullptr;
  }
  if (haystack.is_undefined()) return false;  // Jinja's Undefined iterates as empty
  throw EvalError("argument of type '" + type_name(haystack) + "' is not iterable");
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) {
    const std::string& hint = std::get<Undefined>(obj.v).name;
    throw EvalError((hint.empty() ? std::string("a value is undefined") : hint) +
                    " (reading its attribute '" + name + "')");
  }
  if (std::optional<Value> m = bound_method(obj, name)) return *m;
  if (obj.is_dict()) {
    if (const Value* v = dict_find(obj.dict(), name)) return *v;
  } else if (obj.is_namespace()) {
    if (const Value* v = dict_find(obj.ns().fields, name)) return *v;
  }
  return Undefined{"'" + type_name(obj) + " object' has no attribute '" + name + "'"};
}

bool less_than(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_list() && b.is_list()) {
    const List& x = a.list();
    const List& y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return less_than(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw EvalError("'<' not supported between instances of '" + type_name(a) + "' and '" +
                  type_name(b) + "'");
}

}  // namespace loom::jinja
