// CLI11 validators that hold the plain CLI11 options of `loom generate` (and
// any other subcommand not built on FlagSet) to loom's one number rule,
// core/parse_number.h: decimal only, within int64 / double. CLI11's own
// conversion reads "0x10" as 16 and "0b11" as 3; these run first and refuse
// them, so the error is "--top_k: expected an integer, got '0x10'".
// Assumes CLI11 2.x (Validator(std::function<std::string(std::string&)>, desc)).
#pragma once

#include <cmath>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/parse_number.h"

namespace loom::cli {

/// Accepts what parse_decimal_int accepts; otherwise CLI11 reports
/// "<flag>: expected an integer[ within int64 ...], got '<text>'".
inline CLI::Validator decimal_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        NumberError why = NumberError::kNone;
        if (parse_decimal_int(text, &why)) return "";
        return std::string("expected ") + int_expectation(why) + ", got '" + text + "'";
      },
      "INT");
}

/// Accepts what parse_decimal_double accepts (finite values only).
inline CLI::Validator decimal_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        NumberError why = NumberError::kNone;
        std::optional<double> v = parse_decimal_double(text, &why);
        if (v && std::isfinite(*v)) return "";
        return std::string("expected ") + (v ? "a finite number" : double_expectation(why)) +
               ", got '" + text + "'";
      },
      "FLOAT");
}

}  // namespace loom::cli
