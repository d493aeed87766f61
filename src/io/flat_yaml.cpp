// parse_flat_yaml (flat_yaml.h): a line scanner for one flat YAML mapping of
// scalars and lists of scalars; every other YAML construct is an error that
// names the line. Assumes UTF-8 text; only ASCII characters are syntax.
#include "io/flat_yaml.h"

#include <cctype>
#include <string>
#include <vector>

#include "loom/error.h"

namespace loom::io {
namespace {

struct YamlLine {
  const std::string& where;
  int number;
  [[noreturn]] void fail(const std::string& what) const {
    ::loom::fail(where, ":", number, ": ", what);
  }
};

// `s` without a comment ('#' at the start or after a blank, outside quotes)
// and without trailing blanks.
std::string yaml_strip_comment(const std::string& s) {
  char quote = 0;
  size_t end = s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\' && quote == '"')
        ++i;
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      end = i;
      break;
    }
  }
  while (end > 0 && (s[end - 1] == ' ' || s[end - 1] == '\t')) --end;
  return s.substr(0, end);
}

// A double-quoted scalar's body (between the quotes) with its escapes.
std::string yaml_unescape(const std::string& body, const YamlLine& at) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\') {
      out += body[i];
      continue;
    }
    if (++i == body.size()) at.fail("a double-quoted string ends in a backslash");
    switch (body[i]) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      default:
        at.fail(std::string("the escape \\") + body[i] + " is not supported");
    }
  }
  return out;
}

// One scalar (already trimmed): a quoted string, null, or plain text.
nlohmann::ordered_json yaml_scalar(const std::string& v, const YamlLine& at) {
  if (v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL") return nullptr;
  const char c = v[0];
  if (c == '"' || c == '\'') {
    if (v.size() < 2 || v.back() != c) at.fail("a quoted string does not end on its line");
    std::string body = v.substr(1, v.size() - 2);
    if (c == '"') return yaml_unescape(body, at);
    std::string out;  // single quotes: '' is one quote
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i] == '\'' && (i + 1 == body.size() || body[++i] != '\''))
        at.fail("a single-quoted string has a lone quote inside");
      out += body[i];
    }
    return out;
  }
  if (c == '|' || c == '>') at.fail("block scalars (| and >) are not supported");
  if (c == '&' || c == '*') at.fail("anchors and aliases (& and *) are not supported");
  if (c == '!') at.fail("tags (!) are not supported");
  if (c == '{') at.fail("flow mappings ({...}) are not supported (a config is flat: name: value)");
  if (c == '[') at.fail("nested lists are not supported");
  if (c == '-' && (v.size() == 1 || v[1] == ' ')) at.fail("nested lists are not supported");
  if (v.find(": ") != std::string::npos || v.back() == ':')
    at.fail("nested mappings are not supported (a config is flat: name: value)");
  return v;
}

std::string yaml_trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// "[a, 'b', c]" -> ["a", "b", "c"]; commas inside quotes stay.
nlohmann::ordered_json yaml_flow_list(const std::string& v, const YamlLine& at) {
  if (v.back() != ']') at.fail("a flow list ([...]) does not end on its line");
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  std::string body = v.substr(1, v.size() - 2), item;
  if (yaml_trim(body).empty()) return list;
  char quote = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    char c = i < body.size() ? body[i] : ',';
    if (quote) {
      if (c == quote) quote = 0;
      item += c;
    } else if (c == ',') {
      std::string t = yaml_trim(item);
      if (t.empty()) at.fail("an empty item in a flow list");
      list.push_back(yaml_scalar(t, at));
      item.clear();
    } else {
      if (c == '"' || c == '\'') quote = c;
      item += c;
    }
  }
  return list;
}

bool yaml_is_key(const std::string& k) {
  if (k.empty()) return false;
  for (char c : k)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return false;
  return true;
}

}  // namespace

nlohmann::ordered_json parse_flat_yaml(std::string_view text, const std::string& where) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  std::string pending;  // a key given as "key:" whose value may be a block list
  bool content = false;
  size_t start = 0;
  for (int number = 1; start <= text.size(); ++number) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string raw(text.substr(start, nl - start));
    start = nl + 1;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const YamlLine at{where, number};
    const size_t indent = raw.find_first_not_of(' ');
    if (indent != std::string::npos && raw[indent] == '\t')
      at.fail("a tab in the indentation (YAML indents with spaces)");
    std::string line = yaml_strip_comment(raw);
    if (yaml_trim(line).empty()) continue;
    if (line == "---" && !content) continue;
    if (line == "---" || line == "...") at.fail("several YAML documents in one config");
    content = true;
    std::string body = yaml_trim(line);
    if (body[0] == '-' && (body.size() == 1 || body[1] == ' ')) {
      if (pending.empty()) at.fail("a list item ('- ...') outside a list");
      nlohmann::ordered_json& list = out[pending];
      if (list.is_null()) list = nlohmann::ordered_json::array();
      list.push_back(yaml_scalar(yaml_trim(body.substr(1)), at));
      continue;
    }
    if (indent > 0) at.fail("nested mappings are not supported (a config is flat: name: value)");
    pending.clear();
    size_t colon = body.find(": ");
    if (colon == std::string::npos && body.back() == ':') colon = body.size() - 1;
    if (colon == std::string::npos) at.fail("expected 'name: value', got '" + body + "'");
    std::string key = yaml_trim(body.substr(0, colon));
    if (!yaml_is_key(key)) at.fail("'" + key + "' is not an argument name");
    if (out.contains(key)) at.fail("'" + key + "' is given twice");
    std::string value = yaml_trim(body.substr(colon + 1));
    if (value.empty()) {
      out[key] = nullptr;  // null unless block-list items follow
      pending = key;
    } else {
      out[key] = value[0] == '[' ? yaml_flow_list(value, at) : yaml_scalar(value, at);
    }
  }
  return out;
}

}  // namespace loom::io
