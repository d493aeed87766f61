// Decimal number parsing for user text (command-line flags, --config_overrides,
// CSV cells): one rule everywhere, as Python's int() / float() read what
// argparse hands transformers' HfArgumentParser — base 10 only.
//   integer: [+|-]digits, within int64 ("0x10", "1e3", " 7", "1.0" are not);
//   number:  [+|-](digits[.digits] | .digits)[(e|E)[+|-]digits], or inf /
//            infinity / nan in any case (Python's float() spellings); never
//            hexadecimal ("0x10", std::stod's extension) nor above the double range;
//            below the smallest subnormal it is 0 ("1e-400", as Python).
// Assumes nothing; never throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace loom {

/// Why a text is not a number.
enum class NumberError {
  kNone,
  kSyntax,    ///< not decimal digits (hex, spaces, trailing text, empty)
  kOverflow,  ///< decimal digits outside int64 / double range
};

/// A decimal int64, or nullopt (the reason in *error when given).
std::optional<int64_t> parse_decimal_int(std::string_view text, NumberError* error = nullptr);

/// A decimal double (see above), or nullopt (the reason in *error when given).
std::optional<double> parse_decimal_double(std::string_view text, NumberError* error = nullptr);

/// "an integer" / "an integer within int64 [-9223372036854775808,
/// 9223372036854775807]" for error messages after parse_decimal_int failed.
const char* int_expectation(NumberError error);
/// "a number" / "a number within the double range (...)" for messages.
const char* double_expectation(NumberError error);

}  // namespace loom
