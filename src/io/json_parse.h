// One depth-checked way to parse JSON that a user hands loom (config.json,
// --config files, JSONL rows, tokenizer files, trainer_state.json, ...).
// nlohmann::json builds and copies its DOM recursively, so a value nested
// hundreds of thousands of levels deep ("[[[[...]]]]") overflows the stack
// (SIGSEGV) long before any error can be reported. Every parse of a user file
// first runs check_json_depth(), a byte scan with no allocation, and refuses
// text nested deeper than kJsonMaxDepth.
// Assumes UTF-8/ASCII JSON text (RFC 8259); the scan counts '[' and '{'
// outside strings, which equals the nesting depth for valid JSON; invalid
// JSON is then rejected by the parser itself.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace loom::io {

/// Deepest nesting of arrays/objects accepted in a user's JSON file. Real
/// config.json, tokenizer.json and trainer_state.json files nest < 10 levels.
inline constexpr size_t kJsonMaxDepth = 1000;

/// Throws loom::Error "<where>: JSON nested deeper than 1000 levels (at byte
/// N)" when `text` opens more than `max_depth` arrays/objects at once;
/// `where` names the file (and line), e.g. "[config] out/config.json".
void check_json_depth(std::string_view text, const std::string& where,
                      size_t max_depth = kJsonMaxDepth);

/// Throws loom::Error "<where>: not valid JSON (<message>)" (parse_json's error).
[[noreturn]] void throw_invalid_json(const std::string& where, const char* message);

/// check_json_depth(), then parses `text` as a JSON value (nlohmann::json or
/// nlohmann::ordered_json). Throws loom::Error "<where>: not valid JSON
/// (<parser message>)" for a syntax error. Never lets a nlohmann exception out.
template <typename Json = nlohmann::json>
Json parse_json(std::string_view text, const std::string& where) {
  check_json_depth(text, where);
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw_invalid_json(where, e.what());
  }
}

}  // namespace loom::io
