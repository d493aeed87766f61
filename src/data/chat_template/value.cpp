// Python semantics of chat-template values: truth, equality, str(), repr(), json.dumps.
// Sources: the Python language reference (truth value testing, comparisons), float.__repr__
// (shortest repr, scientific below 1e-4 and from 1e16), and json.dumps's documented defaults
// (separators ', ' and ': ', or ',' with an indent; ensure_ascii=False writes non-ASCII as is).
#include "data/chat_template/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/json_string.h"

namespace loom::jinja {

std::string type_name(const Value& v) {
  static const char* const kNames[] = {"undefined", "NoneType", "bool", "int",       "float",
                                       "str",       "list",     "dict", "Namespace", "function"};
  return kNames[v.v.index()];
}

bool truthy(const Value& v) {
  switch (v.v.index()) {
    case 0:
    case 1:
      return false;
    case 2:
      return v.boolean();
    case 3:
      return v.as_int() != 0;
    case 4:
      return v.as_double() != 0.0;
    case 5:
      return !v.str().empty();
    case 6:
      return !v.list().empty();
    case 7:
      return !v.dict().empty();
    default:
      return true;
  }
}

const Value* dict_find(const Dict& d, std::string_view key) {
  for (const auto& [k, val] : d) {
    if (k == key) return &val;
  }
  return nullptr;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.v.index() != b.v.index()) return false;
  if (a.is_undefined() || a.is_none()) return true;
  if (a.is_string()) return a.str() == b.str();
  if (a.is_list()) {
    if (a.tuple != b.tuple) return false;  // Python: (1,) != [1]
    const List& x = a.list();
    const List& y = b.list();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!equals(x[i], y[i])) return false;
    }
    return true;
  }
  if (a.is_dict()) {
    const Dict& x = a.dict();
    const Dict& y = b.dict();
    if (x.size() != y.size()) return false;
    for (const auto& [k, val] : x) {
      const Value* other = dict_find(y, k);
      if (other == nullptr || !equals(val, *other)) return false;
    }
    return true;
  }
  if (a.is_namespace()) return &a.ns() == &b.ns();
  return &a.fn() == &b.fn();
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  int exp = std::stoi(sci.substr(e + 1));
  std::string sign;
  if (mant[0] == '-') {
    sign = "-";
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  if (exp < -4 || exp >= 16) {
    std::string m = digits.substr(0, 1);
    if (digits.size() > 1) m += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return sign + m + ebuf;
  }
  if (exp < 0) return sign + "0." + std::string(-exp - 1, '0') + digits;
  if (static_cast<int>(digits.size()) <= exp + 1) {
    return sign + digits + std::string(exp + 1 - digits.size(), '0') + ".0";
  }
  return sign + digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
}

static std::string python_quote(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == q) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

std::string repr(const Value& v) {
  if (v.is_string()) return python_quote(v.str());
  if (v.is_list()) {
    std::string out = v.tuple ? "(" : "[";
    for (size_t i = 0; i < v.list().size(); ++i) {
      if (i > 0) out += ", ";
      out += repr(v.list()[i]);
    }
    if (v.tuple && v.list().size() == 1) out += ",";
    return out + (v.tuple ? ")" : "]");
  }
  if (v.is_dict()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, val] : v.dict()) {
      if (!first) out += ", ";
      first = false;
      out += python_quote(k) + ": " + repr(val);
    }
    return out + "}";
  }
  return to_str(v);
}

std::string to_str(const Value& v) {
  switch (v.v.index()) {
    case 0:
      return "";
    case 1:
      return "None";
    case 2:
      return v.boolean() ? "True" : "False";
    case 3:
      return std::to_string(v.as_int());
    case 4:
      return float_repr(v.as_double());
    case 5:
      return v.str();
    case 8:
      return "<Namespace>";
    case 9:
      return "<function>";
    default:
      return repr(v);
  }
}

static void json_write(const Value& v, int indent, bool sort_keys, int level, std::string& out) {
  auto newline = [&](int lvl) {
    if (indent >= 0) out += "\n" + std::string(static_cast<size_t>(indent * lvl), ' ');
  };
  const char* item_sep = indent >= 0 ? "," : ", ";
  if (v.is_none()) {
    out += "null";
  } else if (v.is_bool()) {
    out += v.boolean() ? "true" : "false";
  } else if (v.is_int()) {
    out += std::to_string(v.as_int());
  } else if (v.is_float()) {
    double d = v.as_double();
    out += std::isnan(d)   ? "NaN"
           : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity")
                           : float_repr(d);
  } else if (v.is_string()) {
    append_json_string(out, v.str());
  } else if (v.is_list()) {
    if (v.list().empty()) {
      out += "[]";
      return;
    }
    out += "[";
    for (size_t i = 0; i < v.list().size(); ++i) {
      if (i > 0) out += item_sep;
      newline(level + 1);
      json_write(v.list()[i], indent, sort_keys, level + 1, out);
    }
    newline(level);
    out += "]";
  } else if (v.is_dict()) {
    if (v.dict().empty()) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value>*> items;
    for (const auto& kv : v.dict()) items.push_back(&kv);
    if (sort_keys) {
      std::stable_sort(items.begin(), items.end(),
                       [](const auto* a, const auto* b) { return a->first < b->first; });
    }
    out += "{";
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += item_sep;
      newline(level + 1);
      append_json_string(out, items[i]->first);
      out += ": ";
      json_write(items[i]->second, indent, sort_keys, level + 1, out);
    }
    newline(level);
    out += "}";
  } else {
    throw std::invalid_argument("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

std::string to_json(const Value& v, int indent, bool sort_keys) {
  std::string out;
  json_write(v, indent, sort_keys, 0, out);
  return out;
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return NoneType{};
    case nlohmann::ordered_json::value_t::boolean:
      return j.get<bool>();
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned:
      return j.get<int64_t>();
    case nlohmann::ordered_json::value_t::number_float:
      return j.get<double>();
    case nlohmann::ordered_json::value_t::string:
      return j.get<std::string>();
    case nlohmann::ordered_json::value_t::array: {
      List l;
      for (const auto& e : j) l.push_back(from_json(e));
      return l;
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (const auto& [k, e] : j.items()) d.emplace_back(k, from_json(e));
      return d;
    }
    default:
      return NoneType{};
  }
}

int64_t utf8_size(std::string_view s) {
  int64_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::vector<std::string> utf8_chars(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t j = i + 1;
    while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
    out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace loom::jinja
