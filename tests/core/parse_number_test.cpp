// parse_decimal_int / parse_decimal_double (core/parse_number.h): base 10
// only, as Python's int() / float(); hexadecimal, spaces, trailing text and
// values beyond int64 / double are refused with the reason. Expected values
// are Python's: int("+5") == 5, float(".5") == 0.5, int("0x10") and
// float("0x10") raise ValueError, float("1e999") is inf (refused here).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>

#include "core/parse_number.h"

namespace loom {
namespace {

TEST(ParseNumber, DecimalIntegers) {
  EXPECT_EQ(parse_decimal_int("16"), 16);
  EXPECT_EQ(parse_decimal_int("+5"), 5);
  EXPECT_EQ(parse_decimal_int("-5"), -5);
  EXPECT_EQ(parse_decimal_int("007"), 7);
  EXPECT_EQ(parse_decimal_int("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(parse_decimal_int("-9223372036854775808"), std::numeric_limits<int64_t>::min());
  for (const char* bad : {"0x10", "0X10", "1e3", "1.0", " 7", "7 ", "", "+", "-", "+-5", "--5",
                          "5a", "0b101", "1_000"}) {
    NumberError why = NumberError::kNone;
    EXPECT_FALSE(parse_decimal_int(bad, &why).has_value()) << bad;
    EXPECT_EQ(why, NumberError::kSyntax) << bad;
  }
  for (const char* big : {"9223372036854775808", "99999999999999999999", "-9223372036854775809"}) {
    NumberError why = NumberError::kNone;
    EXPECT_FALSE(parse_decimal_int(big, &why).has_value()) << big;
    EXPECT_EQ(why, NumberError::kOverflow) << big;
  }
  EXPECT_NE(std::string(int_expectation(NumberError::kOverflow)).find("int64"), std::string::npos);
}

TEST(ParseNumber, DecimalDoubles) {
  EXPECT_EQ(parse_decimal_double("5e-5"), 5e-5);
  EXPECT_EQ(parse_decimal_double(".5"), 0.5);
  EXPECT_EQ(parse_decimal_double("5."), 5.0);
  EXPECT_EQ(parse_decimal_double("+1E3"), 1000.0);
  EXPECT_EQ(parse_decimal_double("-2.5"), -2.5);
  EXPECT_EQ(parse_decimal_double("16"), 16.0);
  EXPECT_EQ(parse_decimal_double("-inf"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse_decimal_double("Infinity"), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(*parse_decimal_double("nan")));
  for (const char* bad : {"0x10", "0x1p4", "1e", "e5", ".", "", " 1", "1 ", "1.2.3", "--1", "+-1",
                          "1e+", "infinit", "nan(1)", "1,5"}) {
    NumberError why = NumberError::kNone;
    EXPECT_FALSE(parse_decimal_double(bad, &why).has_value()) << bad;
    EXPECT_EQ(why, NumberError::kSyntax) << bad;
  }
  NumberError why = NumberError::kNone;
  EXPECT_FALSE(parse_decimal_double("1e999", &why).has_value());
  EXPECT_EQ(why, NumberError::kOverflow);
  for (const char* big : {"-1e999", "123456e305", "0.01e311"}) {
    EXPECT_FALSE(parse_decimal_double(big, &why).has_value()) << big;
    EXPECT_EQ(why, NumberError::kOverflow) << big;
  }
}

// Below the smallest subnormal a number underflows to (signed) zero, as Python's
// float("1e-400"); it is not reported as an overflow.
TEST(ParseNumber, UnderflowIsZero) {
  for (const char* tiny : {"1e-400", "0.000001e-320", "2e-324", "1234e-330"}) {
    NumberError why = NumberError::kOverflow;
    std::optional<double> v = parse_decimal_double(tiny, &why);
    ASSERT_TRUE(v.has_value()) << tiny;
    EXPECT_EQ(*v, 0.0) << tiny;
    EXPECT_EQ(why, NumberError::kNone) << tiny;
  }
  std::optional<double> negative = parse_decimal_double("-1e-400");
  ASSERT_TRUE(negative.has_value());
  EXPECT_TRUE(std::signbit(*negative));
  EXPECT_EQ(parse_decimal_double("1e-310"), 1e-310);  // subnormal: kept
}

}  // namespace
}  // namespace loom
