// Printing of TensorType and Attrs for IR text and error messages. Attrs are
// printed generically from attrs.def (for_each_attr); ir/text.cpp parses them.
#include "ops/attrs.h"

#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>

namespace loom::ops {

std::string to_string(const TensorType& type) {
  static const char* short_names[] = {"f32", "bf16", "f16", "i32", "i64", "bool"};
  return short_names[static_cast<int>(type.dtype)] + loom::to_string(type.shape);
}

bool is_default(double value, double default_value) {
  return std::memcmp(&value, &default_value, sizeof(double)) == 0;
}

namespace {
void print_value(std::ostream& out, int64_t v) { out << v; }
void print_value(std::ostream& out, double v) { out << v; }
void print_value(std::ostream& out, bool v) { out << (v ? "true" : "false"); }
void print_value(std::ostream& out, DType v) { out << dtype_name(v); }
void print_value(std::ostream& out, const std::vector<int64_t>& v) { out << loom::to_string(v); }
}  // namespace

std::string to_string(const Attrs& a) {
  std::ostringstream out;
  out << std::setprecision(std::numeric_limits<double>::max_digits10);
  for_each_attr(a, [&](const char* name, const auto& value, const auto& default_value) {
    if (is_default(value, default_value)) return;
    if (out.tellp() > 0) out << ' ';
    out << name << '=';
    print_value(out, value);
  });
  return out.str();
}

}  // namespace loom::ops
