// parse_decimal_int / parse_decimal_double: a strict syntax check on the
// bytes, then std::from_chars (base 10; chars_format::general, which reads
// no hexadecimal), whose result_out_of_range is the overflow report (or, below the smallest
// subnormal, an underflow to 0 as Python's float()). See
// core/parse_number.h.
#include "core/parse_number.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <string>

namespace loom {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::optional<int64_t> fail_with(NumberError why, NumberError* error) {
  if (error) *error = why;
  return std::nullopt;
}

// Python's float() words: inf, infinity, nan (any case), after the sign.
std::optional<double> special_double(std::string_view body, bool negative) {
  std::string lower(body);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "inf" || lower == "infinity")
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  if (lower == "nan") return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

// [digits][.digits][(e|E)[+|-]digits] with at least one mantissa digit.
bool is_decimal_float_syntax(std::string_view s) {
  size_t i = 0, mantissa_digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++mantissa_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++mantissa_digits;
  }
  if (mantissa_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_start = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == exp_start) return false;
  }
  return i == s.size();
}

// For a text of is_decimal_float_syntax that from_chars found out of range:
// whether its magnitude is below the smallest subnormal (underflow) rather than
// above the largest double. The decimal exponent of the first nonzero mantissa
// digit decides: negative means tiny.
bool is_underflow(std::string_view s) {
  size_t e = s.find_first_of("eE");
  std::string_view mantissa = s.substr(0, e);
  long exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view digits = s.substr(e + 1);
    bool negative = !digits.empty() && digits[0] == '-';
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) digits.remove_prefix(1);
    for (char c : digits) exponent = std::min(exponent * 10 + (c - '0'), 100000L);
    if (negative) exponent = -exponent;
  }
  size_t point = mantissa.find('.');
  if (point == std::string_view::npos) point = mantissa.size();
  for (size_t i = 0; i < mantissa.size(); ++i) {
    if (mantissa[i] == '.' || mantissa[i] == '0') continue;
    long place = i < point ? static_cast<long>(point - i - 1) : -static_cast<long>(i - point);
    return exponent + place < 0;
  }
  return true;  // all zeros cannot be out of range; treat as tiny
}

}  // namespace

std::optional<int64_t> parse_decimal_int(std::string_view text, NumberError* error) {
  if (error) *error = NumberError::kNone;
  // from_chars takes a '-' but no '+': drop a '+' and keep a '-'.
  std::string_view body = text;
  if (!body.empty() && body[0] == '+') body.remove_prefix(1);
  size_t first_digit = body.size() != text.size() ? 0 : (!body.empty() && body[0] == '-');
  if (first_digit == body.size()) return fail_with(NumberError::kSyntax, error);
  for (size_t i = first_digit; i < body.size(); ++i)
    if (!is_digit(body[i])) return fail_with(NumberError::kSyntax, error);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v, 10);
  if (ec == std::errc::result_out_of_range) return fail_with(NumberError::kOverflow, error);
  if (ec != std::errc() || end != body.data() + body.size())
    return fail_with(NumberError::kSyntax, error);
  return v;
}

std::optional<double> parse_decimal_double(std::string_view text, NumberError* error) {
  if (error) *error = NumberError::kNone;
  std::string_view body = text;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (auto special = special_double(body, negative)) return special;
  if (!is_decimal_float_syntax(body)) {
    if (error) *error = NumberError::kSyntax;
    return std::nullopt;
  }
  double v = 0;
  auto [end, ec] =
      std::from_chars(body.data(), body.data() + body.size(), v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range && is_underflow(body)) {
    return negative ? -0.0 : 0.0;  // Python's float("1e-400") is 0.0
  }
  if (ec == std::errc::result_out_of_range) {
    if (error) *error = NumberError::kOverflow;
    return std::nullopt;
  }
  if (ec != std::errc() || end != body.data() + body.size()) {
    if (error) *error = NumberError::kSyntax;
    return std::nullopt;
  }
  return negative ? -v : v;
}

const char* int_expectation(NumberError error) {
  return error == NumberError::kOverflow
             ? "an integer within int64 [-9223372036854775808, 9223372036854775807]"
             : "an integer";
}

const char* double_expectation(NumberError error) {
  return error == NumberError::kOverflow ? "a number within the double range (|x| < 1.8e308)"
                                         : "a number";
}

}  // namespace loom
