// Implementation of the tokenizer file helpers: file reading and typed JSON access whose
// every failure is a loom::Error "[file] field: fault". See io/tokenizer_file_util.h.
#include "io/tokenizer_file_util.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include "io/json_parse.h"
#include "loom/error.h"

namespace loom::io {

std::string read_tokenizer_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "[", path, "] cannot open file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  LOOM_CHECK(!in.bad(), "[", path, "] read error");
  return buffer.str();
}

nlohmann::json parse_tokenizer_json_text(std::string_view text, const std::string& source) {
  check_json_depth(text, "[" + source + "]");
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    fail("[", source, "] invalid JSON: ", e.what());
  }
}

const char* json_type_name(const nlohmann::json& value) { return value.type_name(); }

void JsonFields::fail(const std::string& where, const std::string& what) const {
  ::loom::fail("[", source_, "] ", where.empty() ? "top level" : where, ": ", what);
}

void JsonFields::require_object(const nlohmann::json& value, const std::string& where) const {
  if (!value.is_object()) fail(where, std::string("expected an object, got ") + value.type_name());
}

const nlohmann::json* JsonFields::find(const nlohmann::json& obj, const char* key) const {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

const nlohmann::json& JsonFields::at(const nlohmann::json& obj, const char* key,
                                     const std::string& where) const {
  require_object(obj, where);
  const nlohmann::json* v = find(obj, key);
  if (v == nullptr) fail(where, std::string("missing field '") + key + "'");
  return *v;
}

static std::string join_path(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

bool JsonFields::get_bool(const nlohmann::json& obj, const char* key, bool fallback,
                          const std::string& where) const {
  std::optional<bool> v = get_opt_bool(obj, key, where);
  return v.value_or(fallback);
}

std::optional<bool> JsonFields::get_opt_bool(const nlohmann::json& obj, const char* key,
                                             const std::string& where) const {
  const nlohmann::json* v = find(obj, key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_boolean()) {
    fail(join_path(where, key), std::string("expected a boolean, got ") + v->type_name());
  }
  return v->get<bool>();
}

int64_t JsonFields::as_int(const nlohmann::json& value, int64_t lo, int64_t hi,
                           const std::string& where) const {
  int64_t x = 0;
  if (value.is_number_unsigned()) {
    uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) {
      fail(where, "value " + std::to_string(u) + " outside [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
    }
    x = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    x = value.get<int64_t>();
  } else {
    fail(where, std::string("expected an integer, got ") + value.type_name());
  }
  if (x < lo || x > hi) {
    fail(where, "value " + std::to_string(x) + " outside [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "]");
  }
  return x;
}

int64_t JsonFields::get_int(const nlohmann::json& obj, const char* key, int64_t fallback,
                            int64_t lo, int64_t hi, const std::string& where) const {
  const nlohmann::json* v = find(obj, key);
  if (v == nullptr || v->is_null()) return fallback;
  return as_int(*v, lo, hi, join_path(where, key));
}

std::string JsonFields::get_string(const nlohmann::json& obj, const char* key,
                                   const std::string& fallback, const std::string& where) const {
  std::optional<std::string> v = get_opt_string(obj, key, where);
  return v ? *v : fallback;
}

std::optional<std::string> JsonFields::get_opt_string(const nlohmann::json& obj, const char* key,
                                                      const std::string& where) const {
  const nlohmann::json* v = find(obj, key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  return as_string(*v, join_path(where, key));
}

const std::string& JsonFields::as_string(const nlohmann::json& value,
                                         const std::string& where) const {
  if (!value.is_string()) fail(where, std::string("expected a string, got ") + value.type_name());
  return value.get_ref<const std::string&>();
}

}  // namespace loom::io
