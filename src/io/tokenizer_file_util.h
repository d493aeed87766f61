// Small helpers shared by the tokenizer file parsers (io/tokenizer_json.cpp,
// io/tokenizer_files.cpp): reading a whole file, and typed access to JSON values that turns
// every shape mismatch into a loom::Error naming the file and the JSON path of the field.
// Assumes nlohmann::json; never lets a nlohmann exception escape.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loom::io {

/// Reads a whole file as bytes. Throws loom::Error "[path] cannot open file" when it cannot.
std::string read_tokenizer_file(const std::string& path);

/// Parses JSON text; throws loom::Error "[source] invalid JSON: <parser message>".
nlohmann::json parse_tokenizer_json_text(std::string_view text, const std::string& source);

/// Typed JSON access with errors that name `source` and a dotted field path.
class JsonFields {
 public:
  explicit JsonFields(std::string source) : source_(std::move(source)) {}

  /// Throws loom::Error "[source] <where>: <what>".
  [[noreturn]] void fail(const std::string& where, const std::string& what) const;

  /// `value` must be an object (else loom::Error).
  void require_object(const nlohmann::json& value, const std::string& where) const;
  /// Member `key` of object `obj`, or nullptr when absent.
  const nlohmann::json* find(const nlohmann::json& obj, const char* key) const;
  /// Member `key`, which must exist (else loom::Error "missing field").
  const nlohmann::json& at(const nlohmann::json& obj, const char* key,
                           const std::string& where) const;

  bool get_bool(const nlohmann::json& obj, const char* key, bool fallback,
                const std::string& where) const;
  /// Optional bool: absent or null gives nullopt.
  std::optional<bool> get_opt_bool(const nlohmann::json& obj, const char* key,
                                   const std::string& where) const;
  /// Integer in [lo, hi]; absent or null gives `fallback`.
  int64_t get_int(const nlohmann::json& obj, const char* key, int64_t fallback, int64_t lo,
                  int64_t hi, const std::string& where) const;
  /// Integer value (not a member) in [lo, hi].
  int64_t as_int(const nlohmann::json& value, int64_t lo, int64_t hi,
                 const std::string& where) const;
  std::string get_string(const nlohmann::json& obj, const char* key, const std::string& fallback,
                         const std::string& where) const;
  /// Optional string: absent or null gives nullopt.
  std::optional<std::string> get_opt_string(const nlohmann::json& obj, const char* key,
                                            const std::string& where) const;
  /// String value (not a member).
  const std::string& as_string(const nlohmann::json& value, const std::string& where) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

/// Name of a JSON value's type for error messages ("string", "number", ...).
const char* json_type_name(const nlohmann::json& value);

}  // namespace loom::io
